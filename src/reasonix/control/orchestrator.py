"""The ``TurnOrchestrator``: hands control between the executor and the planner.

One turn: the gate picks a route; if it plans, the planner (read-only tools + ``submit_plan``)
delivers a plan in its own session; the plan becomes the executor's todo list and a handoff
message at the tail of the turn's user message; the executor runs, watched for progress; when
its host-observed progress stops changing, the planner is asked for a revised plan with a brief
of what failed, a bounded number of times (the watch and the notes of its stops are
:mod:`reasonix.control.watch`). See DESIGN.md, "The turn, step by step".
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from reasonix.agent.agent import Agent, AgentResult, StepDecision, StepInfo, StopReason
from reasonix.agent.compaction import PLAN_STATE_KEY
from reasonix.agent.prompts import PLANNER_SYSTEM_PROMPT as PLANNER_SYSTEM_PROMPT
from reasonix.agent.todo import TodoItem
from reasonix.control.brief import executor_brief, plan_handoff
from reasonix.control.cost import CostTracker, RoleCost
from reasonix.control.gate import GateDecision, GateOptions, Route, decide
from reasonix.control.plan import PLAN_KEY, Plan
from reasonix.control.todo_tools import STEP_BASELINE
from reasonix.control.watch import (
    BUDGET_HINT,
    StallWatch,
    incomplete_note,
    refusal_note,
    step_list,
)
from reasonix.errors import ProviderError
from reasonix.events import (
    ErrorEvent,
    GateDecided,
    NoticeEvent,
    PlanApproval,
    PlanFailed,
    PlanProduced,
    ReplanTriggered,
    Sink,
)
from reasonix.messages import (
    AssistantMessage,
    ImagePart,
    Message,
    ToolMessage,
    UserMessage,
    text_only,
)

PLAN_CLOSING = "Plan submitted to the executor."
CORRECTIVE = (
    "You did not deliver a plan. Call submit_plan now with an objective and steps; "
    "a plain-text answer cannot be used."
)

PlanApprover = Callable[[Plan], "bool | Awaitable[bool]"]


@dataclass
class OrchestratorOptions:
    """Gate settings, the stall rule (``stall_rounds`` executor steps without host-observed
    progress, or the same failing call ``repeat_failures`` times in a row), the refusal rule
    (``refused_steps`` steps in a row whose every call was refused end the turn as ``refused``),
    the re-plan bound, the planner's step budget and the approval callback (None = headless:
    stop and report)."""

    gate: GateOptions = field(default_factory=GateOptions)
    #: stop once the session has spent this much (USD, all roles); None for no limit
    max_cost_usd: float | None = None
    max_replans: int = 2
    stall_rounds: int = 4
    repeat_failures: int = 3
    refused_steps: int = 2
    brief_chars: int = 4000
    approver: PlanApprover | None = None


#: Why a turn ended: the executor's own reason, or one the orchestrator gave when it ended
#: the turn itself (a plan kept for approval, a stall it could not break, the budget); a goal
#: (:mod:`reasonix.app.goal`) also ends ``blocked`` or at its ``max_turns``.
TurnStopReason: TypeAlias = (
    StopReason
    | Literal[
        "plan_only",
        "plan_declined",
        "plan_failed",
        "stalled",
        "budget",
        "prompt_blocked",
        "refused",
        "plan_incomplete",
    ]
    | Literal["blocked", "max_turns"]
)


@dataclass(frozen=True)
class TurnResult:
    """What one ``run_turn`` produced. ``stop_reason`` (:data:`TurnStopReason`): the
    executor's (``done``, ``step_limit``, ``error``, ``length``, ``content_filter``,
    ``cancelled``, ``paused``, ``needs_input`` when a tool call waits for the user's answer)
    or the orchestrator's (``plan_only``, ``plan_declined``, ``plan_failed``, ``stalled``,
    ``budget``, ``refused``, ``plan_incomplete`` when the executor stopped with plan steps
    open and a nudge did not get them done), or the session's ``prompt_blocked`` when a hook
    refused the prompt before it reached the model; a goal (:mod:`reasonix.app.goal`) also
    ends ``blocked`` or ``max_turns``."""

    text: str
    route: Route
    stop_reason: TurnStopReason
    gate: GateDecision
    plan: Plan | None = None
    replans: int = 0
    cost_by_role: dict[str, RoleCost] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.stop_reason in ("done", "plan_only")

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "route": str(self.route),
            "stop_reason": self.stop_reason,
            "gate_reason": self.gate.reason,
            "plan": self.plan.to_dict() if self.plan else None,
            "replans": self.replans,
            "cost_by_role": {k: v.to_dict() for k, v in self.cost_by_role.items()},
        }


@dataclass(frozen=True)
class _Execution:
    """How an executor run (with its re-plans) ended: the executor's last result, the re-plans
    made, and, when the orchestrator ended the run itself, its closing note and reason."""

    last: AgentResult
    replans: int = 0
    note: str = ""
    stopped: TurnStopReason | None = None

    @property
    def text(self) -> str:
        return self.note or self.last.text

    @property
    def stop_reason(self) -> TurnStopReason:
        return self.stopped or self.last.stop_reason


class TurnOrchestrator:
    def __init__(
        self,
        executor: Agent,
        planner: Agent | None,
        options: OrchestratorOptions,
        sink: Sink,
        cost: CostTracker,
    ) -> None:
        self.executor = executor
        self.planner = planner
        self.options = options
        self.sink = sink
        self.cost = cost
        self.plans: list[Plan] = []
        self.pending_plan: Plan | None = None
        #: the request the pending plan was made for (its re-plans need the real task)
        self.pending_task = ""
        #: the user's own words in it (auto mode's reviewer's request; the rest is fenced data)
        self.pending_request = ""
        #: the images of that request (described for the planner; the executor gets them
        #: when the plan runs)
        self.pending_images: tuple[ImagePart, ...] = ()
        self._exec_mark = 0  # executor session length when the planner last saw it
        self._exec_epoch = 0  # ... and its epoch (a compaction or rewind rewrites it)
        self._exec_last: Message | None = None  # the last message the planner was briefed on

    def revision_request(self, change: str) -> tuple[str, str]:
        """A revised plan's request (the declined plan's task and the change ``n <change>``
        asks for) and the user's own words in it (their words for that task, and the change)."""
        ask = "\n\nRevise the plan you made for this. What to change: " + change
        return (self.pending_task + ask).strip(), (self.pending_request + ask).strip()

    def _keep(
        self, plan: Plan | None, task: str = "", words: str = "", images: tuple[ImagePart, ...] = ()
    ) -> None:
        self.pending_plan, self.pending_task, self.pending_request = plan, task, words
        self.pending_images = images

    # -- the turn -------------------------------------------------------------------------------

    async def run_turn(
        self,
        text: str,
        *,
        plan: bool | None = None,
        plan_only: bool = False,
        revision: bool = False,
        images: tuple[ImagePart, ...] = (),
        request: str | None = None,
    ) -> TurnResult:
        mark = self.cost.snapshot()
        # A revision's plan stays the plan for the task the declined one was made for.
        keep = revision and bool(self.pending_task)
        typed = text if request is None else request
        task, words = (self.pending_task, self.pending_request) if keep else (text, typed)
        if revision and not images:
            images = self.pending_images  # a revised plan is for the same pictures
        if self.executor.open_calls():
            # The text answers the executor's open question (``ask``): it goes to the executor
            # as that call's result, not to the planner as a new task.
            plan = False
        decision = decide(
            text,
            self.options.gate,
            plan=plan,
            plan_only=plan_only,
            planner_available=self.planner is not None,
            revision=revision,
        )
        self.sink.emit(
            GateDecided(
                "controller", str(decision.route), decision.reason, decision.score, decision.detail
            )
        )

        def result(
            text: str, reason: TurnStopReason, p: Plan | None = None, replans: int = 0
        ) -> TurnResult:
            return TurnResult(
                text, decision.route, reason, decision, p, replans, self.cost.since(mark)
            )

        if (spent := self._over_budget()) is not None:
            return result(self._budget_stop("Not started", spent), "budget")

        if decision.route is Route.EXECUTOR_ONLY:
            run = await self._execute(text, task=text, images=images)
            return result(run.text, run.stop_reason, None, run.replans)

        planner_task = text
        if images:
            # The planner's model cannot see images: the executor's model describes each once,
            # the description is stored with the image, and the planner reads it as text.
            try:
                images = await self.executor.describe_images(images)
            except ProviderError as exc:
                # An upload or a description request that failed ends the turn as the
                # executor's own failed upload does: said, nothing else sent, the session kept.
                failed = f"The images could not be prepared for the planner: {exc}"
                self.sink.emit(ErrorEvent("executor", type(exc).__name__, failed))
                return result(failed, "error")
            planner_task = text_only((UserMessage(text, images),))[0].content
        new_plan = await self._plan(planner_task, brief=self._brief(), reason="", round_no=1)
        if (spent := self._over_budget()) is not None:
            return result(self._budget_stop("Stopped after planning", spent), "budget", new_plan)
        if new_plan is None:
            self.sink.emit(
                NoticeEvent(
                    "controller", "planner_failed", "Planning failed; the executor proceeds alone."
                )
            )
            if decision.route is Route.PLAN_ONLY:
                return result("The planner did not produce a plan.", "plan_failed")
            run = await self._execute(text, task=text, images=images)
            return result(run.text, run.stop_reason, None, run.replans)

        if decision.route is Route.PLAN_ONLY:
            self._keep(new_plan, task, words, images)
            return result(new_plan.to_markdown(), "plan_only", new_plan)

        if decision.route is Route.PLAN_FOR_APPROVAL or new_plan.requires_approval:
            approved, why = await self._approve(new_plan)
            self.sink.emit(PlanApproval("controller", approved, why))
            if not approved:
                self._keep(new_plan, task, words, images)
                msg = (
                    f"The plan was not approved ({why}); nothing was executed. It is kept: "
                    "/approve runs it, or say what to change for a revised plan."
                )
                msg += "\n\n" + new_plan.to_markdown()
                return result(msg, "plan_declined", new_plan)

        self._keep(None)
        self._seed(new_plan)
        STEP_BASELINE.set(self.executor.tool_state, self.executor.ledger.mark())
        handoff = f"{text}\n\n{self._handoff(new_plan)}"
        run = await self._execute(handoff, task=text, plan=new_plan, images=images)
        return result(run.text, run.stop_reason, new_plan, run.replans)

    async def execute_pending_plan(
        self, text: str = "The plan is approved: carry it out."
    ) -> TurnResult:
        """Run a plan kept by ``plan_only`` or a declined approval."""
        pending = self.pending_plan
        if pending is None:
            raise ValueError("There is no pending plan to execute.")
        mark = self.cost.snapshot()
        decision = GateDecision(Route.PLAN_AND_EXECUTE, "pending_plan")
        # The executor never saw the request the plan was made for: hand it over with the plan,
        # and give re-plans the real task rather than the approval message.
        task = self.pending_task or text
        images = self.pending_images
        self._keep(None)
        self._seed(pending)
        STEP_BASELINE.set(self.executor.tool_state, self.executor.ledger.mark())
        request = text if task == text else f"{text}\n\nThe task:\n{task}"
        handoff = f"{request}\n\n{self._handoff(pending)}"
        run = await self._execute(handoff, task=task, plan=pending, images=images)
        route, cost = decision.route, self.cost.since(mark)
        return TurnResult(run.text, route, run.stop_reason, decision, pending, run.replans, cost)

    # -- executor with stall watch ----------------------------------------------------------------

    async def _execute(
        self,
        text: str,
        *,
        task: str,
        plan: Plan | None = None,
        images: tuple[ImagePart, ...] = (),
    ) -> _Execution:
        """Run the executor; on a stall, re-plan (bounded)."""
        plans = [plan] if plan else []
        replans = 0
        tried: list[str] = []
        next_text: str | None = text
        continue_turn = False
        nudged = False
        since = self.executor.ledger.mark()
        while True:
            watch = StallWatch(self.executor, self.options, self.cost)
            outcome = await self.executor.run(
                next_text,
                on_step=watch.on_step,
                continue_turn=continue_turn,
                images=() if continue_turn else images,
            )
            continue_turn = True
            open_steps = self._open_steps() if plans and outcome.stop_reason == "done" else []
            if open_steps and not nudged:
                # The executor stopped with the plan unfinished: once, tell it what is open.
                nudged = True
                next_text = (
                    "The plan is not finished: "
                    f"{step_list(open_steps)} still open. Carry on with them, or, if one "
                    "cannot be done, say why."
                )
                continue
            if open_steps:
                note = incomplete_note(self.executor.ledger, open_steps, since)
                self.sink.emit(NoticeEvent("controller", "plan_incomplete", note))
                answer = outcome.text.strip()
                return _Execution(
                    outcome, replans, f"{answer}\n\n{note}" if answer else note, "plan_incomplete"
                )
            if outcome.stop_reason != "paused":
                return _Execution(outcome, replans)
            if watch.over_budget:
                note = f"Stopped: {watch.reason}. {BUDGET_HINT}"
                self.sink.emit(NoticeEvent("controller", "budget", note))
                return _Execution(outcome, replans, note, "budget")
            if watch.refused:
                note = refusal_note(watch.refusals)
                self.sink.emit(NoticeEvent("controller", "refused", note))
                return _Execution(outcome, replans, note, "refused")
            tried.append(watch.reason)
            if self.planner is None or replans >= self.options.max_replans:
                attempts = [f"plan {p.objective!r}" for p in plans] or ["the executor alone"]
                note = (
                    f"Stopped: the executor stalled ({watch.reason}) and {replans} re-plan(s) "
                    f"did not get it moving (limit {self.options.max_replans}). "
                    f"Tried: {'; '.join(attempts)}. Problems seen: {'; '.join(tried)}."
                )
                self.sink.emit(NoticeEvent("controller", "stalled", note))
                return _Execution(outcome, replans, note, "stalled")
            replans += 1
            brief = self._brief()
            self.sink.emit(ReplanTriggered("controller", replans, watch.reason, brief))
            revised = await self._plan(task, brief=brief, reason=watch.reason, round_no=replans + 1)
            if revised is None:
                note = (
                    f"Stopped: the executor stalled ({watch.reason}) and the planner could not "
                    "produce a revised plan."
                )
                self.sink.emit(NoticeEvent("controller", "stalled", note))
                return _Execution(outcome, replans, note, "stalled")
            plans.append(revised)
            self._seed(revised)
            STEP_BASELINE.set(self.executor.tool_state, self.executor.ledger.mark())
            next_text = (
                f"The previous approach stalled ({watch.reason}). The planner revised the plan; "
                f"it replaces your todo list.\n\n{self._handoff(revised)}\n\n"
                "Do not repeat a failing command unchanged."
            )

    def _open_steps(self) -> list[TodoItem]:
        """The executor's todo items not completed (with a plan: the plan's steps)."""
        return [i for i in self.executor.todo_state.items if i.status != "completed"]

    def _seed(self, plan: Plan) -> None:
        """The plan becomes the executor's todo list; its markdown is kept so compaction can
        carry it over."""
        self.executor.seed_todo_state(plan.todo_items())
        PLAN_STATE_KEY.set(self.executor.tool_state, plan.to_markdown())

    def _over_budget(self) -> float | None:
        """What the session has spent, if that reached the budget; None otherwise."""
        limit, spent = self.options.max_cost_usd, self.cost.session_cost
        return spent if limit is not None and spent >= limit else None

    def _budget_stop(self, what: str, spent: float) -> str:
        note = f"{what}: the session has spent ${spent:.4f} of its "
        note += f"${self.options.max_cost_usd:g} budget. {BUDGET_HINT}"
        self.sink.emit(NoticeEvent("controller", "budget", note))
        return note

    # -- planner ------------------------------------------------------------------------------

    def _brief(self) -> str:
        session = self.executor.session
        snapshot = session.snapshot()
        start = self._exec_mark
        if session.epoch != self._exec_epoch:
            # Rewritten since (compaction): indexes moved. Resume after the last message the
            # planner saw if it was kept verbatim; otherwise everything left is new to it.
            start = next(
                (i + 1 for i in range(len(snapshot) - 1, -1, -1) if snapshot[i] is self._exec_last),
                0,
            )
        self._exec_mark, self._exec_epoch = len(snapshot), session.epoch
        self._exec_last = snapshot[-1] if snapshot else None
        return executor_brief(snapshot[start:], budget=self.options.brief_chars)

    async def _plan(self, task: str, *, brief: str, reason: str, round_no: int) -> Plan | None:
        planner = self.planner
        assert planner is not None
        start = len(planner.session)
        PLAN_KEY.pop(planner.tool_state)
        failures = 0

        def on_step(info: StepInfo) -> StepDecision:
            nonlocal failures
            if PLAN_KEY.present(planner.tool_state) or self._over_budget() is not None:
                return "pause"
            bad = [
                r
                for r, c in zip(info.results, info.assistant.tool_calls, strict=True)
                if c.name == "submit_plan" and r.is_error
            ]
            failures += len(bad)
            return "pause" if failures >= 2 else "continue"

        parts = [f"Task:\n{task}"]
        if brief:
            parts.append(f"What the executor did since the last plan:\n{brief}")
        if reason:
            parts.append(f"The executor stalled: {reason}. Revise the plan.")
        parts.append("Investigate with the read-only tools as needed, then call submit_plan once.")
        outcome = await planner.run("\n\n".join(parts), on_step=on_step)
        if (
            not PLAN_KEY.present(planner.tool_state)
            and outcome.stop_reason in ("done", "length", "step_limit")
            and failures < 2
        ):
            outcome = await planner.run(CORRECTIVE, on_step=on_step, continue_turn=True)
        plan = PLAN_KEY.pop(planner.tool_state)
        if plan is None:
            why = (
                "the planner returned a malformed plan twice"
                if failures >= 2
                else f"the planner did not call submit_plan ({outcome.stop_reason})"
            )
            if outcome.error:
                why = f"the planner request failed: {outcome.error}"
            # Roll back the failed round so no dangling message stays in the planner session.
            planner.session.rewrite(planner.session.snapshot()[:start], reason="planner_rollback")
            self.sink.emit(PlanFailed("controller", round_no, why))
            return None
        if isinstance(planner.session.last, ToolMessage):
            # Close the transcript at a valid boundary without paying another model round.
            planner.session.add(AssistantMessage(content=PLAN_CLOSING, reasoning_content=""))
        self.plans.append(plan)
        self.sink.emit(PlanProduced("controller", round_no, plan.to_markdown(), plan.to_dict()))
        return plan

    async def _approve(self, plan: Plan) -> tuple[bool, str]:
        if self.options.approver is None:
            return False, "no approver is available in this mode; run with approval to execute it"
        answer = self.options.approver(plan)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer), "approved" if answer else "declined by the user"

    def _handoff(self, plan: Plan) -> str:
        return plan_handoff(plan, self.executor.tools.names)
