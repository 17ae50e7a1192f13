"""``Runtime``: everything a frontend needs, built once from a :class:`~reasonix.config.Config`.

``await Runtime.from_config(config, workspace, store=store, approver=..., sink=...)`` builds:

- one :class:`~reasonix.providers.openai_compat.OpenAICompatProvider` per role, from the role's
  ``[[providers]]`` entry (base_url, api_key_env, headers, extra_body) and the model's
  :class:`~reasonix.providers.models.ModelInfo` from config;
- :class:`~reasonix.agent.AgentOptions` per role (``effort`` becomes ``reasoning_effort``;
  ``"off"`` disables thinking);
- the tool registry (built-in tools + MCP tools when configured) behind a
  :class:`~reasonix.safety.permissions.PermissionEngine` (mode and rules from config, the
  frontend's approver) and a per-session :class:`~reasonix.safety.checkpoints.CheckpointManager`;
- the :class:`~reasonix.control.Controller`;
- persistence: both sessions are mirrored into the :class:`~reasonix.store.SessionStore` through
  the sessions' listeners (each message committed as it is appended, ``seq`` = its index), and
  events/usage through a :class:`~reasonix.store.StoreSink`.

Resuming (``resume_id`` or ``continue_last``) loads both roles' messages as they were stored, so
the next request is a byte-exact extension of the last one sent. A session cut short by a killed
process is repaired by *appending* what the agent core would have appended (an answer to a
dangling user message, results for unanswered tool calls), never by editing history.

The slash commands of the terminal app are methods here (:meth:`set_mode`, :meth:`rewind`,
:meth:`cost_table`, :meth:`todo`, :meth:`sessions`, :meth:`clear`, :meth:`compact`,
:meth:`resume`, :meth:`mcp_status`, :meth:`mcp_restart`): frontends only parse and render.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from reasonix.agent.agent import (
    DEFAULT_SYSTEM_PROMPT,
    INTERRUPTED_CALL,
    INTERRUPTED_TURN,
    AgentOptions,
)
from reasonix.agent.memory import find_memory_files, load_memory, system_prompt_with_memory
from reasonix.agent.session import Session
from reasonix.config import Config, RoleConfig
from reasonix.control import Controller, Options, OrchestratorOptions, TurnResult
from reasonix.control.cost import RoleCost, format_cost_table
from reasonix.control.gate import GateOptions
from reasonix.control.orchestrator import PLANNER_SYSTEM_PROMPT, PlanApprover
from reasonix.errors import ConfigError, ReasonixError, SessionStoreError
from reasonix.events import Event, FanoutSink, NoticeEvent, NullSink, Sink, UsageEvent
from reasonix.messages import (
    AssistantMessage,
    Message,
    ReasoningEffort,
    ToolMessage,
    UserMessage,
)
from reasonix.providers.base import Provider
from reasonix.safety.checkpoints import CheckpointManager
from reasonix.safety.permissions import Approver, PermissionEngine, PermissionRecord
from reasonix.store import SessionInfo, SessionStore, StoreSink
from reasonix.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from reasonix.mcp import McpServerConfig

__all__ = [
    "ContextUse",
    "Runtime",
    "TurnMark",
    "TurnMarked",
    "TurnMarksReset",
    "TurnOutcome",
    "effort_options",
]

ROLES = ("executor", "planner")


@dataclass(frozen=True, slots=True)
class TurnMarked(Event):
    """Recorded when a user turn starts: where both sessions stood, so ``/rewind`` can cut the
    conversation back to that point after a restart too."""

    kind: ClassVar[str] = "turn_mark"
    turn: int
    executor_len: int
    planner_len: int
    agent_turn: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class TurnMark:
    """Where a user turn started. ``agent_turn`` is the executor's turn counter before it, so
    the turn's file checkpoints are ``agent_turn + 1``. A length of ``-1`` means that role's
    conversation no longer has that point: a compaction folded it into its summary."""

    turn: int
    executor_len: int
    planner_len: int
    agent_turn: int
    text: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnMark:
        return cls(
            int(data["turn"]),
            int(data["executor_len"]),
            int(data["planner_len"]),
            int(data["agent_turn"]),
            str(data.get("text", "")),
        )


@dataclass(frozen=True, slots=True)
class TurnMarksReset(Event):
    """Recorded when the turn marks change other than by a new turn (a rewind removed some, a
    compaction moved or retired their positions): the complete list from then on."""

    kind: ClassVar[str] = "turn_marks"
    marks: tuple[TurnMark, ...] = ()


def load_marks(events: list[dict[str, Any]]) -> list[TurnMark]:
    """The turn marks as they stood at the end of a stored session's event timeline."""
    marks: list[TurnMark] = []
    for event in events:
        kind = event.get("kind")
        if kind == TurnMarked.kind:
            mark = TurnMark.from_dict(event)
            # Turns are numbered len(marks) + 1: a number seen again means the later ones
            # were rewound (sessions recorded before rewinds were).
            marks = [m for m in marks if m.turn < mark.turn]
            marks.append(mark)
        elif kind == TurnMarksReset.kind:
            marks = [TurnMark.from_dict(m) for m in event.get("marks", ())]
    return marks


