"""Auto mode's seam in the permission engine: what a reviewer is asked, what it may answer, and
the hard floor it never sees.

In ``auto`` mode a call whose :class:`~reasonix.safety.permissions.Verdict` is ``ask`` goes to a
:class:`Reviewer` (the ``reviewer`` role, :mod:`reasonix.control.review`) before a person, unless
it is on the **hard floor**: an irreversible command, a write to what runs code later outside the
sandbox (our own configuration, git's machinery, …) or any other ``ask_checks`` reason, an ask
rule the user wrote, a ``PreToolUse`` hook that asked (all carried as ``Verdict.floor``), bash
while it runs outside the sandbox without the user's acknowledgement, and a tool the ``[review]
tools`` list leaves out. Deny rules and plan mode never reach this point (they refuse before any
question), nor does the sandbox's own refusal (it is the tool's). So the reviewer can only turn
an ordinary question into ``allow`` or ``deny``; what it answers ``ask`` (or answers badly) asks
the person as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from reasonix.messages import canonical_json

if TYPE_CHECKING:
    from reasonix.tools.registry import Tool

__all__ = ["ReviewAnswer", "ReviewRequest", "Reviewer", "call_hash"]

Decision = Literal["allow", "ask", "deny"]


def call_hash(tool: str, arguments: Mapping[str, Any]) -> str:
    """The identity a verdict is bound to: the tool's name and its canonical arguments. A call
    that differs in any byte is another call and is reviewed again."""
    text = f"{tool}\0{canonical_json(dict(arguments))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """One call as the reviewer is asked about it."""

    call_hash: str
    tool: str
    category: str
    arguments: Mapping[str, Any]
    #: what the call acts on as a person would be shown it (the command as bash receives it)
    subject: str
    #: why it would ask in ``ask`` mode
    reason: str
    #: what the call will do (an edit's diff, a new file's head), from the tool's preview
    preview: str
    #: the rules in force, as ``allow bash(git status*)`` lines
    rules: tuple[str, ...]
    #: the preview leaves part of the effect out and the arguments do not carry it (a cut
    #: ``task_apply`` diff): the call cannot be shown whole, so the reviewer does not judge it
    preview_cut: bool = False


@dataclass(frozen=True, slots=True)
class ReviewAnswer:
    """The reviewer's answer; ``via`` says where it came from: ``reviewer`` (a verdict call),
    ``earlier`` (the same call's verdict, reused), ``malformed``, ``budget``, ``error``,
    ``too_long`` (a call larger than a review shows whole: it goes to the person)."""

    decision: Decision
    reason: str
    via: str = "reviewer"


class Reviewer(Protocol):
    """What the engine needs of a reviewer."""

    def covers(self, tool: Tool) -> bool: ...

    async def review(self, request: ReviewRequest) -> ReviewAnswer: ...
