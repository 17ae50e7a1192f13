"""The goals part of a session (``session.goals``): start, resume, pause, clear and describe
the session's goal; the goal itself and its driver are in :mod:`reasonix.app.goal`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reasonix.app.goal import Goal, GoalDriver, GoalRecorded, parse_goal_args, run_goal
from reasonix.app.turn import Turn, TurnOutcome
from reasonix.control import TurnResult
from reasonix.errors import SessionError

if TYPE_CHECKING:
    from reasonix.app.command_types import Answer, Context
    from reasonix.app.session import AgentSession

__all__ = ["SessionGoals", "goal_command"]


class SessionGoals:
    """The session's goal (``/goal``); ``session.goals``."""

    def __init__(self, session: AgentSession) -> None:
        self._s = session

    @property
    def current(self) -> Goal | None:
        """This session's goal (running, paused or ended), or None (see
        :mod:`reasonix.app.goal`)."""
        return self._s._goal

    def start(
        self, objective: str, *, budget_usd: float | None = None, max_turns: int | None = None
    ) -> Turn:
        """``/goal <objective>``: work toward ``objective`` over several turns, until the model
        completes it with evidence, is blocked, or the budget (USD, every role) or the turn
        cap (default ``[goals] max_turns``) stops it. Iterate the returned turn as any other;
        its result's text is the goal's report. Raises SessionError while another turn runs,
        when goals are off, or when an unfinished goal exists (resume or clear it first)."""
        self._s._check_idle("start a goal")
        if not self._s.config.goals.enabled:
            raise SessionError("goals are off ([goals] enabled = false)")
        if not objective.strip():
            raise SessionError("the goal needs an objective: /goal <objective>")
        current = self._s._goal
        if current is not None and not current.finished:
            raise SessionError(
                f"this session has an unfinished goal ({current.status}: {current.objective}); "
                "/goal resume continues it, /goal clear drops it"
            )
        goal = Goal(
            objective.strip(),
            budget_usd=budget_usd,
            max_turns=max_turns or self._s.config.goals.max_turns,
        )
        return self._goal_turn(goal)

    def resume(self, *, budget_usd: float | None = None, max_turns: int | None = None) -> Turn:
        """``/goal resume``: continue this session's goal (after a pause, an interrupt, a
        restart, or a limit, which ``budget_usd`` / ``max_turns`` may raise). Raises
        SessionError when there is no goal to continue."""
        self._s._check_idle("resume the goal")
        goal = self._s._goal
        if goal is None:
            raise SessionError("this session has no goal; /goal <objective> starts one")
        if goal.finished:
            raise SessionError("the goal is complete; /goal <objective> starts a new one")
        if budget_usd is not None:
            goal.budget_usd = budget_usd
        if max_turns is not None:
            goal.max_turns = max_turns
        return self._goal_turn(goal)

    async def run(
        self, objective: str, *, budget_usd: float | None = None, max_turns: int | None = None
    ) -> TurnOutcome:
        """:meth:`start` and wait for its outcome."""
        return await self.start(objective, budget_usd=budget_usd, max_turns=max_turns).result()

    def pause(self) -> str:
        """``/goal pause``: a running goal stops after its current turn; an idle one is marked
        paused."""
        goal = self._s._goal
        if goal is None or goal.status not in ("active", "paused"):
            return "No goal is running."
        if self._s.running:
            self._s._goal_pause = True
            return "The goal pauses when the current turn ends."
        goal.status, goal.stop_reason = "paused", "paused"
        self._record_goal(goal)
        return "Goal paused; /goal resume continues it."

    def clear(self) -> str:
        """``/goal clear``: forget the goal (its turns stay in the conversation)."""
        self._s._check_idle("clear the goal")
        if self._s._goal is None:
            return "No goal to clear."
        self._s._events.emit(GoalRecorded("controller", self._s._goal.to_dict(), cleared=True))
        self._s._goal = None
        return "Goal cleared."

    def status(self) -> str:
        """``/goal status``."""
        if self._s._goal is None:
            return "No goal. /goal <objective> [--budget USD] [--max-turns N] starts one."
        return self._s._goal.describe()

    def _goal_turn(self, goal: Goal) -> Turn:
        ctrl = self._s._controller
        self._s._goal, self._s._goal_pause = goal, False

        async def one_turn(text: str, plan: bool | None) -> TurnResult:
            self._s._record.mark_turn(
                len(ctrl.executor.session),
                len(ctrl.planner.session) if ctrl.planner is not None else 0,
                ctrl.executor.turn,
                text,
            )
            # The objective is the user's words; the continuation (the model's own next
            # action, the host's notes) is data to auto mode's reviewer, never its request.
            return await self._s._hooked_turn(
                text, lambda p: ctrl.run_turn(p, plan=plan, request=goal.objective)
            )

        driver = GoalDriver(
            ctrl,
            one_turn,
            self._record_goal,
            self._s._events,
            self._s.config.planner.max_replans,
            lambda: self._s._goal_pause,
        )
        self._record_goal(goal)
        return self._s._start(lambda: run_goal(goal, driver))

    def _record_goal(self, goal: Goal) -> None:
        self._s._events.emit(GoalRecorded("controller", goal.to_dict()))


def goal_command(ctx: Context) -> Answer:
    """``/goal``: status, pause, clear, resume or a new objective (the command table's row;
    the words are parsed by :func:`parse_goal_args`)."""
    from reasonix.app.command_types import Answer

    session = ctx.session
    verb, _, rest = ctx.arg.partition(" ")
    if verb in ("", "status"):
        return Answer(session.goals.status())
    if verb == "pause":
        return Answer(session.goals.pause())
    if verb == "clear":
        return Answer(session.goals.clear())
    resume = verb == "resume"
    wanted = parse_goal_args(rest if resume else ctx.arg, objective=not resume)

    def start(session: AgentSession) -> Turn:
        if resume:
            return session.goals.resume(budget_usd=wanted.budget_usd, max_turns=wanted.max_turns)
        return session.goals.start(
            wanted.objective, budget_usd=wanted.budget_usd, max_turns=wanted.max_turns
        )

    return Answer(turn=start, then=lambda session: session.goals.status())
