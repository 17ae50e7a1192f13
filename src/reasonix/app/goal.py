"""Goals: autonomous multi-turn work toward one objective (``/goal``, ``reasonix run --goal``).

A goal runs as a chain of ordinary user turns of the same session. The first carries the
objective and how to work; each next one is a short continuation message appended at the tail
(cache-first: the history before it is never touched). Every turn should end with the model's
``update_goal`` report (:mod:`reasonix.control.goal`):

- ``complete`` (accepted only with host-seen evidence) ends the goal ``complete``;
- ``blocked`` ends it ``blocked``, with the model's reason;
- ``continue`` starts the next turn with the model's next action.

The host also stops the goal at its budget (USD spent by every role while the goal ran,
enforced inside a turn too), at its turn cap, on an error, a refused plan, or when the executor
stalls: a turn that makes no host-observed progress is followed by one forced through the
planner with a brief of what failed (a re-plan), at most ``[planner] max_replans`` times in a
row; then the goal stops ``stalled``. An interrupt pauses it.

The goal's state is recorded in the session store as a ``goal_state`` event after every turn,
so it survives a restart: ``/goal resume`` or ``reasonix run -c --goal-resume`` continues it
(the spend and turn count carry over).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from reasonix.control import Controller, GateDecision, Route, TurnResult
from reasonix.control.goal import GoalReport
from reasonix.control.orchestrator import TurnStopReason
from reasonix.errors import SessionError
from reasonix.events import Event, NoticeEvent, Sink

__all__ = [
    "DEFAULT_MAX_TURNS",
    "Goal",
    "GoalArgs",
    "GoalRecorded",
    "load_goal",
    "parse_goal_args",
    "run_goal",
]

#: The turn cap of a goal started without one.
DEFAULT_MAX_TURNS = 10

GoalStatus = Literal["active", "paused", "complete", "blocked", "stopped"]


@dataclass
class Goal:
    """A goal's state: what it is, its limits, how far it got and why it stopped.

    ``status``: ``active`` (running, or cut off by a killed process), ``paused``, ``complete``,
    ``blocked`` or ``stopped``; ``stop_reason`` says why it is not running (``complete``,
    ``blocked``, ``budget``, ``max_turns``, ``stalled``, ``error``, ``refused``, ``paused``,
    ``interrupted``, ``needs_input``)."""

    objective: str
    budget_usd: float | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    status: GoalStatus = "active"
    stop_reason: str = ""
    turns: int = 0
    spent_usd: float = 0.0
    replans: int = 0
    last: GoalReport | None = None
    note: str = ""
    #: turns in a row that ended with no host-observed progress
    quiet_turns: int = field(default=0, repr=False)

    @property
    def finished(self) -> bool:
        return self.status == "complete"

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "turns": self.turns,
            "max_turns": self.max_turns,
            "spent_usd": round(self.spent_usd, 8),
            "budget_usd": self.budget_usd,
            "replans": self.replans,
            "quiet_turns": self.quiet_turns,
            "last_update": self.last.to_dict() if self.last else None,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Goal:
        last = data.get("last_update")
        report = None
        if isinstance(last, Mapping) and last.get("status") in ("continue", "complete", "blocked"):
            report = GoalReport(
                last["status"],
                str(last.get("summary", "")),
                str(last.get("next_action", "")),
                str(last.get("evidence", "")),
            )
        budget = data.get("budget_usd")
        status = data.get("status", "stopped")
        return cls(
            objective=str(data.get("objective", "")),
            budget_usd=float(budget) if budget is not None else None,
            max_turns=int(data.get("max_turns", DEFAULT_MAX_TURNS)),
            status=status if status in ("active", "paused", "complete", "blocked") else "stopped",
            stop_reason=str(data.get("stop_reason", "")),
            turns=int(data.get("turns", 0)),
            spent_usd=float(data.get("spent_usd", 0.0)),
            replans=int(data.get("replans", 0)),
            last=report,
            note=str(data.get("note", "")),
            quiet_turns=int(data.get("quiet_turns", 0)),
        )

    def describe(self) -> str:
        """``/goal status``: a few lines on where the goal stands."""
        budget = f" of ${self.budget_usd:g}" if self.budget_usd is not None else ""
        state = self.status + (f" ({self.stop_reason})" if self.stop_reason else "")
        lines = [
            f"Goal: {self.objective}",
            f"Status: {state}; turn {self.turns} of at most {self.max_turns}; "
            f"spent ${self.spent_usd:.4f}{budget}; {self.replans} re-plan(s)",
        ]
        if self.last is not None:
            lines.append(f"Last update ({self.last.status}): {self.last.summary}")
            if self.last.next_action:
                lines.append(f"Next action: {self.last.next_action}")
            if self.last.evidence:
                lines.append(f"Evidence: {self.last.evidence}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class GoalRecorded(Event):
    """The goal's state after a change (recorded in the store; the last one is the goal)."""

    kind: ClassVar[str] = "goal_state"
    goal: Mapping[str, Any]
    cleared: bool = False