def remap_marks(
    marks: list[TurnMark], role: str, old: tuple[Message, ...], new: tuple[Message, ...]
) -> list[TurnMark]:
    """Marks after ``role``'s conversation was rewritten from ``old`` to ``new`` (compaction,
    planner rollback). A position in the unchanged head stays; one in the verbatim tail moves
    with it; one in the part that was replaced becomes -1."""
    head = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    out = []
    for mark in marks:
        pos = mark.executor_len if role == "executor" else mark.planner_len
        if pos < 0 or pos <= head:
            out.append(mark)
            continue
        moved = pos + len(new) - len(old) if pos >= len(old) - tail else -1
        if role == "executor":
            out.append(dataclasses.replace(mark, executor_len=moved))
        else:
            out.append(dataclasses.replace(mark, planner_len=moved))
    return out


@dataclass(frozen=True)
class TurnOutcome:
    """A turn's result plus what the permission layer refused during it.

    ``refused`` is True when a tool call was denied and never performed later in the turn, or
    a plan was declined: the work that was asked for was (at least partly) not done.
    """

    result: TurnResult
    denials: tuple[PermissionRecord, ...] = ()
    refused: bool = False
    duration_ms: int = 0
    requests: int = 0

    @property
    def is_error(self) -> bool:
        return self.result.stop_reason == "error"


@dataclass(frozen=True, slots=True)
class ContextUse:
    """The last request's prompt size for a role against its model's context window."""

    role: str
    model: str
    prompt_tokens: int
    context_window: int

    @property
    def fraction(self) -> float:
        return self.prompt_tokens / self.context_window if self.context_window else 0.0


def effort_options(role: RoleConfig) -> tuple[bool, ReasoningEffort | None]:
    """``(thinking, reasoning_effort)`` for a role: ``effort = "off"`` disables thinking."""
    if role.effort == "off":
        return False, None
    return True, role.effort


# ---------------------------------------------------------------------------------------------
# Persistence


class _SessionMirror:
    """Keeps one agent's stored messages equal to its session: appends are written as they
    happen; a rewrite (rewind, compaction, planner rollback) keeps the common prefix in the
    store and replaces the rest."""

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        agent: str,
        stored: list[Message],
        report: Callable[[str], None],
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.agent = agent
        self.stored = stored
        self.report = report

    def attach(self, session: Session) -> None:
        session.on_append(self.on_append)
        session.on_rewrite(self.on_rewrite)

    def on_append(self, session: Session, index: int, message: Message) -> None:
        if index != len(self.stored):
            self.sync(session.snapshot())
            return
        try:
            self.store.append_message(self.session_id, self.agent, index, message)
        except SessionStoreError as exc:
            self.report(str(exc))
            return
        self.stored.append(message)

    def on_rewrite(self, session: Session, reason: str) -> None:
        self.sync(session.snapshot(), reason)

    def sync(self, messages: tuple[Message, ...], reason: str = "resync") -> None:
        keep = 0
        for old, new in zip(self.stored, messages, strict=False):
            if old != new:
                break
            keep += 1
        try:
            self.store.truncate_messages(self.session_id, self.agent, keep, reason=reason)
            del self.stored[keep:]
            for i in range(keep, len(messages)):
                self.store.append_message(self.session_id, self.agent, i, messages[i])
                self.stored.append(messages[i])
        except SessionStoreError as exc:
            self.report(str(exc))


