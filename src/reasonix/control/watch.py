"""How the orchestrator watches an executor run and words the stops it makes: the stall watch
(budget, refusals, repeated failures, no host-observed progress), the note of a turn the
permission layer blocked, and the note of a plan left unfinished."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from reasonix.agent.agent import Agent, StepDecision, StepInfo
from reasonix.agent.todo import TodoItem
from reasonix.control.cost import CostTracker
from reasonix.tools.registry import PERMISSION_DENIED

if TYPE_CHECKING:
    from reasonix.agent.progress import ProgressLedger

__all__ = [
    "BUDGET_HINT",
    "REFUSAL_HINT",
    "StallWatch",
    "WatchLimits",
    "incomplete_note",
    "refusal_note",
    "step_list",
]


class WatchLimits(Protocol):
    """The limits the watch applies (:class:`~reasonix.control.orchestrator.OrchestratorOptions`
    has them)."""

    max_cost_usd: float | None
    stall_rounds: int
    repeat_failures: int
    refused_steps: int


BUDGET_HINT = "Raise [budget] max_session_usd (or --max-cost) to continue."
REFUSAL_HINT = (
    "To allow such calls: add the rule named above to [permissions] allow in reasonix.toml, "
    "allow them when asked (the app's 'a': for this session), or change the permission mode "
    "(/mode auto-edit or yolo in the app; --mode or --yes for `reasonix run`)."
)


def refusal_note(refusals: list[str], shown: int = 3) -> str:
    """The closing note of a turn the permission layer blocked: what was refused (as the
    model was told) and how to allow it."""
    lines = [f"- {r.removeprefix(PERMISSION_DENIED).strip()}" for r in refusals[:shown]]
    if len(refusals) > shown:
        lines.append(f"- ... and {len(refusals) - shown} more")
    return (
        "Stopped: the executor was refused what it needed:\n"
        + "\n".join(lines)
        + "\n"
        + (REFUSAL_HINT)
    )


def step_list(items: list[TodoItem]) -> str:
    """``step 2 (write the tests)`` / ``steps 2 (...), 3 (...)``, for notes."""
    named = [f"{i.id or n} ({i.content[:60]})" for n, i in enumerate(items, 1)]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return f"{'step' if len(items) == 1 else 'steps'} {shown}"


class StallWatch:
    """Watches an executor run step by step and says when to pause it: the budget reached,
    only refused calls for ``refused_steps`` steps in a row, the same failing call
    ``repeat_failures`` times, or ``stall_rounds`` steps without host-observed progress;
    ``reason`` says which."""

    def __init__(self, agent: Agent, options: WatchLimits, cost: CostTracker) -> None:
        self.agent = agent
        self.options = options
        self.cost = cost
        self.quiet_steps = 0
        self.reason = ""
        self.over_budget = False
        self.refused_steps = 0
        self.refused = False
        #: the refusals seen, as the model was told them
        self.refusals: list[str] = []

    def on_step(self, info: StepInfo) -> StepDecision:
        limit = self.options.max_cost_usd
        if limit is not None and self.cost.session_cost >= limit:
            self.over_budget = True
            self.reason = (
                f"the session has spent ${self.cost.session_cost:.4f} of its ${limit:g} budget"
            )
            return "pause"
        denied = [r.content for r in info.refusals]
        if denied and len(denied) == len(info.results) and not info.made_progress:
            # Refused calls are not a stall: a new plan cannot make them allowed. Give the
            # model one more step to take another way; then end the turn saying what was
            # refused and how to allow it, without paying the planner.
            self.refusals.extend(d for d in denied if d not in self.refusals)
            self.refused_steps += 1
            if self.refused_steps >= self.options.refused_steps:
                self.refused = True
                self.reason = "the calls the executor needs were refused"
                return "pause"
            return "continue"
        self.refused_steps = 0
        self.quiet_steps = 0 if info.made_progress else self.quiet_steps + 1
        repeated = self.agent.ledger.repeated_failure(self.options.repeat_failures)
        if repeated:
            self.reason = f"the same failing call repeated {self.options.repeat_failures} times"
            return "pause"
        if self.quiet_steps >= self.options.stall_rounds:
            self.reason = f"no host-observed progress for {self.quiet_steps} steps"
            return "pause"
        return "continue"


def incomplete_note(ledger: ProgressLedger, open_steps: list[TodoItem], since: int) -> str:
    """Why a turn ends ``plan_incomplete``: the open steps and the last check that failed
    in this run (after the point ``since`` of ``ledger``)."""
    note = f"Stopped with the plan unfinished: {step_list(open_steps)} still open."
    commands = ledger.commands
    failed = next((r for r in reversed(commands) if not r.ok and r.seq > since), None)
    if failed is not None:
        tail = " ".join(failed.output_tail.split())[-160:]
        note += f" Last failed check: `{failed.command[:120]}`" + (f" ({tail})." if tail else ".")
    return note + " Say how to go on, or /todo to see the plan."