def load_goal(events: list[dict[str, Any]]) -> Goal | None:
    """The goal as it stood at the end of a stored session's event timeline."""
    goal: Goal | None = None
    for event in events:
        if event.get("kind") == GoalRecorded.kind:
            data = event.get("goal")
            cleared = bool(event.get("cleared"))
            goal = None if cleared or not isinstance(data, Mapping) else Goal.from_dict(data)
    return goal


@dataclass(frozen=True)
class GoalArgs:
    """``/goal <objective> [--budget USD] [--max-turns N]`` parsed."""

    objective: str
    budget_usd: float | None = None
    max_turns: int | None = None


def parse_goal_args(text: str, *, objective: bool = True) -> GoalArgs:
    """Parse the arguments of ``/goal`` (``objective=False``: of ``/goal resume``, limits
    only). Raises SessionError with the usage on bad input."""
    usage = "usage: /goal <objective> [--budget USD] [--max-turns N]"
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise SessionError(f"{exc}; {usage}") from None
    words_left: list[str] = []
    budget: float | None = None
    turns: int | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("--budget", "--max-turns"):
            if i + 1 >= len(words):
                raise SessionError(f"{word} needs a value; {usage}")
            value = words[i + 1]
            if word == "--budget":
                budget = goal_budget(value)
            else:
                turns = goal_max_turns(value)
            i += 2
            continue
        words_left.append(word)
        i += 1
    if objective and not words_left:
        raise SessionError(usage)
    if not objective and words_left:
        raise SessionError("usage: /goal resume [--budget USD] [--max-turns N]")
    return GoalArgs(" ".join(words_left), budget, turns)


def goal_budget(value: str) -> float:
    """A goal budget in USD (``--budget``, ``--goal-budget``). Raises SessionError."""
    try:
        budget = float(value.removeprefix("$"))
    except ValueError:
        raise SessionError(f"the goal budget must be a number of USD, not {value!r}") from None
    if not math.isfinite(budget) or budget <= 0:
        raise SessionError(f"the goal budget must be more than 0 USD, not {value!r}")
    return budget


def goal_max_turns(value: str) -> int:
    """A goal turn cap (``--max-turns``, ``--goal-max-turns``). Raises SessionError."""
    try:
        turns = int(value)
    except ValueError:
        raise SessionError(f"the goal turn cap must be a whole number, not {value!r}") from None
    if turns < 1:
        raise SessionError(f"the goal turn cap must be at least 1, not {value!r}")
    return turns


def first_message(goal: Goal) -> str:
    limits = f"at most {goal.max_turns} turns"
    if goal.budget_usd is not None:
        limits += f" and ${goal.budget_usd:g}"
    return (
        f"Goal: {goal.objective}\n\n"
        f"Work toward this goal on your own over several turns ({limits}); nobody answers "
        "questions in between. Each turn, do a coherent piece of the work, then end the turn by "
        'calling update_goal: status "continue" with your next action; "complete" with the '
        "evidence (quote in backticks the command that proves it, run after your last edit: "
        'the host accepts only what it saw); or "blocked" with what stops you.'
    )


def continuation(goal: Goal, report: GoalReport | None, refusal: str, stalled: str) -> str:
    head = f"[goal turn {goal.turns + 1} of at most {goal.max_turns}] "
    if stalled:
        return (
            head + f"The last turn made no progress the host could see ({stalled}). The planner "
            "revised the plan; follow it, and end the turn with update_goal."
        )
    if report is not None and report.status == "continue":
        return head + f"Continue toward the goal. Your next action: {report.next_action}"
    if refusal:
        return head + f"Your completion was refused: {refusal} End this turn with update_goal."
    return (
        head + "You ended the last turn without update_goal. Continue toward the goal and end "
        "this turn by calling update_goal."
    )


#: Turn stop reasons that end the goal (the others let it go on to its next turn).
_FATAL: dict[str, str] = {
    "error": "error",
    "plan_declined": "refused",
    "plan_failed": "error",
    "prompt_blocked": "refused",
    "stalled": "stalled",
}


@dataclass
class GoalDriver:
    """What :func:`run_goal` needs from the session façade: the Controller, a way to run one
    user turn (with the façade's turn marks and hooks) and to record the goal's state."""

    controller: Controller
    run_turn: Callable[[str, bool | None], Awaitable[TurnResult]]
    record: Callable[[Goal], None]
    sink: Sink
    max_replans: int
    pause_requested: Callable[[], bool]


