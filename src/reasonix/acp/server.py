"""The ACP agent: each protocol method answered by calling the session façade.

One :class:`ReasonixAcpAgent` serves one editor connection; it may hold several open sessions
(one :class:`~reasonix.app.AgentSession` each, keyed by our stored session id, which is also the
ACP session id, so ``session/load`` and ``session/list`` work over the store).

The client's file-system and terminal capabilities are not used: our own tools read, write and
run commands inside the workspace under our permission engine and sandbox (the protocol's next
version drops those capabilities). Approvals are the one thing we ask the client for, through
``session/request_permission``, and, for a client that shows forms, the model's questions
(``elicitation/create``, :mod:`reasonix.acp.questions`).

This module runs past 500 lines because it is the whole protocol surface, one short method per
ACP request plus the prompt, command and approval paths; the event translation, which is pure,
lives in :mod:`reasonix.acp.updates`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from acp import RequestError, schema

from reasonix._version import __version__
from reasonix.acp.questions import FormAsker
from reasonix.acp.updates import UpdateMapper, stop_reason_for
from reasonix.app import commands
from reasonix.app.approvals import ApprovalChoice, ApprovalRequested, PlanApprovalRequested
from reasonix.app.host import SessionHost
from reasonix.app.shell import shell_command
from reasonix.errors import ReasonixError, StartupError
from reasonix.fences import code_fence
from reasonix.messages import AssistantMessage, ToolMessage, UserMessage
from reasonix.safety.permissions import MODE_HELP
from reasonix.tools.ask import describe_questions

if TYPE_CHECKING:
    from acp.interfaces import Agent, Client

    from reasonix.app.commands import Answer
    from reasonix.app.launch import Launch
    from reasonix.app.session import AgentSession
    from reasonix.mcp import McpServerConfig
    from reasonix.messages import ImagePart
    from reasonix.tools.registry import Tool

__all__ = ["MODES", "ReasonixAcpAgent", "available_commands"]

log = logging.getLogger("reasonix.acp")

#: (id, name, description) of each permission mode, from the one list (``MODE_HELP``).
MODES: tuple[tuple[str, str, str], ...] = tuple(
    (mode.value, name, text) for mode, (name, text) in MODE_HELP.items()
)

#: The one authentication method: an API key in the environment.
AUTH_METHOD = "deepseek-api-key"


def available_commands(session: AgentSession) -> list[schema.AvailableCommand]:
    """What an editor offers: the one table's commands meaningful over ACP (their usage as
    the input hint), then the session's custom commands."""

    def hint(text: str) -> schema.AvailableCommandInput | None:
        unstructured = schema.UnstructuredCommandInput(hint=text)
        return schema.AvailableCommandInput(root=unstructured) if text else None

    offered = [
        schema.AvailableCommand(name=c.name, description=c.help, input=hint(c.args))
        for c in commands.listing("acp")
    ]
    offered += [
        schema.AvailableCommand(
            name=name,
            description=custom.description or "custom command",
            input=hint(custom.argument_hint),
        )
        for name, custom in session.commands.items()
    ]
    return offered


def _tool_finder(session: AgentSession) -> Callable[[str], Tool | None]:
    """A tool of the session by name: the executor's (deferred ones too), then the planner's
    (``submit_plan``)."""
    ctrl = session.controller

    def find(name: str) -> Tool | None:
        found = ctrl.executor.tools.get(name)
        if found is None and ctrl.planner is not None:
            found = ctrl.planner.tools.get(name)
        return found

    return find


def _error(message: str, code: int = -32602) -> RequestError:
    """A JSON-RPC error whose message is ours (what to fix), not a generic one."""
    return RequestError(code, message, {"source": "reasonix"})


@dataclass
class _Open:
    """The editor's side of one open session (the session itself is the host's)."""

    session: AgentSession
    mapper: UpdateMapper
    turn_task: asyncio.Task[Any] | None = None
    asks: set[asyncio.Task[None]] = field(default_factory=set)


