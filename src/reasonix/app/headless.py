"""What a run nobody watches needs, for every frontend that runs one (``reasonix run``,
``batch``): an approver that says yes, plan approval, the exit code of an outcome and the
result object ``--output-format json`` prints and batch rows are built from.

Exit codes: 0 success; 1 failure (model/provider error such as 402, stalled, step limit);
2 usage/config error; 3 refused work (a permission denial stopped part of the task, or a plan
was declined); 4 needs input (the model asked the user: ``reasonix run -c "<answer>"``);
5 plan incomplete (the executor stopped with plan steps open: the result names them and the
last failed check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reasonix.app.launch import (
    EXIT_FAILURE,
    EXIT_NEEDS_INPUT,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
)
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest

if TYPE_CHECKING:
    from reasonix.app.session import AgentSession
    from reasonix.app.turn import TurnOutcome
    from reasonix.control.plan import Plan
    from reasonix.messages import ImagePart

__all__ = [
    "EXIT_FAILURE",
    "EXIT_NEEDS_INPUT",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "YesApprover",
    "approve_all_plans",
    "exit_code",
    "result_object",
]


class YesApprover:
    """``--yes``: allow once whatever would ask (deny rules and plan mode still refuse), except
    commands no snapshot can undo: nobody is there to confirm those."""

    #: it answers without a person: bash then runs unasked, which needs confinement or the
    #: user's acknowledgement (see :meth:`reasonix.safety.confinement.BashConfinement`)
    unattended = True

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        if request.irreversible:
            from reasonix.safety.patterns import escape_command_pattern

            rule = f"{request.category}({escape_command_pattern(request.subject)})"
            return ApprovalAnswer.deny(
                f"--yes does not cover commands no snapshot can undo ({request.irreversible}); "
                f"to permit this one, add {rule!r} to [permissions] allow in your own config"
            )
        return ApprovalAnswer.allow_once()


def approve_all_plans(plan: Plan) -> bool:
    return True


def exit_code(outcome: TurnOutcome) -> int:
    """0 success, 1 failure, 3 refused work, 4 needs input, 5 plan left unfinished (see the
    module docstring; the meaning of each stop reason is :mod:`reasonix.app.outcomes`)."""
    from reasonix.app.outcomes import ending

    if outcome.is_error:
        return EXIT_FAILURE
    if outcome.result.stop_reason == "needs_input":
        return EXIT_NEEDS_INPUT
    if outcome.refused:
        return EXIT_REFUSED
    return ending(outcome.result.stop_reason).exit_code


def result_object(session: AgentSession, outcome: TurnOutcome) -> dict[str, Any]:
    """The ``{"type": "result", ...}`` object of ``--output-format json|stream-json``."""
    result = outcome.result
    usage = {role: cost.to_dict() for role, cost in result.cost_by_role.items()}
    cost = {role: round(c.cost, 8) for role, c in result.cost_by_role.items()}
    cost["total"] = round(sum(c.cost for c in result.cost_by_role.values()), 8)
    return {
        "type": "result",
        "result": result.text,
        # what a slash command said after its turn (``/init``: the file it wrote), or ""
        "closing": outcome.closing,
        "session_id": session.session_id,
        "turns": outcome.requests,
        "duration_ms": outcome.duration_ms,
        "stop_reason": result.stop_reason,
        "route": str(result.route),
        "usage": usage,
        "cost_usd": cost,
        # what compaction saved, net of its own cost (USD)
        "compaction": session.usage.compaction_savings(),
        "subagents": session.usage.subagents(),
        # Background jobs still running as the run ends: stopped with it unless kept.
        "jobs": [job.to_dict() for job in session.jobs.running()],
        # What the model asked the user (stop reason needs_input); run -c "<answer>" answers.
        "questions": session.pending_questions(),
        **({"goal": session.goals.current.to_dict()} if session.goals.current is not None else {}),
        "is_error": outcome.is_error,
        "refused": outcome.refused,
        # auto mode's reviewer: each verdict (what was asked, the answer, its reason)
        "reviews": session.permissions.reviews(),
        "permission_denials": [
            {"tool": d.tool, "subject": d.subject, "reason": d.reason} for d in outcome.denials
        ],
        "exit_code": exit_code(outcome),
        "mcp_problems": session.mcp.problems(),
    }


async def run_text(
    session: AgentSession,
    text: str,
    *,
    plan: bool | None = None,
    plan_only: bool = False,
    images: tuple[ImagePart, ...] = (),
    request: str | None = None,
) -> TurnOutcome | str:
    """A task or a slash command, with nobody watching (``reasonix run``, a batch task): a
    command from the one table (:mod:`reasonix.app.commands`) gives its turn's outcome, or its
    reply as text; anything else is a turn (``request``: the user's words of ``text``, see
    :meth:`AgentSession.start_turn`). A bad command line raises SessionError with the usage."""
    from reasonix.app import commands
    from reasonix.errors import SessionError

    if not commands.is_command(session, text, "run"):
        return await session.run_turn(
            text, plan=plan, plan_only=plan_only, images=images, request=request
        )
    # what rode after the command's line (piped input) is data: ``request`` is the user's
    answer = await commands.answer(session, text, "run", images=images, request=request)
    if answer.error:
        raise SessionError(answer.text)
    if answer.turn is None:
        return answer.text
    return await answer.turn(session).result()


def reply_object(session: AgentSession, command: str, text: str) -> dict[str, Any]:
    """The result object of a command answered without a model turn (``run "/cost"``)."""
    return {
        "type": "result",
        "result": text,
        "session_id": session.session_id,
        "command": command,
        "stop_reason": "command",
        "usage": {},
        "cost_usd": {"total": 0.0},
        "questions": [],
        "is_error": False,
        "refused": False,
        "exit_code": EXIT_OK,
    }


#: The most piped standard input a task carries (bytes); the rest is cut and the cut said.
MAX_PIPED_INPUT = 200_000


@dataclass(frozen=True, slots=True)
class PipedInput:
    """Standard input piped to ``reasonix run TASK`` (``cat build.log | reasonix run "why"``):
    attached to the task, bounded to :data:`MAX_PIPED_INPUT` bytes."""

    text: str
    size: int
    truncated: bool

    def attach(self, task: str) -> str:
        """The task with the input after it, marked as data (project text, never obeyed)."""
        cut = f", only the first {MAX_PIPED_INPUT} shown" if self.truncated else ""
        return (
            f"{task.rstrip()}\n\n<piped-input bytes={self.size}{cut}>\n{self.text}\n</piped-input>"
        )

    def to_dict(self) -> dict[str, Any]:
        kept = len(self.text.encode())
        return {"bytes": self.size, "attached_bytes": kept, "truncated": self.truncated}


def piped_input(
    data: bytes, encoding: str = "utf-8", *, size: int | None = None
) -> PipedInput | None:
    """``data`` read from a pipe (``size`` bytes in all, default ``len(data)``) as an
    attachment, None when empty; undecodable bytes become U+FFFD."""
    if not data.strip():
        return None
    total = len(data) if size is None else size
    text = data[:MAX_PIPED_INPUT].decode(encoding, "replace")
    return PipedInput(text=text, size=total, truncated=total > MAX_PIPED_INPUT)


def append_instructions(task: str, extra: str | None) -> str:
    """``--append-system-prompt``: the instructions at the tail of the first user turn, so the
    system prompt (the cached prefix) stays byte-identical."""
    if not extra or not extra.strip():
        return task
    return f"{task.rstrip()}\n\n<appended-instructions>\n{extra.strip()}\n</appended-instructions>"