async def run_goal(goal: Goal, driver: GoalDriver) -> TurnResult:
    """Run ``goal`` turn by turn until it completes, blocks or a limit stops it (see the module
    docstring); the result's text is the goal's report and its costs those of this run."""
    ctrl = driver.controller
    cost = ctrl.cost
    mark = cost.snapshot()
    spent_before, start_total = goal.spent_usd, cost.total.cost
    tracker = ctrl.goal
    tracker.start(goal.objective, ctrl.executor.ledger.mark())
    orchestration = ctrl.orchestrator.options
    session_limit = orchestration.max_cost_usd
    report = goal.last if goal.turns else None
    refusal = stalled = ""
    last: TurnResult | None = None
    goal.status, goal.stop_reason, goal.note = "active", "", ""

    def spent() -> float:
        return spent_before + cost.total.cost - start_total

    def stop(status: GoalStatus, reason: str, note: str) -> None:
        goal.status, goal.stop_reason, goal.note = status, reason, note

    try:
        while True:
            goal.spent_usd = spent()
            if goal.budget_usd is not None and goal.spent_usd >= goal.budget_usd:
                stop("stopped", "budget", _budget_note(goal))
                break
            if goal.turns >= goal.max_turns:
                stop("stopped", "max_turns", f"Stopped after {goal.turns} turns (the goal's cap).")
                break
            if driver.pause_requested():
                stop("paused", "paused", "Paused; /goal resume continues it.")
                break
            text = (
                first_message(goal)
                if goal.turns == 0
                else continuation(goal, report, refusal, stalled)
            )
            if goal.budget_usd is not None:
                # Stop inside the turn too: the orchestrator ends a turn at this total.
                remaining = goal.budget_usd - goal.spent_usd
                limit = cost.total.cost + remaining
                orchestration.max_cost_usd = (
                    limit if session_limit is None else min(limit, session_limit)
                )
            # Work the host saw (writes, commands with new results, new reads), not bookkeeping
            # such as update_goal itself.
            before = ctrl.executor.ledger.work_seq
            replanning = bool(stalled)
            last = await driver.run_turn(text, True if replanning else None)
            orchestration.max_cost_usd = session_limit
            goal.turns += 1
            goal.spent_usd = spent()
            refusals = list(tracker.refusals)
            report = tracker.take()
            refusal = refusals[-1] if refusals and report is None else ""
            if report is not None:
                goal.last = report
            if replanning:
                goal.replans += 1
            reason: str = last.stop_reason
            if reason == "budget":
                stop("stopped", "budget", _budget_note(goal))
                break
            if reason == "cancelled":
                stop("paused", "interrupted", "Interrupted; /goal resume continues it.")
                break
            if reason == "needs_input":
                # The model asked the user (``ask``) and nobody could answer in the turn.
                stop(
                    "paused",
                    "needs_input",
                    'Paused for your answer: answer the question (reasonix run -c "<answer>"), '
                    "then resume the goal (--goal-resume or /goal resume).",
                )
                break
            if reason in _FATAL:
                stop("stopped", _FATAL[reason], f"The goal turn ended: {last.text}")
                break
            if report is not None and report.status == "complete":
                stop("complete", "complete", f"Completed in {goal.turns} turn(s).")
                break
            if report is not None and report.status == "blocked":
                stop("blocked", "blocked", f"Blocked: {report.summary}")
                break
            progressed = ctrl.executor.ledger.work_seq > before
            goal.quiet_turns = 0 if progressed else goal.quiet_turns + 1
            stalled = ""
            if not progressed:
                if ctrl.planner is None or goal.quiet_turns > driver.max_replans:
                    stop(
                        "stopped",
                        "stalled",
                        f"Stopped: {goal.quiet_turns} turn(s) in a row made no progress the "
                        "host could see"
                        + (" and re-planning did not help." if ctrl.planner else "."),
                    )
                    break
                stalled = "no successful write, command or new read"
                driver.sink.emit(
                    NoticeEvent(
                        "controller",
                        "goal_replan",
                        f"Goal turn {goal.turns} made no progress; asking the planner to re-plan.",
                    )
                )
            driver.record(goal)
    except BaseException:
        orchestration.max_cost_usd = session_limit
        goal.spent_usd = spent()
        stop("paused", "interrupted", "Interrupted; /goal resume continues it.")
        tracker.stop()
        driver.record(goal)
        raise
    tracker.stop()
    driver.record(goal)
    driver.sink.emit(NoticeEvent("controller", f"goal_{goal.stop_reason}", goal.note))
    return _result(goal, last, cost.since(mark))


def _budget_note(goal: Goal) -> str:
    if goal.budget_usd is None:
        return "Stopped: the session budget ran out. Raise [budget] max_session_usd to go on."
    return (
        f"Stopped: the goal spent ${goal.spent_usd:.4f} of its ${goal.budget_usd:g} budget. "
        "Resume with a higher budget (/goal resume --budget USD, or --goal-budget) to go on."
    )


_STOP: dict[str, TurnStopReason] = {
    "complete": "done",
    "blocked": "blocked",
    "budget": "budget",
    "max_turns": "max_turns",
    "stalled": "stalled",
    "error": "error",
    "refused": "plan_declined",
    "paused": "cancelled",
    "interrupted": "cancelled",
    "needs_input": "needs_input",
}


def _result(goal: Goal, last: TurnResult | None, costs: Mapping[str, Any]) -> TurnResult:
    decision = last.gate if last is not None else GateDecision(Route.EXECUTOR_ONLY, "goal")
    route = last.route if last is not None else Route.EXECUTOR_ONLY
    text = goal.describe()
    if last is not None and last.text and goal.stop_reason == "complete":
        text = f"{last.text}\n\n{text}"
    return TurnResult(
        text,
        route,
        _STOP.get(goal.stop_reason, "done"),
        decision,
        last.plan if last is not None else None,
        goal.replans,
        dict(costs),
    )