class ReasonixAcpAgent:
    """Implements the agent side of ACP v1 (see the module docstring).

    ``started`` is the one start-up (:mod:`reasonix.app.launch`): the session database, the
    environment with the keys held, and each workspace's configuration (the command line's
    flags and the folder-trust rules, the same as for ``reasonix run``)."""

    def __init__(self, started: Launch) -> None:
        self._started = started
        self._environ = started.environ
        #: the open sessions, by id (opening, resuming and closing them)
        self.host = SessionHost(started)
        self._conn: Client | None = None
        self._open: dict[str, _Open] = {}
        #: the client shows forms (``elicitation/create``): the model's questions go there
        self._forms = False

    # -- connection -------------------------------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        if self._conn is None:
            raise _error("the ACP connection is not established yet", -32603)
        return self._conn

    async def aclose(self) -> None:
        """Interrupt running turns and close every session (MCP servers, store locks)."""
        self.host.interrupt_all()
        for opened in list(self._open.values()):
            if opened.turn_task is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(opened.turn_task, 10)
        await self.host.aclose()
        self._open.clear()

    # -- ACP methods ------------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        from acp import PROTOCOL_VERSION

        name = client_info.name if client_info is not None else "unknown"
        elicitation = client_capabilities.elicitation if client_capabilities else None
        self._forms = elicitation is not None and elicitation.form is not None
        log.info("client %s asks for protocol %s", name, protocol_version)
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=False),
                session_capabilities=schema.SessionCapabilities(
                    list=schema.SessionListCapabilities()
                ),
            ),
            agent_info=schema.Implementation(
                name="reasonix", title="reasonix", version=__version__
            ),
            auth_methods=[
                schema.EnvVarAuthMethod(
                    type="env_var",
                    id=method,
                    name=f"{provider} API key",
                    description=f"The API key of the {provider} provider, read from {var}",
                    vars=[schema.AuthEnvVar(name=var, secret=True)],
                )
                for method, (provider, var) in self._auth_methods().items()
            ],
        )

    def _auth_methods(self) -> dict[str, tuple[str, str]]:
        """One method per key variable the configured roles' providers read (the start
        folder's configuration; DeepSeek's default variable without one)."""
        config = self._started.config
        if config is None:
            return {AUTH_METHOD: ("deepseek", "DEEPSEEK_API_KEY")}
        methods: dict[str, tuple[str, str]] = {}
        roles = [config.executor, config.planner]
        for role in roles:
            if role is None or not getattr(role, "model", ""):
                continue
            provider = config.providers.get(role.provider)
            if provider is None or not provider.api_key_env:
                continue
            if all(var != provider.api_key_env for _, var in methods.values()):
                methods[f"{provider.name}-api-key"] = (provider.name, provider.api_key_env)
        return methods or {AUTH_METHOD: ("deepseek", "DEEPSEEK_API_KEY")}

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse:
        """The key comes from the environment the editor starts us with; this only checks it
        is there (sessions check the variable their own config names)."""
        methods = self._auth_methods()
        if method_id not in methods:
            known = ", ".join(repr(m) for m in methods)
            raise _error(f"unknown authentication method {method_id!r}; use {known}")
        var = methods[method_id][1]
        if not (self._environ or os.environ).get(var):
            raise _error(
                f"{var} is not set in the environment the editor started reasonix "
                "with; set it there (or name another variable in [[providers]] api_key_env)",
                -32000,
            )
        return schema.AuthenticateResponse()

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> schema.NewSessionResponse:
        opened = await self._open_session(cwd, mcp_servers or (), resume_id=None)
        sid = opened.session.session_id
        asyncio.get_running_loop().call_soon(self._announce_commands, sid)
        return schema.NewSessionResponse(
            session_id=sid,
            modes=self._modes(opened.session),
            config_options=self._model_options(opened.session),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> schema.LoadSessionResponse:
        if session_id in self._open:
            opened = self._open[session_id]
        else:
            opened = await self._open_session(cwd, mcp_servers or (), resume_id=session_id)
        await self._replay(opened)
        self._announce_commands(session_id)
        return schema.LoadSessionResponse(
            modes=self._modes(opened.session),
            config_options=self._model_options(opened.session),
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        infos = self.host.list(cwd or None, limit=100)
        sessions = [
            schema.SessionInfo(
                session_id=info.id,
                cwd=str(info.workspace),
                title=info.title or None,
                updated_at=_iso(info.updated_at),
            )
            for info in infos
        ]
        return schema.ListSessionsResponse(sessions=sessions)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        opened = self._get(session_id)
        try:
            opened.session.set_mode(mode_id)
        except ReasonixError as exc:
            raise _error(str(exc)) from None
        await self._send(
            session_id,
            schema.CurrentModeUpdate(
                session_update="current_mode_update", current_mode_id=opened.session.mode
            ),
        )
        return schema.SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> schema.SetSessionConfigOptionResponse:
        """The editor's model picker: ``model.ROLE`` switches that role's model, as ``/model``
        does (the same façade call), and the reply says what the switch costs."""
        opened = self._get(session_id)
        role = config_id.removeprefix("model.")
        if not config_id.startswith("model.") or role not in commands.ROLES:
            raise _error(
                f"unknown config option {config_id!r}; use model.executor or model.planner"
            )
        try:
            note = opened.session.switch_model(role, str(value))
        except ReasonixError as exc:
            raise _error(f"reasonix: {exc}") from None
        await self._say(session_id, note)
        return schema.SetSessionConfigOptionResponse(
            config_options=self._model_options(opened.session)
        )

    @staticmethod
    def _model_options(session: AgentSession) -> list[Any]:
        """A model picker per role (the models the configuration knows prices for)."""
        known = sorted(session.config.model_infos)
        options: list[Any] = []
        for role in commands.ROLES:
            current = session.model_of(role)
            if not current:
                continue
            names = known if current in known else [current, *known]
            options.append(
                schema.SessionConfigOptionSelect(
                    type="select",
                    id=f"model.{role}",
                    name=f"{role.capitalize()} model",
                    description=f"the model the {role} runs on (a switch starts a new cache)",
                    category="model",
                    current_value=current,
                    options=[schema.SessionConfigSelectOption(value=n, name=n) for n in names],
                )
            )
        return options

    async def prompt(
        self, session_id: str, prompt: Sequence[Any], **kwargs: Any
    ) -> schema.PromptResponse:
        opened = self._get(session_id)
        if opened.turn_task is not None and not opened.turn_task.done():
            raise _error("a prompt is already running in this session; cancel it first")
        text, typed = _prompt_text(prompt), _typed_text(prompt)
        images = _prompt_images(prompt)
        if not text.strip() and not images:
            raise _error("the prompt is empty")
        task = asyncio.create_task(self._run_prompt(opened, text, images, typed))
        opened.turn_task = task
        try:
            return await task
        finally:
            opened.turn_task = None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        opened = self._open.get(session_id)
        if opened is None:
            return
        opened.session.interrupt()
        for ask in list(opened.asks):
            ask.cancel()

    # -- prompts ----------------------------------------------------------------------------------

    async def _run_prompt(
        self,
        opened: _Open,
        text: str,
        images: tuple[ImagePart, ...] = (),
        typed: str | None = None,
    ) -> schema.PromptResponse:
        session = opened.session
        sid = session.session_id
        command = shell_command(typed if typed is not None else text)
        if command is not None:
            return await self._shell(opened, command)
        answer = await self._command(opened, text, images, typed)
        if answer is not None and answer.turn is None:
            return schema.PromptResponse(stop_reason="end_turn")
        try:
            if answer is not None and answer.turn is not None:
                turn = answer.turn(session)
            else:
                turn = session.start_turn(text, images=images, request=typed)
        except ReasonixError as exc:
            await self._say(sid, f"reasonix: {exc}")
            return schema.PromptResponse(stop_reason="end_turn")
        async for event in turn:
            if isinstance(event, ApprovalRequested | PlanApprovalRequested):
                ask = asyncio.create_task(self._ask(opened, event))
                opened.asks.add(ask)
                ask.add_done_callback(opened.asks.discard)
                continue
            for update in opened.mapper.updates(event):
                await self._send(sid, update)
        outcome = await turn.result()
        for ask in list(opened.asks):
            ask.cancel()
        closing = opened.mapper.closing_usage()
        if closing is not None:
            await self._send(sid, closing)
        if outcome.closing:
            await self._say(sid, "\n\n" + outcome.closing)
        stop = stop_reason_for(outcome.result.stop_reason, outcome.interrupted)
        if outcome.is_error:
            await self._say(sid, f"\n\nreasonix: {outcome.result.text}")
        questions = session.pending_questions()
        if questions:
            # No form to show them in: the questions end the turn, and the next prompt is
            # delivered as their answer.
            lines = ["The model asks:", *describe_questions(questions)]
            lines.append("Reply with your answer (a number, a label or your own words).")
            await self._say(sid, "\n\n" + "\n".join(lines))
        return schema.PromptResponse(
            stop_reason=stop,
            usage=opened.mapper.prompt_usage(),
            field_meta={
                "reasonix": {
                    "stop_reason": outcome.result.stop_reason,
                    "route": str(outcome.result.route),
                    "refused": outcome.refused,
                    "questions": questions,
                }
            },
        )

    async def _shell(self, opened: _Open, command: str) -> schema.PromptResponse:
        """``!command``: the user's own shell command (``session.shell``, the bash tool's path:
        rules, hooks, snapshot, sandbox; its approval question asked in the editor); its
        output is said and joins the next prompt, no model request is made."""
        session = opened.session
        sid = session.session_id
        try:
            running = session.shell.start(command)
        except (ReasonixError, ValueError) as exc:
            await self._say(sid, f"reasonix: {exc}")
            return schema.PromptResponse(stop_reason="end_turn")
        async for event in running:
            if isinstance(event, ApprovalRequested):
                ask = asyncio.create_task(self._ask(opened, event))
                opened.asks.add(ask)
                ask.add_done_callback(opened.asks.discard)
        run = await running.result()
        for ask in list(opened.asks):
            ask.cancel()
        if run.interrupted:
            await self._say(sid, f"$ {run.command}\nStopped; nothing joins the next message.")
            return schema.PromptResponse(stop_reason="cancelled")
        said = f"$ {run.command}\n{code_fence(run.output.rstrip(), 'text')}"
        if run.queued:
            said += "\n\n(the output joins your next message; no request was sent)"
        await self._say(sid, said)
        return schema.PromptResponse(
            stop_reason="end_turn",
            field_meta={"reasonix": {"shell": command, "refused": run.refused}},
        )

    async def _command(
        self,
        opened: _Open,
        line: str,
        images: tuple[ImagePart, ...] = (),
        typed: str | None = None,
    ) -> Answer | None:
        """A slash command, answered from the one table (:mod:`reasonix.app.commands`): its
        reply is said; None when ``line`` is a task, not a command. ``typed``: the user's
        words of the prompt (the embedded files are data to auto mode's reviewer)."""
        session = opened.session
        if not commands.is_command(session, line, "acp"):
            return None
        mode = session.mode
        answer = await commands.answer(session, line, "acp", images=images, request=typed)
        if session.mode != mode:
            update = schema.CurrentModeUpdate(
                session_update="current_mode_update", current_mode_id=session.mode
            )
            await self._send(session.session_id, update)
        if answer.text:
            await self._say(session.session_id, answer.text)
        return answer

    async def _ask(self, opened: _Open, event: ApprovalRequested | PlanApprovalRequested) -> None:
        """One approval question as ``session/request_permission``; the answer goes back to the
        façade. A cancelled or failed request denies."""
        session = opened.session
        if isinstance(event, PlanApprovalRequested):
            tool_call = schema.ToolCallUpdate(
                tool_call_id=f"plan:{event.id}",
                title="Approve the planner's plan",
                kind="think",
                status="pending",
                content=[
                    schema.ContentToolCallContent(
                        type="content",
                        content=schema.TextContentBlock(type="text", text=event.markdown),
                    )
                ],
            )
            always = "Approve"
        else:
            tool_call = opened.mapper.call_for_approval(
                event.tool, event.arguments, event.subject, event.reason, event.preview
            )
            rules = ", ".join(event.session_rules)
            always = (
                f"Allow for this session ({rules})"
                if rules
                else "Allow once (no rule covers exactly this for the session)"
            )
        options = [
            schema.PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
            schema.PermissionOption(option_id="allow_session", name=always, kind="allow_always"),
            schema.PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
        ]
        choice: ApprovalChoice = "deny"
        reason = ""
        try:
            answer = await self.conn.request_permission(
                session_id=session.session_id, tool_call=tool_call, options=options
            )
            outcome = answer.outcome
            if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id in (
                "allow_once",
                "allow_session",
            ):
                choice = "allow_once" if outcome.option_id == "allow_once" else "allow_session"
            else:
                reason = "rejected in the editor"
        except asyncio.CancelledError:
            return
        except Exception as exc:  # a broken client must not hang the turn
            log.warning("request_permission failed: %s", exc)
            reason = f"the editor could not be asked ({exc})"
        with contextlib.suppress(ReasonixError):
            session.answer_approval(event.id, choice, reason)

    # -- helpers ----------------------------------------------------------------------------------

    def _get(self, session_id: str) -> _Open:
        opened = self._open.get(session_id)
        if opened is None:
            raise _error(f"no open session {session_id!r}; call session/new or session/load first")
        return opened

    async def _open_session(
        self, cwd: str, mcp_servers: Sequence[Any], *, resume_id: str | None
    ) -> _Open:
        workspace = Path(cwd)
        if not workspace.is_absolute() or not await asyncio.to_thread(workspace.is_dir):
            raise _error(f"cwd must be an absolute path to a folder, got {cwd!r}")
        ids: list[str] = []
        asker = FormAsker(self.conn, lambda: ids[0]) if self._forms else None
        try:
            session = await self.host.open(
                workspace,
                resume_id=resume_id,
                extra_mcp_servers=_client_mcp_servers(mcp_servers),
                asker=asker,
            )
        except StartupError as exc:  # the folder's configuration or credentials
            raise _error(f"reasonix: {exc}", -32000) from None
        except ReasonixError as exc:
            raise _error(f"reasonix: {exc}") from None
        ids.append(session.session_id)
        info = session.config.model_info(session.config.executor.model)
        mapper = UpdateMapper(
            workspace=session.workspace,
            context_window=info.context_window,
            cost=session.usage.cost,
            tools=_tool_finder(session),
        )
        opened = _Open(session, mapper)
        self._open[session.session_id] = opened
        for notice in session.notices:
            log.info("%s", notice)
        return opened

    @staticmethod
    def _modes(session: AgentSession) -> schema.SessionModeState:
        return schema.SessionModeState(
            current_mode_id=session.mode,
            available_modes=[
                schema.SessionMode(id=mid, name=name, description=desc) for mid, name, desc in MODES
            ],
        )

    def _announce_commands(self, session_id: str) -> None:
        update = schema.AvailableCommandsUpdate(
            session_update="available_commands_update",
            available_commands=available_commands(self._get(session_id).session),
        )
        task = asyncio.ensure_future(self._send(session_id, update))
        task.add_done_callback(_log_failure)

    async def _replay(self, opened: _Open) -> None:
        """``session/load``: the stored conversation, streamed back as updates."""
        sid = opened.session.session_id
        messages = opened.session.controller.executor.session.snapshot()
        for message in messages:
            if isinstance(message, UserMessage):
                await self._send(
                    sid,
                    schema.UserMessageChunk(
                        session_update="user_message_chunk",
                        content=schema.TextContentBlock(type="text", text=message.content),
                    ),
                )
            elif isinstance(message, AssistantMessage):
                if message.content:
                    await self._say(sid, message.content)
                for call in message.tool_calls:
                    for update in opened.mapper.updates(_replayed_call(call)):
                        await self._send(sid, update)
            elif isinstance(message, ToolMessage):
                for update in opened.mapper.updates(_replayed_result(message)):
                    await self._send(sid, update)

    async def _say(self, session_id: str, text: str) -> None:
        await self._send(
            session_id,
            schema.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=schema.TextContentBlock(type="text", text=text),
            ),
        )

    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("sending an update failed: %s", task.exception())


def _replayed_call(call: Any) -> Any:
    from reasonix.events import ToolCallEvent

    return ToolCallEvent("executor", call)


def _replayed_result(message: ToolMessage) -> Any:
    from reasonix.events import ToolResultEvent

    return ToolResultEvent(
        "executor", message.tool_call_id, message.name, message.content, message.is_error
    )


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        from datetime import UTC, datetime

        return datetime.fromtimestamp(value, UTC).isoformat()
    return str(value)


def _prompt_images(blocks: Sequence[Any]) -> tuple[ImagePart, ...]:
    """A prompt's image blocks as image parts of the turn (format told from the bytes, not the
    declared MIME type); one DeepSeek would refuse is an error that says why, before anything
    is sent."""
    import base64
    import binascii

    from reasonix.images import ImageError, load_image

    images = []
    for i, block in enumerate(blocks):
        if not isinstance(block, schema.ImageContentBlock):
            continue
        what = f"image block {i + 1}" + (f" ({block.uri})" if block.uri else "")
        try:
            data = base64.b64decode(block.data, validate=True)
            name = _uri_path(block.uri).rsplit("/", 1)[-1] if block.uri else ""
            images.append(load_image(data, name=name, what=what))
        except (binascii.Error, ValueError) as exc:
            if isinstance(exc, ImageError):
                raise _error(f"{exc}; nothing was sent") from None
            raise _error(f"{what}: its data is not base64; nothing was sent") from None
    return tuple(images)


def _typed_text(blocks: Sequence[Any]) -> str:
    """What the user wrote of a prompt (its text and ``@path`` mentions, without the embedded
    files' content): auto mode's reviewer reads only this as the user's request."""
    return _prompt_text(
        [b for b in blocks if not isinstance(b, schema.EmbeddedResourceContentBlock)]
    )


def _prompt_text(blocks: Sequence[Any]) -> str:
    """A prompt's content blocks as one user message: text as is; a linked or embedded file as
    an ``@path`` mention or attached text (images ride apart: :func:`_prompt_images`; audio is
    not offered in our capabilities)."""
    parts: list[str] = []
    attached: list[str] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(f"@{_uri_path(block.uri)}")
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, schema.TextResourceContents):
                attached.append(f'<attached uri="{resource.uri}">\n{resource.text}\n</attached>')
    text = " ".join(p for p in parts if p)
    if attached:
        text += "\n\n" + "\n\n".join(attached)
    return text


