"""Approvals a remote frontend answers: a question is an event carrying an id, and
``session.answer_approval(id, choice)`` resolves it.

An in-process frontend (the terminal) passes an :class:`~reasonix.safety.permissions.Approver`
and answers in place. A frontend in another process or on another machine (an editor over
ACP, the web dashboard) cannot be called back, so it opens the session with
``remote_approvals=True``: each question then becomes an :class:`ApprovalRequested` (a tool
call) or :class:`PlanApprovalRequested` (a plan that needs approval) in the turn's event
stream, the turn waits, and the frontend answers by id. :class:`ApprovalAnswered` records the
answer in the same stream (and in the session's stored timeline).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from reasonix.control.plan import Plan
from reasonix.errors import SessionError
from reasonix.events import Event, Sink
from reasonix.safety.patterns import escape_command_pattern
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest, scan_command

__all__ = [
    "ApprovalAnswered",
    "ApprovalChoice",
    "ApprovalRequested",
    "PendingApprovals",
    "PlanApprovalRequested",
    "proposed_session_rules",
]

#: How a frontend answers: allow this call, allow calls like it for the rest of the session
#: (the request's ``session_rules``), or deny (the reason goes back to the model).
ApprovalChoice = Literal["allow_once", "allow_session", "deny"]
CHOICES: tuple[ApprovalChoice, ...] = ("allow_once", "allow_session", "deny")


#: programs whose every use is approved on its own: a rule by program and subcommand would
#: allow too much (deleting, fetching and running code, changing owners, elevating)
_EXACT_ONLY = frozenset(
    [
        "rm",
        "rmdir",
        "sudo",
        "su",
        "doas",
        "dd",
        "mkfs",
        "chmod",
        "chown",
        "chgrp",
        "curl",
        "wget",
        "sh",
        "bash",
        "zsh",
        "dash",
        "fish",
        "eval",
        "exec",
        "env",
        "xargs",
        "find",
        "kill",
        "pkill",
        "killall",
        "python",
        "python3",
        "node",
        "perl",
        "ruby",
        "php",
        "ssh",
        "scp",
        "rsync",
        "mv",
        "cp",
        "ln",
        "tee",
        "truncate",
        "shred",
    ]
)
_SUBCOMMAND = re.compile(r"[A-Za-z][\w:.-]*\Z")


def proposed_session_rules(request: ApprovalRequest) -> tuple[str, ...]:
    """The rules to propose for "allow for this session": for a command, its program and
    subcommand (``bash(git status*)``, ``bash(pytest*)``) for each part, so the next similar
    command does not ask again; the exact command for programs in :data:`_EXACT_ONLY`, and the
    request's own (exact) rules for everything else. A frontend shows them for the user to
    accept or edit."""
    command = request.arguments.get("command")
    if request.category != "bash" or not isinstance(command, str):
        return request.session_rules
    scan = scan_command(command)
    if scan.opaque or scan.redirects or not scan.parts:
        return request.session_rules
    rules: list[str] = []
    for part in scan.parts:
        words = part.split()
        program = words[0] if words else ""
        if not program or "/" in program or "=" in program or program in _EXACT_ONLY:
            rule = f"{request.category}({escape_command_pattern(part)})"
        elif len(words) > 1 and _SUBCOMMAND.match(words[1]):
            rule = f"{request.category}({escape_command_pattern(program + ' ' + words[1])}*)"
        else:
            rule = f"{request.category}({escape_command_pattern(program)}*)"
        if rule not in rules:
            rules.append(rule)
    return tuple(rules)


@dataclass(frozen=True, slots=True)
class ApprovalRequested(Event):
    """A tool call waits for the user's answer (``session.answer_approval(id, ...)``)."""

    kind: ClassVar[str] = "approval_requested"
    id: str
    tool: str
    category: str
    subject: str
    reason: str
    session_rules: tuple[str, ...] = ()
    arguments: dict[str, Any] = field(default_factory=dict)
    #: what the call will do: an edit's diff, a new file's head and size ("" when none)
    preview: str = ""


@dataclass(frozen=True, slots=True)
class PlanApprovalRequested(Event):
    """A plan waits for approval; ``allow_once``/``allow_session`` run it, ``deny`` keeps it
    pending (``/approve`` later)."""

    kind: ClassVar[str] = "plan_approval_requested"
    id: str
    markdown: str
    plan: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ApprovalAnswered(Event):
    """How a question was answered (``cancelled`` when its turn was interrupted first)."""

    kind: ClassVar[str] = "approval_answered"
    id: str
    choice: str
    reason: str = ""


class PendingApprovals:
    """The questions waiting for an answer, by id. It is the session's approver (for tool
    calls) and plan approver when approvals are remote."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[tuple[ApprovalChoice, str]]] = {}

    @property
    def waiting(self) -> list[str]:
        """Ids of the questions not answered yet, oldest first."""
        return list(self._waiting)

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """:class:`~reasonix.safety.permissions.Approver`: ask through the event stream."""
        qid = f"approval-{next(self._ids)}"
        event = ApprovalRequested(
            "controller",
            qid,
            request.tool,
            request.category,
            request.subject,
            request.reason,
            request.session_rules,
            dict(request.arguments),
            request.preview,
        )
        choice, reason = await self._ask(qid, event)
        if choice == "allow_once":
            return ApprovalAnswer.allow_once()
        if choice == "allow_session":
            return ApprovalAnswer.allow_session()
        return ApprovalAnswer.deny(reason)

    async def approve_plan(self, plan: Plan) -> bool:
        """A :data:`~reasonix.control.orchestrator.PlanApprover` that asks through events."""
        qid = f"approval-{next(self._ids)}"
        event = PlanApprovalRequested("controller", qid, plan.to_markdown(), plan.to_dict())
        choice, _ = await self._ask(qid, event)
        return choice != "deny"

    async def _ask(self, qid: str, event: Event) -> tuple[ApprovalChoice, str]:
        future: asyncio.Future[tuple[ApprovalChoice, str]] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting[qid] = future
        self.sink.emit(event)
        try:
            return await future
        except asyncio.CancelledError:
            self.sink.emit(ApprovalAnswered("controller", qid, "cancelled"))
            raise
        finally:
            self._waiting.pop(qid, None)

    def answer(self, qid: str, choice: ApprovalChoice, reason: str = "") -> None:
        """Resolve question ``qid``. Raises SessionError for an id that is not waiting (already
        answered, from another session, or its turn was interrupted) or an unknown choice."""
        if choice not in CHOICES:
            raise SessionError(
                f"unknown approval choice {choice!r}; answer one of {', '.join(CHOICES)}"
            )
        future = self._waiting.get(qid)
        if future is None or future.done():
            waiting = ", ".join(self._waiting) or "none"
            raise SessionError(
                f"no approval {qid!r} is waiting (waiting now: {waiting}); it was answered "
                "already or its turn ended"
            )
        self.sink.emit(ApprovalAnswered("controller", qid, choice, reason))
        future.set_result((choice, reason))