class _SafeStoreSink:
    """Records events in the current session; a storage failure becomes one notice instead of
    breaking the turn that emitted the event."""

    def __init__(self, store: SessionStore, session_id: str, report: Callable[[str], None]):
        self.inner = StoreSink(store, session_id)
        self.report = report

    def emit(self, event: Event) -> None:
        try:
            self.inner.emit(event)
        except SessionStoreError as exc:
            self.report(str(exc))


class _StatusTracker:
    """Remembers each role's last prompt size and model, for the status line."""

    def __init__(self) -> None:
        self.last_prompt: dict[str, int] = {}
        self.models: dict[str, str] = {}
        self.requests = 0

    def emit(self, event: Event) -> None:
        if isinstance(event, UsageEvent):
            key = str(event.source)
            self.last_prompt[key] = event.usage.prompt_tokens
            self.models[key] = event.model
            self.requests += 1


def repair_messages(messages: list[Message]) -> list[Message]:
    """What to append to a session cut off by a killed process so it is valid to continue:
    results for tool calls left unanswered, and an answer to a dangling user message."""
    extra: list[Message] = []
    if not messages:
        return extra
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    last_assistant = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last_assistant is not None and last_assistant.tool_calls:
        for call in last_assistant.tool_calls:
            if call.id not in answered:
                extra.append(ToolMessage(call.id, INTERRUPTED_CALL, name=call.name, is_error=True))
    if not extra and isinstance(messages[-1], UserMessage):
        extra.append(AssistantMessage(content=INTERRUPTED_TURN))
    return extra


# ---------------------------------------------------------------------------------------------
# Runtime


@dataclass
class _SessionState:
    session_id: str
    sessions: dict[str, Session]
    marks: list[TurnMark] = field(default_factory=list)