def _uri_path(uri: str) -> str:
    return uri[len("file://") :] if uri.startswith("file://") else uri


def _client_mcp_servers(servers: Sequence[Any]) -> list[McpServerConfig]:
    """The editor's MCP servers (they come from the user's editor settings) as ours; an SSE
    server, which we do not speak, is skipped with a log line."""
    from reasonix.mcp import McpServerConfig

    out: list[McpServerConfig] = []
    for server in servers:
        if isinstance(server, schema.McpServerStdio):
            out.append(
                McpServerConfig(
                    name=server.name,
                    command=server.command,
                    args=tuple(server.args),
                    env={e.name: e.value for e in server.env},
                    source="ACP client",
                )
            )
        elif isinstance(server, schema.HttpMcpServer):
            out.append(
                McpServerConfig(
                    name=server.name,
                    url=server.url,
                    headers={h.name: h.value for h in server.headers},
                    source="ACP client",
                )
            )
        else:
            log.warning("MCP server %s skipped: only stdio and http are supported", server)
    return out


async def serve(started: Launch, *, protocol_out: Any) -> None:
    """Speak ACP on stdin and ``protocol_out`` until the client closes stdin. ``started`` is
    the start-up (:func:`reasonix.app.launch.launch`): store, held keys, configuration."""
    import sys

    from acp import run_agent

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, protocol_out
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = ReasonixAcpAgent(started)
    try:
        # The SDK's Agent protocol lists every method, optional and unstable ones included;
        # its router looks handlers up by name and answers "method not found" for the rest.
        await run_agent(cast("Agent", agent), writer, reader)
    finally:
        await agent.aclose()
