"""How a turn ended, in one table every frontend reads: the stored session's status, the exit
code of ``reasonix run``, ACP's stop reason, and whether the work asked for was done.

A turn's stop reason comes from the core (:data:`~reasonix.control.orchestrator.TurnStopReason`).
``done`` means the executor finished and, when a plan was active, every step of it was
completed with evidence; a plan left with open steps ends ``plan_incomplete`` instead (its
result names the open steps and the last check that failed). The terminal footer, the JSON
result, stream-json, ACP and the dashboard show the stop reason itself; what it means for a
process's exit code or an editor is decided here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CLOSING_NOTICES", "ENDINGS", "EXIT_PLAN_INCOMPLETE", "AcpStop", "Ending", "ending"]

#: Notice codes that say why a turn ended: a frontend shows them with the answer, not aside.
#: (The turn's result text carries them too: a frontend printing the result skips the notice.)
CLOSING_NOTICES = frozenset({"plan_incomplete", "refused"})

#: ``reasonix run``'s exit code when the plan was left with open steps (the others are in
#: :mod:`reasonix.app.launch`: 0 ok, 1 failure, 2 usage, 3 refused, 4 needs input).
EXIT_PLAN_INCOMPLETE = 5

#: ACP's stop reasons.
AcpStop = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


@dataclass(frozen=True, slots=True)
class Ending:
    """What a turn that stopped for one reason means outside the core."""

    #: the stored session's status after it (running, finished, interrupted, failed, waiting,
    #: incomplete)
    status: str
    #: ``reasonix run``'s exit code (an error or refused work decide first, see the caller)
    exit_code: int
    #: ACP's ``stopReason``
    acp: AcpStop = "end_turn"
    #: the work asked for was done (or a plan is kept for approval, as asked)
    ok: bool = False


_FAILED = Ending("failed", 1)
_STOPPED = Ending("finished", 1)

#: Stop reason -> its meaning. A reason not listed reads as a stop before the work was done.
ENDINGS: dict[str, Ending] = {
    "done": Ending("finished", 0, ok=True),
    "plan_only": Ending("waiting", 0, ok=True),
    "needs_input": Ending("waiting", 4),
    "plan_incomplete": Ending("incomplete", EXIT_PLAN_INCOMPLETE),
    "plan_declined": Ending("waiting", 3),
    "refused": Ending("finished", 3),
    "prompt_blocked": Ending("finished", 3),
    "cancelled": Ending("interrupted", 1, "cancelled"),
    "error": _FAILED,
    "plan_failed": _FAILED,
    "step_limit": Ending("finished", 1, "max_turn_requests"),
    "length": Ending("finished", 1, "max_tokens"),
    "content_filter": Ending("finished", 1, "refusal"),
}


def ending(stop_reason: str) -> Ending:
    """The meaning of ``stop_reason`` (see :data:`ENDINGS`)."""
    return ENDINGS.get(stop_reason, _STOPPED)
