"""The session façade: one :class:`AgentSession` per open session, for every frontend.

The terminal app, headless ``reasonix run``, and the editor (ACP), web and batch frontends all
open a session here and call only its methods; behaviour lives below it (the Controller, the
agents, the permission engine, the store), so a capability added there reaches every frontend.

::

    session = await AgentSession.open(config, workspace, store=store)   # or resume_id=...
    try:
        turn = session.start_turn("add a --json flag to the CLI")
        async for event in turn:                      # typed events, as they happen
            ...
        outcome = await turn.result()                 # TurnOutcome
        print(session.usage.cost_table())
    finally:
        await session.aclose()

Approvals: an in-process frontend passes an ``approver`` (asked in place); a remote one opens
with ``remote_approvals=True`` and answers the :class:`~reasonix.app.approvals.ApprovalRequested`
events of a turn with :meth:`AgentSession.answer_approval`. With neither, a call that would ask
is denied with a message saying which rule would allow it (headless).

Construction is one phase: :meth:`AgentSession.open` assembles every part
(:mod:`reasonix.app.assembly`), opens or resumes the stored session
(:mod:`reasonix.app.persistence`), and returns a complete object.

The session itself holds the life cycle, turns, approvals and a few queries; the rest is in
named parts: ``session.history`` (:mod:`~reasonix.app.history`: marks, rewind, undo, stored
sessions), ``session.usage`` (:mod:`~reasonix.app.usage`: cost, context, balance, subagents),
``session.goals`` (:mod:`~reasonix.app.goals`), ``session.mcp``
(:mod:`~reasonix.app.mcp_part`) and ``session.permissions``
(:mod:`~reasonix.app.permissions_part`: the rules in force and where each came from). The
work behind them lives in :mod:`~reasonix.app.assembly`, :mod:`~reasonix.app.persistence`,
:mod:`~reasonix.app.turn`, :mod:`~reasonix.app.approvals` and :mod:`~reasonix.app.rewind`.

It still runs past 500 lines because the life cycle (open, resume, the switch on ``/clear`` and
``/resume``, close) and the wiring of a turn (start, interrupt, approvals, the waiting plan and
questions) share the session's private state, which a switch replaces whole; the next seam is
passing the host objects in at construction instead of attaching them after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.agent.session import Session
from reasonix.app import assembly
from reasonix.app.approvals import ApprovalChoice, PendingApprovals
from reasonix.app.extensions import Extensions
from reasonix.app.goal import Goal, load_goal
from reasonix.app.goals import SessionGoals
from reasonix.app.history import SessionHistory
from reasonix.app.hooks import (
    MAX_STOP_CONTINUATIONS,
    HookedPolicy,
    NotifyingApprover,
    SessionHooks,
    make_session_hooks,
)
from reasonix.app.jobs import session_jobs
from reasonix.app.mcp_part import SessionMcp
from reasonix.app.permissions_part import SessionPermissions
from reasonix.app.persistence import ROLES, SessionRecord, StoredSession, reviewer_history
from reasonix.app.shell import SessionShell
from reasonix.app.turn import SessionEvents, Turn, TurnOutcome
from reasonix.app.usage import ContextUse, SessionUsage
from reasonix.config import Config, user_config_path
from reasonix.control import Controller, GateDecision, Route, TurnResult
from reasonix.control.delegation import WriterSetup
from reasonix.control.orchestrator import PlanApprover
from reasonix.control.plan import Plan
from reasonix.errors import ConfigError, ReasonixError, SessionError
from reasonix.events import NoticeEvent, NullSink, Sink
from reasonix.extensions.commands import CustomCommand
from reasonix.extensions.skills import skills_listing
from reasonix.messages import ImagePart, UserMessage
from reasonix.providers.base import Provider
from reasonix.safety.checkpoints import CHECKPOINTS_KEY, CheckpointManager
from reasonix.safety.confinement import BashConfinement, NoConfiner
from reasonix.safety.permissions import (
    Approver,
    Mode,
    PermissionEngine,
    PermissionRecord,
    next_mode,
)
from reasonix.store import SessionInfo, SessionStore
from reasonix.tools.ask import (
    ASKER_KEY,
    QuestionAsker,
    ask_tool,
    pending_questions,
    questions_dicts,
)
from reasonix.tools.builtin.jobs import job_tools
from reasonix.tools.registry import ToolContext, ToolRegistry

if TYPE_CHECKING:
    from reasonix.app.agent_types import AgentType
    from reasonix.mcp import McpManager, McpServerConfig

__all__ = ["AgentSession", "ContextUse"]


class AgentSession:
    """One open session of reasonix in a workspace; see the module docstring.

    Build it with :meth:`open`; the constructor takes parts already assembled.
    """

    def __init__(
        self,
        config: Config,
        workspace: Path,
        *,
        store: SessionStore,
        stored: StoredSession,
        providers: Mapping[str, Provider],
        permissions: PermissionEngine,
        permission_log: list[PermissionRecord],
        events: SessionEvents,
        plan_approver: PlanApprover | None,
        approvals: PendingApprovals | None,
        mcp: McpManager | None,
        data_dir: Path,
        extensions: Extensions | None = None,
        hooks: SessionHooks | None = None,
        bash: BashConfinement | None = None,
        asker: QuestionAsker | None = None,
        subagent_provider: Callable[[str], Provider] | None = None,
    ) -> None:
        self.config = config
        self._asker = asker
        self.workspace = workspace
        self.store = store
        self._providers = dict(providers)
        self._permissions = permissions
        self._permission_log = permission_log
        self._events = events
        self._plan_approver = plan_approver
        self._approvals = approvals
        self._mcp = mcp
        self._data_dir = data_dir
        self._extensions = extensions or Extensions()
        self._hooks = hooks if hooks is not None else SessionHooks.none(workspace, events, data_dir)
        #: how bash commands run (confined or not); frontends show its notice
        self.bash = bash or BashConfinement(NoConfiner(), "off")
        #: the background jobs of this session (``bash`` with ``run_in_background``); they
        #: are stopped by :meth:`aclose` unless kept
        self.jobs = session_jobs(config, data_dir, events)
        self._subagent_provider = subagent_provider
        self._store_error_reported = False
        self.notices: list[str] = []
        self._goal: Goal | None = None
        self._goal_pause = False
        #: the parts of the façade, by concern (see docs/architecture.md)
        self.history = SessionHistory(self)
        self.usage = SessionUsage(self)
        self.goals = SessionGoals(self)
        self.mcp = SessionMcp(self)
        self.permissions = SessionPermissions(self)
        self.shell = SessionShell(self)
        self._attach(stored)

    # -- opening ----------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        config: Config,
        workspace: str | os.PathLike[str],
        *,
        store: SessionStore,
        approver: Approver | None = None,
        remote_approvals: bool = False,
        sink: Sink | None = None,
        resume_id: str | None = None,
        continue_last: bool = False,
        plan_approver: PlanApprover | None = None,
        environ: Mapping[str, str] | None = None,
        start_mcp: bool = True,
        provider_factory: assembly.ProviderFactory | None = None,
        extra_mcp_servers: Sequence[McpServerConfig] = (),
        asker: QuestionAsker | None = None,
    ) -> AgentSession:
        """Assemble everything from ``config`` and open a session in ``workspace``: a new one,
        ``resume_id``, or (``continue_last``) the folder's most recent (a new one if none).
        Starts the configured MCP servers.

        ``approver`` answers the permission layer's questions in place; ``remote_approvals``
        turns them (and plan approvals) into events answered by :meth:`answer_approval`; with
        neither, "ask" becomes a denial. ``plan_approver`` answers plans that need approval
        (with neither it nor remote approvals, such a plan is kept for :meth:`approve_plan`).
        ``environ`` is where API keys are read (default: the process environment);
        ``provider_factory`` replaces the configured providers (tests, custom clients);
        ``extra_mcp_servers`` are started with the configured ones (an editor's own servers,
        passed over ACP: they come from the user, like the user's config). ``asker`` shows the
        model's ``ask`` questions to the user; without one, a question ends the turn with the
        stop reason ``needs_input`` and the next input answers it (:meth:`pending_questions`).
        Raises :class:`~reasonix.errors.ReasonixError` (e.g. an unknown session id).
        """
        ws = _resolve(workspace)
        if approver is not None and remote_approvals:
            raise SessionError("pass an approver or remote_approvals=True, not both")
        providers = assembly.make_providers(config, environ, provider_factory)
        events = SessionEvents(sink or NullSink())
        approvals = PendingApprovals(events) if remote_approvals else None
        if approvals is not None:
            approver = approvals
            plan_approver = plan_approver or approvals.approve_plan
        log: list[PermissionRecord] = []
        data_dir = store.path.parent
        hooks = make_session_hooks(config, ws, events, data_dir)
        for note in hooks.problems:
            events.user.emit(NoticeEvent("hooks", "hooks_skipped", note))
        bash = assembly.make_confinement(config, data_dir, environ)
        # An approver that says yes to everything (run --yes, batch --yes) runs bash unasked.
        refusal = bash.unattended_error("--yes") if getattr(approver, "unattended", False) else None
        if refusal:
            raise ConfigError(refusal)
        if approver is not None and hooks:
            approver = NotifyingApprover(approver, hooks)
        permissions = assembly.make_permissions(config, approver, log.append, bash)
        hooks.mode = lambda: permissions.mode.value
        mcp = None
        if start_mcp:
            mcp = await assembly.start_configured_mcp(
                config, ws, environ, data_dir, events.user, extra=extra_mcp_servers
            )
        extensions = Extensions.load(ws, user_config_path(environ).parent, trusted=config.trusted)
        for note in extensions.problems:
            events.user.emit(NoticeEvent("controller", "extension_skipped", note))
        try:
            target = resume_id
            if target is None and continue_last:
                target = store.latest_session(ws)
            if target is not None:
                stored = StoredSession.load(store, target)
            else:
                stored = StoredSession.create(store, ws, *_role_models(config, providers))
        except BaseException:
            # e.g. an unknown session id: do not leave the MCP servers running.
            if mcp is not None:
                await mcp.aclose()
            raise
        session = cls(
            config,
            ws,
            store=store,
            stored=stored,
            providers=providers,
            permissions=permissions,
            permission_log=log,
            events=events,
            plan_approver=plan_approver,
            approvals=approvals,
            mcp=mcp,
            data_dir=data_dir,
            extensions=extensions,
            hooks=hooks,
            bash=bash,
            asker=asker,
            subagent_provider=lambda model: assembly.make_subagent_provider(
                config, model, environ, provider_factory
            ),
        )
        session.environ = environ
        await hooks.session_start("resume" if session.resumed else "startup")
        _prepare_in_background(providers.values())
        return session

    #: the environment the session was opened with (the keys held apart), for ``/config``
    environ: Mapping[str, str] | None = None

    #: The name this constructor had when the façade was ``Runtime``.
    from_config = open

    def _attach(self, stored: StoredSession) -> None:
        """Make ``stored`` the current session: persistence, checkpoints, a new Controller."""
        self._record = SessionRecord(self.store, stored, self._report_store_error)
        self._events.record = self._record.sink
        self._git_error_reported = False
        self._checkpoints = CheckpointManager(
            self.workspace,
            data_dir=self._data_dir,
            session_id=stored.session_id,
            settings=self.config.checkpoints,
        )
        # Snapshots off the critical path: the folder's first one starts now, while the user
        # types; each step's changes are hashed after it, while the model answers.
        self._checkpoints.prepare_in_background()
        self._events.after_tool = self._checkpoints.after_step
        sessions: dict[str, Session] = {
            role: Session(f"{stored.session_id}:{role}", stored.messages[role]) for role in ROLES
        }
        reviewed = reviewer_history(self.store, stored.session_id, self._report_store_error)
        # A review cut off before its answer is dropped (the mirror rewrites the store).
        kept = reviewed[:-1] if reviewed and isinstance(reviewed[-1], UserMessage) else reviewed
        sessions["reviewer"] = Session(f"{stored.session_id}:reviewer", kept)
        hooks = self._hooks if self._hooks else None
        executor_tools = [*job_tools(self.jobs), ask_tool()]
        policy = HookedPolicy(self._permissions, hooks) if hooks else self._permissions
        registry = assembly.make_registry(
            self.config,
            self.workspace,
            policy,
            self._checkpoints,
            self._mcp,
            extra=self._extensions.tools(),
            confiner=self.bash.confiner,
            jobs=self.jobs,
            executor_only=len(executor_tools),
        )

        #: closed with the session: it ends what the tools hold (bash's kept sandbox)
        self._tools = registry

        def copy_tools(root: Path) -> ToolRegistry:
            # A writer child's tools: the built-in ones on its copy, the same rules, approver
            # and hooks, bash confined to the copy; no MCP servers (they act on the real
            # workspace) and no snapshots (the copy is disposable).
            return assembly.make_registry(
                self.config, root, policy, None, None, confiner=self.bash.confiner
            )

        if self._mcp is not None:
            from reasonix.mcp.overflow import registry_overflow_notice

            if (overflow := registry_overflow_notice(registry)) is not None:
                self._events.tell(NoticeEvent("controller", "tool_overflow", overflow))
        #: the memory files read as this session opened (``/status`` lists them)
        self.memory_files = assembly.memory_sources(self.workspace)
        # The host objects the executor's tools use, handed over as the Controller is built.
        state: dict[str, Any] = {}
        CHECKPOINTS_KEY.set(state, self._checkpoints)
        if self._asker is not None:
            ASKER_KEY.set(state, self._asker)
        self._controller = assembly.make_controller(
            self.config,
            self.workspace,
            providers=self._providers,
            registry=registry,
            sessions=sessions,
            sink=self._events,
            plan_approver=self._plan_approver,
            memory=assembly.project_memory(self.workspace, self.memory_files),
            on_subagent=lambda child, session: self._record.follow_child(child.id, session),
            hooks=hooks,
            executor_tools=executor_tools,
            writers=WriterSetup(self._data_dir / "worktrees", self.workspace, copy_tools),
            profiles=self._extensions.profiles,
            subagent_provider=self._subagent_provider,
            executor_state=state,
        )
        self._hooks.attach(stored.session_id, self._controller.executor)
        reviewer = self._controller.reviewer
        self._permissions.reviewer = reviewer
        if reviewer is not None:
            self._record.follow_child("reviewer", reviewer.agent.session, reviewed)
        # The budget is the session's: what earlier runs of it spent counts too.
        earlier = self.store.usage_summary(stored.session_id)
        self._controller.cost.earlier = sum(t.cost for t in earlier.values())
        self._events.last_prompt.clear()
        self._record.follow(
            "executor", self._controller.executor.session, stored.messages["executor"]
        )
        if self._controller.planner is not None:
            self._record.follow(
                "planner", self._controller.planner.session, stored.messages["planner"]
            )
        for repaired in self._record.repairs:
            self._events.emit(repaired)
        self._resumed = len(self._controller.executor.session) > 0
        self._goal = self._stored_goal(stored.session_id)
        self._environment_told = False
        if stored.marks:
            # Continue the executor's turn numbering so new checkpoints do not collide.
            self._controller.executor.turn = max(m.agent_turn for m in stored.marks) + 1

    # -- what the session is ----------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._record.session_id

    @property
    def controller(self) -> Controller:
        """The Controller of the current session, for library users and tests; frontends use
        the façade's own methods."""
        return self._controller

    @property
    def mode(self) -> str:
        """The permission mode: ``ask``, ``auto-edit``, ``plan`` or ``yolo``."""
        return self._permissions.mode.value

    @property
    def resumed(self) -> bool:
        """The session already had a conversation when it was opened (or switched to)."""
        return self._resumed

    @property
    def running(self) -> bool:
        """A turn (or the user's ``!command``) is running."""
        return self._events.turn is not None

    def message_count(self, role: str = "executor") -> int:
        """How many messages ``role``'s conversation holds (0 for a disabled planner)."""
        agent = self._controller.executor if role == "executor" else self._controller.planner
        return len(agent.session) if agent is not None else 0

    def model_of(self, role: str) -> str | None:
        """The model ``role`` runs on; None for a disabled planner or an unknown role."""
        if role == "executor":
            return self.config.executor.model
        if role == "planner" and "planner" in self._providers:
            return self.config.planner.model
        return None

    def models(self) -> dict[str, str]:
        """The model of each active role."""
        return {role: model for role in ROLES if (model := self.model_of(role)) is not None}

    def status_lines(self) -> list[str]:
        """``/status``: the session, its models per role, the mode, the folder and which
        memory files (REASONIX.md, AGENTS.md, CLAUDE.md, ...) were read."""
        lines = [
            f"session: {self.session_id}",
            *(f"{role}: {model}" for role, model in self.models().items()),
            f"mode: {self.mode}",
            f"folder: {self.workspace}",
        ]
        files = getattr(self, "memory_files", [])
        if files:
            lines.append("memory files read:")
            lines += [f"  {path}" for path in files]
        else:
            lines.append("memory files read: none (REASONIX.md, AGENTS.md, CLAUDE.md)")
        return lines

    @property
    def pending_plan(self) -> Plan | None:
        """A plan kept by ``plan_only`` or a declined approval, waiting for :meth:`approve_plan`."""
        return self._controller.pending_plan

    def pending_questions(self) -> list[dict[str, Any]]:
        """The questions the model asked (``ask``) that wait for the user's answer: the next
        turn's text is delivered as their answer. Empty when none wait."""
        out: list[dict[str, Any]] = []
        for _, questions in pending_questions(self._controller.executor.session.snapshot()):
            out += questions_dicts(questions)
        return out

    def todo(self) -> str:
        """The executor's todo list (and a pending plan, if any)."""
        todo = self._controller.executor.todo_state
        text = todo.render() if len(todo) else "The todo list is empty."
        pending = self._controller.pending_plan
        if pending is not None:
            text += "\n\nA plan is waiting for approval:\n" + pending.to_markdown()
        return text

    def switch_model(self, role: str, model: str) -> str:
        """``/model``: run ``role`` on ``model`` from the next turn on. The role's history is
        kept, but no cache holds it for the new model: the switch is a planned break of that
        role's prefix (a new chain, as after compaction), and the answer says what it costs.
        Raises ConfigError/UnknownModelError for a model without known prices."""
        import dataclasses

        self._check_idle("switch models")
        agent = self._controller.executor if role == "executor" else self._controller.planner
        if role not in ROLES or agent is None:
            raise SessionError(f"no {role!r} role to switch (roles: {', '.join(self.models())})")
        info = self.config.model_info(model)
        old = self.model_of(role)
        if old == model:
            return f"The {role} already runs on {model}."
        agent.options.model = model
        agent.options.prices = info.prices
        agent.options.context_window = info.context_window
        section = dataclasses.replace(getattr(self.config, role), model=model)
        self.config = dataclasses.replace(self.config, **{role: section})
        agent.session.rewrite(agent.session.snapshot(), reason="model_switch")
        tokens = (
            self._events.last_prompt.get(role)
            or sum(len(str(getattr(m, "content", ""))) for m in agent.session.snapshot()) // 4
        )
        cold = tokens * info.prices.miss / 1e6
        warm = tokens * info.prices.hit / 1e6
        text = (
            f"The {role} now runs on {model} (was {old}). Its history is kept, but no cache "
            f"holds it for the new model: the next {role} request sends about {tokens} prompt "
            f"tokens uncached (about ${cold:.4f} instead of ${warm:.4f} cached); later "
            f"requests are cached again. Prices per 1M tokens: hit ${info.prices.hit:g}, "
            f"miss ${info.prices.miss:g}, output ${info.prices.output:g}."
        )
        self._events.last_prompt.pop(role, None)
        return text

    @staticmethod
    def list_sessions(
        store: SessionStore, workspace: str | os.PathLike[str], limit: int = 20
    ) -> list[SessionInfo]:
        """A folder's stored sessions, most recent first, without opening one."""
        return store.list_sessions(_resolve(workspace), limit=limit)

    # -- turns ------------------------------------------------------------------------------------

    def start_turn(
        self,
        text: str,
        *,
        plan: bool | None = None,
        plan_only: bool = False,
        images: tuple[ImagePart, ...] = (),
        request: str | None = None,
    ) -> Turn:
        """Start one user turn; iterate the returned :class:`Turn` for its events and await
        ``turn.result()``. ``plan=True`` forces the planner (``/plan``), ``False`` forbids it;
        ``plan_only`` plans and stops (the plan waits for :meth:`approve_plan`); so does a plan
        request in plan mode, where nothing may change (the read-only executor could only
        stall on it). ``images`` ride in the user turn (see :mod:`reasonix.images`).
        ``request``: the user's own words when ``text`` carries attachments after them (piped
        input, ``@path`` files, an editor's embedded resources): auto mode's reviewer reads
        only those as instructions (None: all of ``text`` is the user's).
        Raises SessionError while another turn runs."""
        self._check_idle("start a turn")
        if plan and self.mode == "plan":
            plan_only = True
        ctrl = self._controller
        self._tell_environment()
        self._record.mark_turn(
            len(ctrl.executor.session),
            len(ctrl.planner.session) if ctrl.planner is not None else 0,
            ctrl.executor.turn,
            text,
        )
        return self._start(
            lambda: self._hooked_turn(
                text,
                lambda prompt: ctrl.run_turn(
                    prompt, plan=plan, plan_only=plan_only, images=images, request=request
                ),
            )
        )

    async def _hooked_turn(
        self, text: str, run: Callable[[str], Awaitable[TurnResult]]
    ) -> TurnResult:
        """``UserPromptSubmit`` before the prompt is sent (a block keeps it from the model) and
        ``Stop`` when the turn is done (a block continues it with the hook's reason)."""
        hooks = self._hooks
        if not hooks:
            return await run(text)
        prompt = await hooks.user_prompt(text)
        if prompt.blocked:
            route = Route.EXECUTOR_ONLY
            why = prompt.reason or "no reason given"
            return TurnResult(
                f"The prompt was not sent: a UserPromptSubmit hook blocked it: {why}",
                route,
                "prompt_blocked",
                GateDecision(route, "prompt blocked by a hook"),
            )
        result = await run(text)
        active = False
        for _ in range(MAX_STOP_CONTINUATIONS):
            if result.stop_reason != "done":
                break
            stop = await hooks.stop(active)
            if not stop.blocked:
                break
            active = True
            # the hook's reason is not the user's words: the turn's request stays theirs
            ctrl = self._controller
            result = await ctrl.run_turn(stop.reason or "Continue.", request=ctrl.turn_request)
        return result

    @property
    def commands(self) -> dict[str, CustomCommand]:
        """The custom slash commands of this session (the user's, and the project's in a
        trusted folder), by name."""
        return dict(self._extensions.commands)

    def agent_types(self) -> list[AgentType]:
        """``/agents``: the subagent types ``task`` offers (built-in and configured), with
        their tools and source, and the profiles of an untrusted folder (not loaded)."""
        from reasonix.app.agent_types import agent_types

        return agent_types(self)

    def skills_listing(self) -> list[str]:
        """``/skills``: one line per skill the model can load."""
        return skills_listing(self._extensions.skills)

    def start_command(
        self,
        name: str,
        arguments: str = "",
        *,
        images: tuple[ImagePart, ...] = (),
        request: str | None = None,
    ) -> Turn:
        """Run the custom command ``/name arguments`` as a user turn: its ``!`` lines run
        first, inside the turn (through the permission engine, so approvals and interrupts
        work as for any tool call). The turn carries ``images`` and the image files its
        ``@path`` mentions name. ``request``: the user's own words when the frontend attached
        data to the line (default: the command line itself), for auto mode's reviewer.
        Raises SessionError for an unknown command or while another turn runs."""
        self._check_idle("run a command")
        if name not in self._extensions.commands:
            raise SessionError(f"no custom command /{name}; /help lists them")
        ctrl = self._controller
        self._record.mark_turn(
            len(ctrl.executor.session),
            len(ctrl.planner.session) if ctrl.planner is not None else 0,
            ctrl.executor.turn,
            f"/{name} {arguments}".strip(),
        )

        typed = request or f"/{name} {arguments}".strip()

        async def run() -> TurnResult:
            prompt, found = await self.expand_command_parts(name, arguments)
            carried = (*images, *found)
            # the expanded prompt carries files (@path) and command output (!`cmd`): auto
            # mode's reviewer takes the typed command line as the request, the prompt as data
            return await self._hooked_turn(
                prompt, lambda text: ctrl.run_turn(text, images=carried, request=typed)
            )

        return self._start(run)

    async def run_command(self, name: str, arguments: str = "") -> TurnOutcome:
        """:meth:`start_command` and wait for its outcome."""
        return await self.start_command(name, arguments).result()

    async def expand_command(self, name: str, arguments: str = "") -> str:
        """The prompt ``/name arguments`` sends (see :mod:`reasonix.extensions.commands`).
        Raises KeyError for an unknown command."""
        return (await self.expand_command_parts(name, arguments))[0]

    async def expand_command_parts(
        self, name: str, arguments: str = ""
    ) -> tuple[str, tuple[ImagePart, ...]]:
        """:meth:`expand_command`, and the images its ``@path`` mentions carry."""
        executor = self._controller.executor
        ctx = ToolContext(
            workspace=self.workspace,
            role="executor",
            turn=executor.turn + 1,
            call_id=f"command-{name}",
            state=executor.tool_state,
        )
        return await self._extensions.expand_parts(
            name,
            arguments,
            registry=executor.tools,
            permissions=self._permissions,
            sandbox=assembly.make_sandbox(self.config, self.workspace),
            ctx=ctx,
        )

    def _tell_environment(self) -> None:
        """Facts about the machine ride at the tail of each role's first user message (never
        in the system prompt, whose bytes must not change)."""
        from reasonix.app.environment import environment_facts

        agents = [self._controller.executor, self._controller.planner]
        fresh = [a for a in agents if a is not None and len(a.session) == 0]
        if not fresh or self._environment_told:
            return
        self._environment_told = True
        facts = environment_facts(self.workspace)
        for agent in fresh:
            agent.add_tail_note(facts)

    def revise_plan(self, change: str) -> Turn:
        """``n <what to change>`` on a plan: the planner revises the plan that is waiting (or
        was just declined), and the revised plan is offered for approval like the first."""
        self._check_idle("revise the plan")
        ctrl = self._controller
        # the task may carry attached files: auto mode's reviewer takes only the words the
        # user typed (for the declined plan, and the change) as the request
        request, typed = ctrl.orchestrator.revision_request(change)
        self._record.mark_turn(
            len(ctrl.executor.session),
            len(ctrl.planner.session) if ctrl.planner is not None else 0,
            ctrl.executor.turn,
            request,
        )
        return self._start(
            lambda: self._hooked_turn(
                request,
                lambda prompt: ctrl.run_turn(prompt, plan=True, revision=True, request=typed),
            )
        )

    def approve_plan(self) -> Turn:
        """``/approve``: run the plan that is waiting. Raises SessionError when none is."""
        self._check_idle("run the plan")
        if self._controller.pending_plan is None:
            raise SessionError("no plan is waiting; /plan <task> makes one")
        return self._start(self._controller.execute_pending_plan)

    async def run_turn(
        self,
        text: str,
        *,
        plan: bool | None = None,
        plan_only: bool = False,
        images: tuple[ImagePart, ...] = (),
        request: str | None = None,
    ) -> TurnOutcome:
        """:meth:`start_turn` and wait for its outcome (events go to the session's sink)."""
        turn = self.start_turn(text, plan=plan, plan_only=plan_only, images=images, request=request)
        return await turn.result()

    async def execute_pending_plan(self) -> TurnOutcome:
        """:meth:`approve_plan` and wait for its outcome."""
        return await self.approve_plan().result()

    def interrupt(self) -> bool:
        """Cancel the running turn (the session stays valid); False when none runs."""
        turn = self._events.turn
        if turn is None or turn.done():
            return False
        turn.interrupt()
        return True

    def answer_approval(self, approval_id: str, choice: ApprovalChoice, reason: str = "") -> None:
        """Answer an :class:`~reasonix.app.approvals.ApprovalRequested` (or a plan's
        :class:`~reasonix.app.approvals.PlanApprovalRequested`) by its id. ``reason`` goes
        back to the model with a denial. Raises SessionError for an id that is not waiting,
        or when the session was not opened with ``remote_approvals=True``."""
        if self._approvals is None:
            raise SessionError(
                "this session answers approvals in place; open it with remote_approvals=True "
                "to answer them by id"
            )
        self._approvals.answer(approval_id, choice, reason)

    @property
    def waiting_approvals(self) -> list[str]:
        """Ids of the approval questions waiting for :meth:`answer_approval`."""
        return self._approvals.waiting if self._approvals is not None else []

    def _check_idle(self, what: str) -> None:
        if self._events.turn is not None:
            running = "a turn" if isinstance(self._events.turn, Turn) else "a shell command"
            raise SessionError(f"cannot {what}: {running} is running (interrupt it or wait)")

    def _start(self, run: Callable[[], Awaitable[TurnResult]]) -> Turn:
        log_start = len(self._permission_log)
        requests_before = self._events.requests
        cost_before = self._controller.cost.snapshot()
        began = time.monotonic()
        self._events.route = Route.EXECUTOR_ONLY
        self._record.set_status("running")

        async def work() -> TurnOutcome:
            try:
                result = await run()
                return self._outcome(result, log_start, requests_before, began)
            finally:
                self._events.turn = None
                # The files as the agent left them: a later rewind leaves alone what
                # someone else changes after this.
                self._checkpoints.after_turn(self._controller.executor.turn)

        def interrupted() -> TurnOutcome:
            route = self._events.route
            result = TurnResult(
                "Interrupted; the session is kept.",
                route,
                "cancelled",
                GateDecision(route, "interrupted"),
                cost_by_role=self._controller.cost.since(cost_before),
            )
            outcome = TurnOutcome(
                result,
                tuple(r for r in self._permission_log[log_start:] if not r.allowed),
                duration_ms=int((time.monotonic() - began) * 1000),
                requests=self._events.requests - requests_before,
                interrupted=True,
            )
            self._record.set_status(outcome.session_status)
            return outcome

        turn = Turn(len(self._record.marks), work(), interrupted)
        self._events.turn = turn
        return turn

    def _outcome(
        self, result: TurnResult, log_start: int, requests_before: int, began: float
    ) -> TurnOutcome:
        self._report_git_error()
        outcome = TurnOutcome.judge(
            result,
            self._permission_log[log_start:],
            int((time.monotonic() - began) * 1000),
            self._events.requests - requests_before,
        )
        self._record.set_status(outcome.session_status)
        return outcome

    # -- goals ------------------------------------------------------------------------------------

    def _stored_goal(self, session_id: str) -> Goal | None:
        try:
            return load_goal(self.store.load_events(session_id))
        except ReasonixError as exc:
            self._report_store_error(str(exc))
            return None

    # -- session commands -------------------------------------------------------------------------

    def set_mode(self, mode: str | None = None) -> str:
        """Change the permission mode (one of :class:`~reasonix.safety.permissions.Mode`); with
        no argument, describe the current one. Raises ConfigError for an unknown mode."""
        from reasonix.safety.permissions import mode_names

        if mode:
            self._permissions.mode = mode
            return f"Permission mode: {self._permissions.mode.value}"
        return f"Permission mode: {self._permissions.mode.value} ({mode_names(' | ')})"

    def cycle_mode(self) -> str:
        """Shift+Tab: switch to the next permission mode (:func:`~reasonix.safety.permissions.
        next_mode`: yolo only when the session started in it); returns the new mode. A mode the
        engine refuses (yolo where bash would run unconfined) is skipped."""
        start = self.config.permissions.mode
        mode = next_mode(self.mode, start)
        for _ in range(len(Mode)):
            try:
                self._permissions.mode = mode
                break
            except ConfigError:
                mode = next_mode(mode, start)
        return self.mode

    async def compact(self) -> str:
        """``/compact``: summarise the executor's older history now."""
        self._check_idle("compact")
        if self.pending_questions():
            # The open question must be answered first: a summary request cannot carry a
            # tool call without its result.
            return "Not compacted: the model's question waits for your answer; answer it first."
        out = await self._controller.executor.compact()
        if out.accepted:
            self._events.last_prompt.pop("executor", None)
            return (
                f"Compacted the executor's history: {out.messages_before} -> "
                f"{out.messages_after} messages."
            )
        return f"Not compacted: {out.reason}"

    def remember(self, note: str) -> Path:
        """``/remember``: append ``note`` to the project's REASONIX.md; the running sessions
        see it at the tail of their next user message. Returns the file written."""
        return self._controller.remember(note)

    # -- closing ----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Interrupt a running turn, stop the background jobs that are not kept and the MCP
        servers, end bash's kept sandbox (its whole process tree), release the providers'
        connections and the session's claim."""
        turn = self._events.turn
        if turn is not None:
            turn.interrupt()
            await turn.result()
        try:
            await self.jobs.close()
            await self._hooks.session_end("other")
            if self._mcp is not None:
                await self._mcp.aclose()
            await self._controller.aclose()
            await asyncio.to_thread(self._checkpoints.wait, pending=False)
        finally:
            try:
                self._tools.close()
            finally:
                self._record.release()

    async def __aenter__(self) -> AgentSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- notices ----------------------------------------------------------------------------------

    def _report_store_error(self, message: str) -> None:
        if self._store_error_reported:
            return
        self._store_error_reported = True
        text = f"The session could not be saved: {message}. The conversation continues unsaved."
        self.notices.append(text)
        self._events.tell(NoticeEvent("controller", "store_error", text))

    def _report_git_error(self) -> None:
        """A snapshot before a step failed: say so (once per session), since ``/undo`` and
        ``/rewind`` then cannot restore what that step changed."""
        error = self._checkpoints.last_error
        if error is None or self._git_error_reported:
            return
        self._git_error_reported = True
        text = (
            f"Could not snapshot the workspace before a step ({error}). /undo and /rewind "
            "cannot restore what the steps after it changed; check `reasonix doctor` (git is "
            "needed)."
        )
        self.notices.append(text)
        self._events.emit(NoticeEvent("controller", "snapshot_failed", text))


def _prepare_in_background(providers: Iterable[Provider]) -> None:
    """Build the providers' HTTP clients (TLS set-up, tens of milliseconds each) in a thread
    while the user types, so the first request does not wait for them."""
    ready = [f for f in (getattr(p, "prepare", None) for p in providers) if callable(f)]

    def prepare() -> None:
        for func in ready:
            with contextlib.suppress(Exception):  # the first request reports any failure
                func()

    if ready:
        threading.Thread(target=prepare, name="reasonix-connect", daemon=True).start()


def _resolve(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace).resolve()


def _role_models(config: Config, providers: Mapping[str, Provider]) -> tuple[str, str | None]:
    """(executor model, planner model or None when the planner is disabled)."""
    return config.executor.model, config.planner.model if "planner" in providers else None
