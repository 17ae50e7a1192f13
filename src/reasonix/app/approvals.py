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
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest
from reasonix.safety.shell.effects import Step, broad_rule_ok, effects, program
from reasonix.safety.shell.rules import runs_commands

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


_PROGRAM = re.compile(r"[A-Za-z0-9_][\w.+-]*\Z")
_SUBCOMMAND = re.compile(r"[A-Za-z][\w:.-]*\Z")


def proposed_session_rules(request: ApprovalRequest) -> tuple[str, ...]:
    """The rules to propose for "allow for this session": per simple command of the line (read by
    the shell lexer), its program and subcommand (``bash(git status)``, ``bash(git status *)``)
    or its program alone (``bash(pytest)``, ``bash(pytest *)``); its exact rule when a broader
    one would allow too much or is unclear (:func:`_command_rules`). Other tools get the
    request's own rules. The rules engine still decides every later call: an allow rule never
    covers a side effect the text does not show (``git diff --output=x``, ``find -exec``)."""
    command = request.arguments.get("command")
    if request.category == "edit":
        # The natural scope of "don't ask again" for edits: every file edit in the workspace
        # (files that make code run later, like our own config or git hooks, still ask).
        return (EDIT_ANYWHERE,)
    if request.category != "bash" or not isinstance(command, str):
        return request.session_rules
    line = effects(command)
    if line.opaque or line.redirects or not line.parts:
        return _meaningful(request.session_rules)
    rules: list[str] = []
    for step in line.steps:
        if not (step.command.words and step.text):
            continue
        proposed = _command_rules(request.category, step)
        if not proposed:
            return ()  # one part no rule can describe: allow once, or write a rule yourself
        for rule in proposed:
            if rule not in rules:
                rules.append(rule)
    return tuple(rules)


#: A shell variable (``$i``, ``${name}``, ``$1``, ``$?``): known only when the command runs.
_VARIABLE = re.compile(r"\$(?:[\w@*#?!$-]|\{)")

#: The rule "allow for this session" proposes for the file-editing tools.
EDIT_ANYWHERE = "edit(**)"


def _meaningful(rules: tuple[str, ...]) -> tuple[str, ...]:
    """The request's own exact rules, without those that could never match what was asked or
    would allow far more than it (a ``$variable`` known only at run time, a bare shell)."""
    return tuple(r for r in rules if not _VARIABLE.search(r) and not _bare_interpreter(r))


def _bare_interpreter(rule: str) -> bool:
    inner = rule.partition("(")[2].removesuffix(")").strip()
    words = inner.split()
    return bool(words) and _runs_code(words[0]) and all(w.startswith("-") for w in words[1:])


def _runs_code(name: str) -> bool:
    """An interpreter, a shell or a wrapper: a rule naming it alone would allow any code
    (``bash(sh)`` for ``curl ... | sh``)."""
    return program(name).runs_code or runs_commands(name)


def _command_rules(category: str, step: Step) -> tuple[str, ...]:
    cmd, part = step.command, step.text
    exact = (f"{category}({escape_command_pattern(part)})",)
    argv = cmd.argv
    name = argv[0]
    if not all(w.literal for w in cmd.words) or _VARIABLE.search(part):
        return ()  # a word known only at run time: an exact rule would never match again
    if _runs_code(name) and all(a.startswith("-") for a in argv[1:]):
        return ()  # ``sh`` reading a pipe: a rule for it would allow any script
    if (
        cmd.assignments
        or not _PROGRAM.match(name)
        or not broad_rule_ok(name)  # it acts (deletes, fetches, runs code...) every time
        or len(step.forms) > 1  # a wrapper: the rule would cover what it runs
        or any(r.op in ("<<", "<<-") for r in cmd.redirects)  # its text leaves out the body
    ):
        return exact
    words = [name]
    if program(name).subcommands:
        if len(argv) < 2 or not _SUBCOMMAND.match(argv[1]):
            return exact  # ``git -C dir status``, a bare ``make``: no subcommand to name
        words.append(argv[1])
    stem = escape_command_pattern(" ".join(words))
    return (f"{category}({stem})", f"{category}({stem} *)")


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
    #: what the tool declares it is (:attr:`~reasonix.tools.registry.Tool.kind`)
    tool_kind: str = "other"


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
        # The same rules the terminal proposes; none when no rule covers exactly this call
        # (``... | sh``): "for this session" then allows this one call only.
        rules = proposed_session_rules(request)
        event = ApprovalRequested(
            "controller",
            qid,
            request.tool,
            request.category,
            request.subject,
            request.reason,
            rules,
            dict(request.arguments),
            request.preview,
            request.tool_kind,
        )
        choice, reason = await self._ask(qid, event)
        if choice == "allow_once" or (choice == "allow_session" and not rules):
            return ApprovalAnswer.allow_once()
        if choice == "allow_session":
            return ApprovalAnswer.allow_session(*rules)
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