class Runtime:
    """One open session of reasonix in a workspace; see the module docstring."""

    def __init__(
        self,
        config: Config,
        workspace: Path,
        *,
        store: SessionStore,
        providers: Mapping[str, Provider],
        permissions: PermissionEngine,
        sink: Sink,
        plan_approver: PlanApprover | None,
        mcp: Any = None,
        data_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.store = store
        self.providers = dict(providers)
        self.permissions = permissions
        self.user_sink = sink
        self.plan_approver = plan_approver
        self.mcp = mcp
        self.data_dir = data_dir or store.path.parent
        self.status = _StatusTracker()
        self.permission_log: list[PermissionRecord] = []
        self.notices: list[str] = []
        self._store_sink: Sink = NullSink()
        self._reported_store_error = False
        self.checkpoints: CheckpointManager | None = None
        self.controller: Controller
        self._state: _SessionState
        self.started = time.monotonic()

    # -- building ---------------------------------------------------------------------------------

    @classmethod
    async def from_config(
        cls,
        config: Config,
        workspace: str | os.PathLike[str],
        *,
        store: SessionStore,
        approver: Approver | None = None,
        sink: Sink | None = None,
        resume_id: str | None = None,
        continue_last: bool = False,
        plan_approver: PlanApprover | None = None,
        environ: Mapping[str, str] | None = None,
        start_mcp: bool = True,
        provider_factory: Callable[[str, RoleConfig], Provider] | None = None,
    ) -> Runtime:
        """Build a runtime and open (or resume) a session. Starts configured MCP servers.

        ``approver`` answers the permission layer's questions (None: headless, "ask" becomes a
        denial); ``plan_approver`` answers plans that need approval. ``resume_id`` resumes that
        session, ``continue_last`` the latest one in ``workspace`` (a new one if none).
        Raises :class:`~reasonix.errors.ReasonixError` (e.g. an unknown session id).
        """
        ws = _resolve(workspace)
        providers: dict[str, Provider] = {}
        roles: list[tuple[str, RoleConfig]] = [("executor", config.executor)]
        if config.planner.enabled:
            roles.append(("planner", config.planner))
        for name, role in roles:
            if provider_factory is not None:
                providers[name] = provider_factory(name, role)
            else:
                providers[name] = _make_provider(config, role, environ)
        user_sink = sink or NullSink()
        runtime_ref: list[Runtime] = []

        def record(rec: PermissionRecord) -> None:
            if runtime_ref:
                runtime_ref[0].permission_log.append(rec)

        permissions = PermissionEngine(
            mode=config.permissions.mode,
            allow=config.permissions.allow,
            ask=config.permissions.ask,
            deny=config.permissions.deny,
            approver=approver,
            on_decision=record,
        )
        mcp = None
        skipped: list[ConfigError] = []
        servers = mcp_server_configs(config, ws, environ, skipped) if start_mcp else []
        for problem in skipped:
            user_sink.emit(
                NoticeEvent("mcp", "mcp_server_skipped", f"MCP server skipped: {problem}")
            )
        if servers:
            mcp = await _start_mcp(servers, store.path.parent, user_sink)
        runtime = cls(
            config,
            ws,
            store=store,
            providers=providers,
            permissions=permissions,
            sink=user_sink,
            plan_approver=plan_approver,
            mcp=mcp,
        )
        runtime_ref.append(runtime)
        target = resume_id
        if target is None and continue_last:
            target = store.latest_session(ws)
        try:
            if target is not None:
                runtime._open_existing(target)
            else:
                runtime._open_new()
        except BaseException:
            # e.g. an unknown session id: do not leave the MCP servers running.
            if mcp is not None:
                await mcp.aclose()
            raise
        return runtime

    def _registry(self) -> ToolRegistry:
        from reasonix.safety.sandbox import DEFAULT_READ_DENY, Sandbox
        from reasonix.tools.builtin import ShellOptions, default_tools

        ws = self.config.workspace
        roots = [self.workspace, *(self.workspace / Path(r).expanduser() for r in ws.roots)]
        # Configured patterns extend the built-in deny list; they never switch it off.
        sandbox = Sandbox(roots, read_deny=(*DEFAULT_READ_DENY, *ws.read_deny))
        # The variables our providers read their keys from never reach the model's commands,
        # whatever they are called.
        key_vars = sorted({p.api_key_env for p in self.config.providers.values() if p.api_key_env})
        shell = ShellOptions(secret_env=tuple(key_vars))
        tools = default_tools(
            self.workspace, sandbox=sandbox, checkpoints=self.checkpoints, shell_options=shell
        )
        registry = ToolRegistry(tools, policy=self.permissions)
        if self.mcp is not None:
            registry = registry.with_tools(self.mcp.tools())
        return registry

    def _report_store_error(self, message: str) -> None:
        if self._reported_store_error:
            return
        self._reported_store_error = True
        text = f"The session could not be saved: {message}. The conversation continues unsaved."
        self.notices.append(text)
        self.user_sink.emit(NoticeEvent("controller", "store_error", text))

    def _open_new(self) -> None:
        planner_model = self.config.planner.model if "planner" in self.providers else None
        sid = self.store.create_session(
            self.workspace,
            executor_model=self.config.executor.model,
            planner_model=planner_model,
        )
        self.store.claim(sid)
        self._attach(sid, {role: [] for role in ROLES}, [])

    def _open_existing(self, session_id: str) -> None:
        info = self.store.get_session(session_id)
        if info is None:
            raise SessionStoreError(
                f"no session {session_id!r}; list them with `reasonix sessions list`"
            )
        # Two writers would append at the same positions and overwrite each other's history.
        if not self.store.claim(session_id):
            raise SessionStoreError(
                f"session {session_id} is open in another reasonix process; finish it there "
                "first, or start a new session"
            )
        try:
            stored = {role: self.store.load_messages(session_id, role) for role in ROLES}
            marks = load_marks(self.store.load_events(session_id))
        except BaseException:
            if self._current_id() != session_id:
                self.store.release(session_id)
            raise
        self._attach(session_id, stored, marks)

    def _current_id(self) -> str | None:
        state = getattr(self, "_state", None)
        return state.session_id if state is not None else None

    def _attach(
        self, session_id: str, stored: dict[str, list[Message]], marks: list[TurnMark]
    ) -> None:
        previous = self._current_id()
        if previous is not None and previous != session_id:
            self.store.release(previous)
        sessions = {role: Session(f"{session_id}:{role}", stored[role]) for role in ROLES}
        self._state = _SessionState(session_id, sessions, list(marks))
        self._store_sink = _SafeStoreSink(self.store, session_id, self._report_store_error)
        self.checkpoints = CheckpointManager(
            self.workspace, store_dir=self.data_dir / "checkpoints" / session_id
        )
        self.controller = self._build_controller(sessions)
        # Attach to the sessions the controller actually holds (it may have made its own for an
        # empty one).
        live = {"executor": self.controller.executor.session}
        if self.controller.planner is not None:
            live["planner"] = self.controller.planner.session
        for role, session in live.items():
            sessions[role] = session
            loaded = list(stored[role])
            _SessionMirror(self.store, session_id, role, loaded, self._report_store_error).attach(
                session
            )
            self._follow_rewrites(self._state, self._store_sink, role, session)
            # Repairs are appends, so the prefix already sent stays byte-identical.
            for message in repair_messages(loaded):
                session.add(message)
        if marks:
            # Continue the executor's turn numbering so new checkpoints do not collide.
            self.controller.executor.turn = max(m.agent_turn for m in marks) + 1

    @staticmethod
    def _follow_rewrites(state: _SessionState, sink: Sink, role: str, session: Session) -> None:
        """Keep the turn marks pointing at the same turns when a compaction (or a planner
        rollback) rewrites ``role``'s conversation, and record the change."""
        shadow = list(session.snapshot())

        def on_append(s: Session, index: int, message: Message) -> None:
            if index == len(shadow):
                shadow.append(message)
            else:
                shadow[:] = s.snapshot()

        def on_rewrite(s: Session, reason: str) -> None:
            old, new = tuple(shadow), s.snapshot()
            shadow[:] = new
            if reason == "rewind":
                return  # Runtime.rewind updates the marks itself
            marks = remap_marks(state.marks, role, old, new)
            if marks != state.marks:
                state.marks[:] = marks
                sink.emit(TurnMarksReset("controller", tuple(marks)))

        session.on_append(on_append)
        session.on_rewrite(on_rewrite)

    def _build_controller(self, sessions: dict[str, Session]) -> Controller:
        cfg = self.config
        memory = self._memory()

        def role_options(role: RoleConfig, system_prompt: str, max_steps: int) -> AgentOptions:
            thinking, effort = effort_options(role)
            return AgentOptions(
                system_prompt=system_prompt_with_memory(system_prompt, memory),
                compaction_threshold=cfg.compaction.threshold,
                compaction_keep_turns=cfg.compaction.keep_recent_turns,
                model=role.model,
                thinking=thinking,
                reasoning_effort=effort,
                max_steps=max_steps,
                prices=cfg.model_info(role.model).prices,
                workspace=self.workspace,
            )

        executor_options = role_options(cfg.executor, DEFAULT_SYSTEM_PROMPT, cfg.executor.max_steps)
        planner_options = None
        if "planner" in self.providers:
            planner_options = role_options(cfg.planner, PLANNER_SYSTEM_PROMPT, 12)
        orchestration = OrchestratorOptions(
            gate=GateOptions(mode=cfg.planner.gate, threshold=cfg.planner.gate_threshold),
            max_replans=cfg.planner.max_replans,
            stall_rounds=cfg.planner.stall_rounds,
            approver=self.plan_approver,
            max_cost_usd=cfg.budget.max_session_usd or None,
        )
        sink = FanoutSink([self._store_sink, self.status, self.user_sink])
        controller = Controller(
            Options(
                executor_provider=self.providers["executor"],
                planner_provider=self.providers.get("planner"),
                tool_registry=self._registry(),
                executor_options=executor_options,
                planner_options=planner_options,
                sink=sink,
                orchestration=orchestration,
                executor_session=sessions["executor"],
                planner_session=sessions["planner"],
            )
        )
        controller.executor.tool_state["checkpoints"] = self.checkpoints
        return controller

    def _memory(self) -> str:
        """REASONIX.md / AGENTS.md for a new session's system prompt (a resumed session keeps
        the system prompt it was stored with, so its prefix does not change)."""
        from reasonix.config import user_config_path

        try:
            files = find_memory_files(self.workspace, user_config_path().parent)
            return load_memory(files)
        except OSError:
            return ""

    # -- properties -------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._state.session_id

    @property
    def marks(self) -> list[TurnMark]:
        """Where each user turn of this session started (oldest first)."""
        return list(self._state.marks)

    @property
    def mode(self) -> str:
        return self.permissions.mode.value

    def model_of(self, role: str) -> str | None:
        if role == "executor":
            return self.config.executor.model
        if role == "planner" and "planner" in self.providers:
            return self.config.planner.model
        return None

    def context_use(self) -> list[ContextUse]:
        """Per role, the last prompt size against the model's context window."""
        out = []
        for role in ROLES:
            model = self.model_of(role)
            if model is None:
                continue
            window = self.config.model_info(model).context_window
            out.append(ContextUse(role, model, self.status.last_prompt.get(role, 0), window))
        return out

    # -- turns ------------------------------------------------------------------------------------

    async def run_turn(
        self, text: str, *, plan: bool | None = None, plan_only: bool = False
    ) -> TurnOutcome:
        """Run one user turn and report what the permission layer refused in it."""
        ctrl = self.controller
        planner_len = len(ctrl.planner.session) if ctrl.planner is not None else 0
        mark = TurnMark(
            len(self._state.marks) + 1,
            len(ctrl.executor.session),
            planner_len,
            ctrl.executor.turn,
            text[:200],
        )
        self._state.marks.append(mark)
        self._store_sink.emit(
            TurnMarked(
                "controller",
                mark.turn,
                mark.executor_len,
                mark.planner_len,
                mark.agent_turn,
                mark.text,
            )
        )
        if mark.turn == 1 and not self._has_title():
            self._set_title(text)
        log_start = len(self.permission_log)
        requests_before = self.status.requests
        began = time.monotonic()
        result = await ctrl.run_turn(text, plan=plan, plan_only=plan_only)
        return self._outcome(result, log_start, requests_before, began)

    async def execute_pending_plan(self) -> TurnOutcome:
        """Run a plan kept by ``plan_only`` or a declined approval."""
        log_start = len(self.permission_log)
        requests_before = self.status.requests
        began = time.monotonic()
        result = await self.controller.execute_pending_plan()
        return self._outcome(result, log_start, requests_before, began)

    def _outcome(
        self, result: TurnResult, log_start: int, requests_before: int, began: float
    ) -> TurnOutcome:
        records = self.permission_log[log_start:]
        denials = tuple(r for r in records if not r.allowed)
        refused = result.stop_reason == "plan_declined"
        for i, rec in enumerate(records):
            if rec.allowed:
                continue
            later = records[i + 1 :]
            if not any(r.allowed and (r.tool, r.subject) == (rec.tool, rec.subject) for r in later):
                refused = True
        status = "error" if result.stop_reason == "error" else "active"
        try:
            self.store.set_status(self.session_id, status)
        except SessionStoreError as exc:
            self._report_store_error(str(exc))
        return TurnOutcome(
            result,
            denials,
            refused,
            int((time.monotonic() - began) * 1000),
            self.status.requests - requests_before,
        )

    def _has_title(self) -> bool:
        info = self.store.get_session(self.session_id)
        return bool(info and info.title)

    def _set_title(self, text: str) -> None:
        title = " ".join(text.split())[:80]
        try:
            self.store.set_title(self.session_id, title)
        except SessionStoreError as exc:
            self._report_store_error(str(exc))

    # -- slash-command behaviour ------------------------------------------------------------

    def set_mode(self, mode: str | None = None) -> str:
        """Change the permission mode (``ask``, ``auto-edit``, ``plan``, ``yolo``); with no
        argument, describe the current one. Raises ConfigError for an unknown mode."""
        if mode:
            self.permissions.mode = mode
            return f"Permission mode: {self.permissions.mode.value}"
        return f"Permission mode: {self.permissions.mode.value} (ask | auto-edit | plan | yolo)"

    def cost_table(self) -> str:
        """Per-role table for this run; plus the stored totals when resuming added earlier
        runs of the same session."""
        table = format_cost_table(self.controller.cost.snapshot())
        stored = self.store.usage_summary(self.session_id)
        here = self.controller.cost.snapshot()
        if sum(t.requests for t in stored.values()) > sum(c.requests for c in here.values()):
            whole = {k: RoleCost(v.requests, v.usage, v.cost) for k, v in stored.items()}
            table += "\n\nWhole session (all runs):\n" + format_cost_table(whole)
        return table

    def cost_by_role(self) -> dict[str, RoleCost]:
        return self.controller.cost.snapshot()

    def todo(self) -> str:
        """The executor's todo list (and a pending plan, if any)."""
        todo = self.controller.executor.todo_state
        text = todo.render() if len(todo) else "The todo list is empty."
        pending = self.controller.pending_plan
        if pending is not None:
            text += "\n\nA plan is waiting for approval:\n" + pending.to_markdown()
        return text

    def sessions(self, limit: int = 20) -> list[SessionInfo]:
        """This workspace's sessions, most recent first."""
        return self.store.list_sessions(self.workspace, limit=limit)

    def rewind(self, turn: int | None = None) -> str:
        """Undo user turn ``turn`` and everything after it (default: the last turn): restore
        the files the tools changed and cut both conversations back to where it started."""
        marks = self._state.marks
        if not marks:
            return "Nothing to rewind: no turn has run in this session."
        target = marks[-1] if turn is None else next((m for m in marks if m.turn == turn), None)
        if target is None:
            return f"No turn {turn}; turns run so far: 1..{marks[-1].turn}."
        ctrl = self.controller
        if target.executor_len < 0 or target.planner_len < 0:
            which = "executor's" if target.executor_len < 0 else "planner's"
            kept = [m.turn for m in marks if m.executor_len >= 0 and m.planner_len >= 0]
            can = f" Turns that can be rewound: {', '.join(map(str, kept))}." if kept else ""
            return (
                f"Turn {target.turn} cannot be rewound: the {which} conversation was compacted "
                f"since, and that turn now lives only in its summary. Nothing was changed.{can}"
            )
        lines = []
        if self.checkpoints is not None:
            lines.append(str(self.checkpoints.rewind(target.agent_turn + 1)))
        ex = ctrl.executor.session
        ex.rewrite(ex.snapshot()[: target.executor_len], reason="rewind")
        if ctrl.planner is not None:
            pl = ctrl.planner.session
            pl.rewrite(pl.snapshot()[: target.planner_len], reason="rewind")
        ctrl.executor.seed_todo_state([])
        del marks[marks.index(target) :]
        self._store_sink.emit(TurnMarksReset("controller", tuple(marks)))
        lines.append(
            f"Rewound to before turn {target.turn} ({target.text[:60]!r}); the conversation "
            "continues from there."
        )
        return "\n".join(line for line in lines if line)

    async def clear(self) -> str:
        """Start a new session (the old one stays in the store)."""
        if self.mcp is not None:
            await self.mcp.refresh_snapshot()
        old = self.session_id
        self._open_new()
        return f"New session {self.session_id} (previous: {old}; /resume {old} to go back)."

    async def resume(self, session_id: str) -> str:
        """Switch to a stored session (both roles)."""
        self._open_existing(session_id)
        counts = {r: len(s) for r, s in self._state.sessions.items()}
        return (
            f"Resumed {session_id}: {counts['executor']} executor and {counts['planner']} "
            "planner messages."
        )

    async def compact(self) -> str:
        """``/compact``: summarise the executor's older history now."""
        out = await self.controller.executor.compact()
        if out.accepted:
            return (
                f"Compacted the executor's history: {out.messages_before} -> "
                f"{out.messages_after} messages."
            )
        return f"Not compacted: {out.reason}"

    def mcp_status(self) -> list[str]:
        if self.mcp is None:
            return ["No MCP servers are configured ([[mcp.servers]] in reasonix.toml)."]
        return [s.line() for s in self.mcp.status()]

    async def mcp_restart(self, name: str) -> str:
        if self.mcp is None:
            return "No MCP servers are configured."
        try:
            status = await self.mcp.restart(name)
        except (KeyError, ValueError, ReasonixError) as exc:
            return str(exc)
        return str(status.line())

    async def aclose(self) -> None:
        """Stop MCP servers, release the providers' connections and the session's claim."""
        try:
            if self.mcp is not None:
                await self.mcp.aclose()
            await self.controller.aclose()
        finally:
            current = self._current_id()
            if current is not None:
                self.store.release(current)


def _resolve(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace).resolve()


def _make_provider(config: Config, role: RoleConfig, environ: Mapping[str, str] | None) -> Provider:
    from reasonix.providers.openai_compat import OpenAICompatProvider

    pc = config.provider_for(role)
    api_key = pc.api_key(environ) if environ is not None else None
    return OpenAICompatProvider(
        base_url=pc.base_url,
        model=role.model,
        api_key=api_key,
        api_key_env=pc.api_key_env or None,
        info=config.model_info(role.model),
        headers=dict(pc.headers),
        extra_body=dict(pc.extra_body),
    )


def mcp_entries(config: Config) -> list[dict[str, Any]]:
    """``[[mcp.servers]]`` from the config as the plain TOML-shaped tables the MCP layer parses
    (the config freezes them into tuples and read-only mappings)."""

    def thaw(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): thaw(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [thaw(v) for v in value]
        return value

    return [thaw(server) for server in config.mcp.servers]


def mcp_server_configs(
    config: Config,
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    skipped: list[ConfigError] | None = None,
) -> list[McpServerConfig]:
    """Every configured MCP server: ``[[mcp.servers]]`` from the TOML config, then the entries
    of the project's ``.mcp.json`` (the format other agents use). A name defined in both keeps
    the TOML definition. An unusable ``.mcp.json`` entry is reported through ``skipped`` (when
    given) instead of stopping start-up. Our providers' API-key variables are withheld from the
    servers' environment. Imports nothing of the MCP SDK."""
    from reasonix.mcp import servers_from_mcp_json, servers_from_toml

    servers = servers_from_toml(mcp_entries(config), "reasonix.toml", environ=environ)
    names = {s.name for s in servers}
    project = servers_from_mcp_json(workspace / ".mcp.json", environ=environ, skipped=skipped)
    servers += [s for s in project if s.name not in names]
    keys = tuple(sorted({p.api_key_env for p in config.providers.values() if p.api_key_env}))
    return [dataclasses.replace(s, withheld_env=keys) for s in servers]


async def _start_mcp(servers: list[McpServerConfig], data_dir: Path, sink: Sink) -> Any:
    from reasonix.mcp import McpManager

    manager = McpManager(servers, data_dir / "mcp-logs", sink)
    await manager.start()
    return manager
