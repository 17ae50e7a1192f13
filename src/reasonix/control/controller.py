"""The ``Controller``: two agents, one orchestrator, one place for frontends to call.

``Controller(Options(executor_provider, planner_provider, tool_registry, executor_options,
planner_options, sink))`` builds the executor (session ``"executor"``) and the planner (session
``"planner"``). Both share the tool registry — the planner through its ``read_only()`` view plus
``submit_plan`` — and the sink. Tool sets are fixed here, once, so each session's tool schemas
stay byte-identical for its whole life.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from reasonix.agent.agent import DEFAULT_SYSTEM_PROMPT, Agent, AgentOptions
from reasonix.agent.memory import remember, tail_note
from reasonix.agent.session import Session
from reasonix.control.cost import CostTracker, RoleCost, format_cost_table
from reasonix.control.delegation import (
    ChildRun,
    DelegationLimits,
    Delegator,
    ModelChoice,
    WriterSetup,
)
from reasonix.control.goal import GOAL_KEY, GoalTracker, update_goal_tool
from reasonix.control.orchestrator import (
    PLANNER_SYSTEM_PROMPT,
    OrchestratorOptions,
    TurnOrchestrator,
    TurnResult,
)
from reasonix.control.plan import Plan, submit_plan_tool
from reasonix.control.review import ReviewerRole, ReviewSettings
from reasonix.control.todo_tools import STEP_CALLBACK, executor_plan_tools
from reasonix.events import FanoutSink, NullSink, Sink, StepCompleted, UsageSource
from reasonix.messages import ImagePart
from reasonix.providers.base import Provider
from reasonix.tools.deferred import DEFERRED_TOOLS
from reasonix.tools.registry import Tool, ToolRegistry

if TYPE_CHECKING:
    # Type-checkers see defaults (PEP 696): ``Options(...)`` without a planner provider is
    # ``Options[None]``; a bare ``Controller`` means "a planner or not". The runtime TypeVars
    # need no default.
    from typing_extensions import TypeVar as _DefaultTypeVar

    from reasonix.extensions.agents import AgentProfile

    #: the planner's provider: a Provider (a planner runs) or None (executor only)
    PlannerProvider = _DefaultTypeVar("PlannerProvider", bound="Provider | None", default=None)
    #: the Controller's planner: an Agent, or None for executor only
    PlannerAgent = _DefaultTypeVar("PlannerAgent", bound="Agent | None", default="Agent | None")
else:
    PlannerProvider = TypeVar("PlannerProvider")
    PlannerAgent = TypeVar("PlannerAgent")

_Present = TypeVar("_Present", bound=Provider)


@dataclass
class Options(Generic[PlannerProvider]):
    """Everything a Controller needs. ``planner_provider`` None runs executor-only (the type
    says which: ``Options[None]`` or ``Options[SomeProvider]``)."""

    executor_provider: Provider
    planner_provider: PlannerProvider = None  # type: ignore[assignment]
    tool_registry: ToolRegistry | None = None
    executor_options: AgentOptions | None = None
    planner_options: AgentOptions | None = None
    sink: Sink | None = None
    orchestration: OrchestratorOptions = field(default_factory=OrchestratorOptions)
    #: resume: existing sessions to continue (ids are kept)
    executor_session: Session | None = None
    planner_session: Session | None = None
    #: give the executor the ``task`` tool (read-only subagents) within these limits
    delegation: DelegationLimits | None = None
    #: told of each subagent's session as it starts (the host stores its transcript)
    on_subagent: Callable[[ChildRun, Session], None] | None = None
    #: tools for the executor alone (not the planner, not children): the background-job
    #: tools, ``ask``
    executor_tools: Sequence[Tool] = ()
    #: writer subagents (``task`` with ``read_only: false``); None: read-only children only
    writers: WriterSetup | None = None
    #: subagent profiles by name (``subagent_type``), fixed for the session
    profiles: Mapping[str, AgentProfile] = field(default_factory=dict)
    #: builds the provider and options of a profile's model
    model_for: Callable[[str], ModelChoice] | None = None
    #: give the executor the ``update_goal`` tool (goals, :mod:`reasonix.control.goal`) from
    #: the start, so a goal begun mid-session leaves the tool schemas unchanged
    goal_tool: bool = False
    #: executor tools reached through ``more_tools`` instead of being sent on every request
    #: (:mod:`reasonix.tools.deferred`); empty sends every tool
    deferred_tools: Sequence[str] = DEFERRED_TOOLS
    #: the host's objects for the executor's tools, by :class:`~reasonix.tools.state.StateKey`
    #: name (the checkpoint manager, the question asker); the Controller adds the goal
    #: tracker and the step callback, the agent its todo list and ledger
    executor_state: Mapping[str, Any] = field(default_factory=dict)
    #: auto mode's reviewer (:mod:`reasonix.control.review`): its provider (None: no
    #: reviewer), options, settings and, on resume, its session
    reviewer_provider: Provider | None = None
    reviewer_options: AgentOptions | None = None
    review: ReviewSettings | None = None
    reviewer_session: Session | None = None


class Controller(Generic[PlannerAgent]):
    """The two agents and the orchestrator. Built with a planner provider, its ``planner`` is
    typed as an :class:`Agent` (``ctrl.planner.session`` needs no None check); built without
    one, as None."""

    planner: PlannerAgent

    @overload
    def __init__(self: Controller[Agent], options: Options[_Present]) -> None: ...
    @overload
    def __init__(self: Controller[None], options: Options[None]) -> None: ...
    @overload
    def __init__(self: Controller[Agent | None], options: Options[Provider | None]) -> None: ...
    def __init__(self, options: Options[Any]) -> None:
        self.options = options
        self.cost = CostTracker()
        user_sink = options.sink or NullSink()
        self.sink: Sink = FanoutSink([self.cost, user_sink])
        registry = options.tool_registry if options.tool_registry is not None else ToolRegistry()
        self.tool_registry = registry

        exec_opts = replace(
            options.executor_options or AgentOptions(),
            role="executor",
            usage_source=UsageSource.EXECUTOR,
        )
        executor_session = (
            options.executor_session
            if options.executor_session is not None
            else Session("executor")
        )
        executor_tools = registry.with_tools([*executor_plan_tools(), *options.executor_tools])
        #: runs the executor's ``task`` calls; None when delegation is off
        self.delegator: Delegator | None = None
        if options.delegation is not None:
            # Children get the read-only view of the base registry: no ``task`` (depth 1), no
            # todo tools of the parent.
            self.delegator = Delegator(
                options.executor_provider,
                registry,
                exec_opts,
                limits=options.delegation,
                sink=self.sink,
                on_child=options.on_subagent,
                session_prefix=executor_session.id,
                writers=options.writers,
                profiles=options.profiles,
                model_for=options.model_for,
            )
            executor_tools = executor_tools.with_tools(self.delegator.tools())
        if options.goal_tool:
            executor_tools = executor_tools.with_tools([update_goal_tool()])
        # Rarely used tools leave the prefix: one fixed discovery tool reaches them.
        executor_tools = executor_tools.defer(options.deferred_tools)
        #: the host side of an active goal (the ``update_goal`` tool reads it)
        self.goal = GoalTracker()
        state = dict(options.executor_state)
        GOAL_KEY.set(state, self.goal)
        STEP_CALLBACK.set(state, self._step_signed)
        self.executor = Agent(
            options.executor_provider,
            executor_tools,
            executor_session,
            exec_opts,
            self.sink,
            state=state,
        )
        planner: Agent | None = None
        if options.planner_provider is not None:
            base = options.planner_options or AgentOptions(
                system_prompt=PLANNER_SYSTEM_PROMPT, max_steps=12, workspace=exec_opts.workspace
            )
            if base.system_prompt == DEFAULT_SYSTEM_PROMPT:
                base = replace(base, system_prompt=PLANNER_SYSTEM_PROMPT)
            plan_opts = replace(base, role="planner", usage_source=UsageSource.PLANNER)
            planner = Agent(
                options.planner_provider,
                registry.read_only().with_tools([submit_plan_tool()]),
                options.planner_session
                if options.planner_session is not None
                else Session("planner"),
                plan_opts,
                self.sink,
            )
        # What the overloads promise: an Agent exactly when a planner provider was given.
        self.planner = cast("PlannerAgent", planner)
        self.orchestrator = TurnOrchestrator(
            self.executor, planner, options.orchestration, self.sink, self.cost
        )
        #: the user's own words of the current turn (see :meth:`run_turn`'s ``request``)
        self.turn_request = ""
        #: the third role, auto mode's reviewer of approvals (None without a provider)
        self.reviewer: ReviewerRole | None = None
        if options.reviewer_provider is not None:
            self.reviewer = ReviewerRole(
                options.reviewer_provider,
                options.reviewer_options or AgentOptions(workspace=exec_opts.workspace),
                self.sink,
                options.review,
                session=options.reviewer_session,
                context=self.executor.session.snapshot,
            )

    def _step_signed(self, step: str, accepted: bool, reason: str) -> None:
        """What ``complete_step`` reports: the host's verdict on the step's evidence."""
        self.sink.emit(StepCompleted("executor", step, accepted, reason))

    @property
    def workspace(self) -> Path:
        return self.executor.options.workspace

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
        """One user turn. ``plan=True`` forces the planner (``/plan``), ``False`` forbids it;
        ``plan_only`` plans and stops (the plan is kept as :attr:`pending_plan`); ``revision``
        plans again and offers the plan for approval (a declined plan's revision).
        ``request`` is the user's own words when ``text`` carries more (piped input, attached
        files, a goal's continuation): auto mode's reviewer takes only ``request`` as the
        user's instructions and sees the rest of ``text`` as fenced data. None: ``text`` is
        all the user's."""
        self.turn_request = text if request is None else request
        if self.reviewer is not None:
            self.reviewer.begin_turn(self.turn_request, _besides(text, self.turn_request))
        return await self.orchestrator.run_turn(
            text,
            plan=plan,
            plan_only=plan_only,
            revision=revision,
            images=images,
            request=self.turn_request,
        )

    def run_turn_sync(self, text: str, **kwargs: bool | None) -> TurnResult:
        return asyncio.run(self.run_turn(text, **kwargs))  # type: ignore[arg-type]

    async def execute_pending_plan(
        self, text: str = "The plan is approved: carry it out."
    ) -> TurnResult:
        return await self.orchestrator.execute_pending_plan(text)

    def remember(self, note: str) -> Path:
        """``/remember``: append to the project's REASONIX.md; the running sessions get the
        note at the tail of their next user message (their system prompts stay unchanged)."""
        path = remember(note, self.workspace)
        for agent in (self.executor, self.planner):
            if agent is not None:
                agent.add_tail_note(tail_note(note))
        return path

    @property
    def pending_plan(self) -> Plan | None:
        return self.orchestrator.pending_plan

    def cost_summary(self) -> dict[str, RoleCost]:
        """Per-role totals for the whole session (requests, hit/miss/output tokens, cost)."""
        return self.cost.snapshot()

    async def aclose(self) -> None:
        """Release the providers' connections (and the subagents' leftovers)."""
        if self.delegator is not None:
            await self.delegator.aclose()
        seen: set[int] = set()
        providers = (
            self.options.executor_provider,
            self.options.planner_provider,
            self.options.reviewer_provider,
        )
        for provider in providers:
            close = getattr(provider, "aclose", None)
            if provider is not None and id(provider) not in seen and close is not None:
                seen.add(id(provider))
                await close()

    async def __aenter__(self) -> Controller[PlannerAgent]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def cost_table(self) -> str:
        return format_cost_table(self.cost.snapshot())


def _besides(text: str, request: str) -> str:
    """What ``text`` carries besides the user's words ``request`` (the attachments after them,
    or all of ``text`` when it does not start with them: a goal's continuation)."""
    if text == request:
        return ""
    typed = request.rstrip()
    return text[len(typed) :].lstrip("\n") if typed and text.startswith(typed) else text
