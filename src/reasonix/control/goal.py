"""The ``update_goal`` tool: how the executor reports on a goal (``/goal``, ``run --goal``).

A goal is autonomous work over several user turns (the driver is :mod:`reasonix.app.goal`).
Each turn ends with the model calling ``update_goal``: ``continue`` with its next action,
``complete`` with evidence, or ``blocked`` with what stops it. The report is host state, kept
outside the prompt; the driver reads it when the turn ends.

``complete`` is accepted the way ``complete_step`` is: only with evidence the host itself saw
(:class:`~reasonix.agent.progress.ProgressLedger`). The host must have observed work during the
goal (a successful write, a command with a new result, a new read), every todo step must be
done, and a command the evidence quotes in backticks must have run successfully after the
goal's last edit. Anything else is refused with what to do.

The tool is in the executor's tool set from the session's start, goal or not, so starting a
goal mid-session leaves the tool schemas byte-identical (cache-first); without an active goal
it answers with an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from reasonix.agent.progress import LEDGER_KEY
from reasonix.agent.todo import TODO_KEY
from reasonix.tools.registry import Effect, Tool, ToolContext, ToolResult
from reasonix.tools.state import StateKey

__all__ = ["GOAL_KEY", "GoalReport", "GoalTracker", "update_goal_tool"]

GoalStatus = Literal["continue", "complete", "blocked"]

_QUOTED = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True)
class GoalReport:
    """One accepted ``update_goal`` call."""

    status: GoalStatus
    summary: str
    next_action: str = ""
    evidence: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "status": self.status,
            "summary": self.summary,
            "next_action": self.next_action,
            "evidence": self.evidence,
        }


class GoalTracker:
    """The host side of the active goal, in the executor's tool state: whether a goal is on,
    the ledger mark when it started (evidence must come after it), and the report of the
    current turn."""

    def __init__(self) -> None:
        self.objective: str | None = None
        self.baseline = 0
        self.report: GoalReport | None = None
        #: refusals of ``complete`` this turn (the driver shows the last one in its report)
        self.refusals: list[str] = []

    def start(self, objective: str, baseline: int) -> None:
        self.objective, self.baseline = objective, baseline
        self.report, self.refusals = None, []

    def stop(self) -> None:
        self.objective, self.report = None, None

    def take(self) -> GoalReport | None:
        """The report of the turn just ended (and forget it for the next turn)."""
        report, self.report, self.refusals = self.report, None, []
        return report


GOAL_KEY = StateKey("goal", GoalTracker)


async def update_goal(
    status: Annotated[
        GoalStatus,
        "complete: objective met; blocked: cannot go on",
    ],
    summary: Annotated[str, "what this turn did, or what blocks you"],
    ctx: ToolContext,
    next_action: Annotated[str, "with continue: next step"] = "",
    evidence: Annotated[str, "with complete: the passing command in `backticks`"] = "",
) -> ToolResult:
    """Report on the active goal (/goal) at the end of a goal turn, then end the turn."""
    tracker = GOAL_KEY.get(ctx.state)
    if tracker is None or tracker.objective is None:
        return ToolResult.error("No goal is active: update_goal is only for /goal work.")
    summary = summary.strip()
    if not summary:
        return ToolResult.error("update_goal needs a summary of what this turn did.")
    done = (Effect("todo", "goal", status),)
    if status == "continue":
        if not next_action.strip():
            return ToolResult.error("With status continue, say the next action (next_action).")
        tracker.report = GoalReport(status, summary, next_action.strip())
        return ToolResult(
            "Recorded. End this turn now; the next goal turn starts with your next action.",
            effects=done,
        )
    if status == "blocked":
        tracker.report = GoalReport(status, summary, next_action.strip(), evidence.strip())
        return ToolResult("Recorded: the goal stops as blocked. End this turn now.", effects=done)
    why = _refusal(tracker, evidence, ctx)
    if why:
        tracker.refusals.append(why)
        return ToolResult.error(f"update_goal complete refused: {why}")
    tracker.report = GoalReport(status, summary, "", evidence.strip())
    return ToolResult("Goal completed. End this turn now with a short summary.", effects=done)


def _refusal(tracker: GoalTracker, evidence: str, ctx: ToolContext) -> str:
    """Why ``complete`` cannot be accepted, or "" when the host saw the evidence."""
    if not evidence.strip():
        return "evidence is empty: say what proves the goal is met (a passing command in `...`)."
    ledger = LEDGER_KEY.get(ctx.state)
    if ledger is None or ledger.work_seq <= tracker.baseline:
        return (
            "the host observed no work toward the goal in this run (no successful write, "
            "command or new read). Do the work, or run the check that proves it, then report."
        )
    todo = TODO_KEY.get(ctx.state)
    open_steps = [i for i in todo.items if i.status != "completed"] if todo is not None else []
    if open_steps:
        return (
            f"step {open_steps[0].id} ({open_steps[0].content!r}) of the todo list is not "
            "completed; finish it with complete_step or change the list with todo_write."
        )
    since = max(tracker.baseline, ledger.write_seq)
    for command in _QUOTED.findall(evidence):
        if not ledger.command_succeeded(command, since=since):
            return (
                f"the host has not seen `{command}` succeed during this goal after its last "
                "edit. Run it with bash, then call update_goal again."
            )
    return ""


def update_goal_tool() -> Tool:
    """The ``update_goal`` tool (host state only, so read-only for permissions)."""
    return Tool.from_function(
        update_goal, read_only=True, category="goal", kind="think", subjects=("status",)
    )
