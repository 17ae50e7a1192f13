"""The MCP manager: runs configured servers and exposes their tools as reasonix tools.

See the package docstring (:mod:`reasonix.mcp`) for the design; this module holds the machinery.
The MCP SDK is imported inside functions only, when a server is actually started.

It runs past 500 lines because one server's life is one state machine shared by every method
here: start-up, the background task that owns the SDK session, the snapshot of tools taken when
start-up settles, restarts, ``tools/list_changed`` and the routing of calls all read and write
the same per-server record under the same rules (cancel scopes left by the task that entered
them). The pure parts are apart: configuration in :mod:`~reasonix.mcp.config`, schema and result
conversion in :mod:`~reasonix.mcp.convert`, the transports in :mod:`~reasonix.mcp.transport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import hashlib
import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from reasonix.events import ErrorEvent, NoticeEvent, NullSink, Sink
from reasonix.mcp.config import McpServerConfig
from reasonix.mcp.convert import (
    assign_names,
    identity_from_annotations,
    normalize_schema,
    result_to_tool_result,
)
from reasonix.mcp.transport import McpStartError, ProcessInfo, open_http, open_stdio
from reasonix.store.private import private_dir, private_file
from reasonix.terminal_text import printable, strip_escape_sequences
from reasonix.tools.registry import Tool, ToolResult

EVENT_ROLE = "mcp"
#: JSON-RPC / SDK error codes we treat specially (values from the MCP SDK; kept here so that
#: reading them does not need the SDK imported).
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


class ServerState(enum.StrEnum):
    """Where a configured server is in its life."""

    DISABLED = "disabled"  # enabled = false in the configuration
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"  # never came up (start-up error or timeout)
    EXITED = "exited"  # was running, then died or lost its connection
    STOPPED = "stopped"  # shut down by us


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """One server's state, for ``reasonix doctor`` and ``/mcp``."""

    name: str
    transport: str
    target: str
    state: ServerState
    tool_count: int
    error: str | None
    log_path: Path | None
    pid: int | None
    pending_change: bool

    def line(self) -> str:
        """A one-line human summary."""
        head = f"{self.name} ({self.transport}: {self.target}): {self.state.value}"
        if self.state is ServerState.RUNNING:
            head += f", {self.tool_count} tool(s)"
            if self.pending_change:
                head += ", tool list changed (applies to the next session)"
        if self.error:
            head += f": {self.error}"
        if self.log_path is not None and self.state in (ServerState.FAILED, ServerState.EXITED):
            head += f" [log: {self.log_path}]"
        return head


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A server whose tools no longer match the running session's snapshot."""

    server: str
    reason: str


def _log_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    if safe != name:
        # "a b", "a/b" and "a_b" must not share one log file (nor one stderr tail).
        safe += "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return safe + ".log"


def _describe_exc(exc: BaseException) -> str:
    """Flatten exception groups (anyio wraps transport failures in them) into one message."""
    if isinstance(exc, BaseExceptionGroup):
        inner = [_describe_exc(e) for e in exc.exceptions]
        return "; ".join(dict.fromkeys(i for i in inner if i)) or type(exc).__name__
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _canonical(defs: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(defs), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class _Server:
    """One configured server and the background task that owns its connection."""

    def __init__(self, config: McpServerConfig, log_path: Path) -> None:
        self.config = config
        self.log_path = log_path
        self.state = ServerState.DISABLED if not config.enabled else ServerState.STOPPED
        self.task: asyncio.Task[None] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the last connection (before a start or a restart)."""
        self.error: str | None = None
        self.session: Any = None
        self.tools: list[dict[str, Any]] = []
        self.info: ProcessInfo | None = None
        self.scope: Any = None
        self.wake = asyncio.Event()
        self.ready = asyncio.Event()
        self.done = asyncio.Event()
        self.stop_requested = False
        self.list_changed = False
        self.early_changes = 0

    def is_running(self) -> bool:
        return self.state is ServerState.RUNNING

    def not_running_message(self) -> str:
        name = self.config.name
        if self.state is ServerState.DISABLED:
            return f"MCP server '{name}' is disabled in the configuration."
        if self.state is ServerState.STARTING:
            return f"MCP server '{name}' is still starting; try again in a moment."
        why = self.error or self.state.value
        return f"MCP server '{name}' is not running ({why}); restart it with /mcp restart {name}"

    def stderr_tail(self, since: int, lines: int = 3) -> str:
        try:
            with self.log_path.open("rb") as f:
                f.seek(since)
                data = f.read()[-4000:]
        except OSError:
            return ""
        text = strip_escape_sequences(data.decode("utf-8", "replace"))
        kept = [
            printable(ln.strip()[:200])
            for ln in text.splitlines()
            if ln.strip() and not ln.startswith("[reasonix]") and not ln.startswith("---")
        ]
        return " | ".join(kept[-lines:])


class McpManager:
    """Starts MCP servers, keeps their sessions open, and turns their tools into :class:`Tool`.

    ``await start()`` brings every enabled server up concurrently; each is bounded by its own
    ``startup_timeout`` and a failure is reported (an :class:`~reasonix.events.ErrorEvent` and
    :meth:`status`) without stopping the others. :meth:`tools` is the snapshot taken when start-up
    finished; it stays byte-stable for the session however the servers change (see the package
    docstring). ``await aclose()`` shuts every server down. Also an async context manager.

    Each server's connection lives in one background task on the caller's event loop, which
    enters and exits the SDK's context managers itself (anyio requires a cancel scope to be
    left by the task that entered it); tool calls from any task go through that session.
    """

    def __init__(
        self,
        configs: Iterable[McpServerConfig],
        log_dir: str | Path,
        sink: Sink | None = None,
        *,
        shutdown_grace: float = 2.0,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.sink: Sink = sink if sink is not None else NullSink()
        self.shutdown_grace = shutdown_grace
        self._servers: dict[str, _Server] = {}
        for cfg in configs:
            if cfg.name in self._servers:
                raise ValueError(f"two MCP servers are named {cfg.name!r}")
            self._servers[cfg.name] = _Server(cfg, self.log_dir / _log_name(cfg.name))
        self._snapshot: tuple[Tool, ...] = ()
        self._snapshot_defs: dict[str, str] = {}
        self._started = False
        self._closed = False

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- life cycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every enabled server concurrently and take the tool snapshot. Never raises for a
        server's failure; see :meth:`status`."""
        if self._started:
            return
        self._started = True
        servers = [s for s in self._servers.values() if s.config.enabled]
        if servers:
            private_dir(self.log_dir)
            # The SDK takes about a second to import; doing it in a thread keeps the event
            # loop (and a frontend drawing on it) responsive meanwhile.
            try:
                await asyncio.to_thread(_import_sdk)
            except ImportError as exc:
                self._sdk_missing(servers, exc)
                return
            _route_sdk_logs()

        async def launch(srv: _Server) -> None:
            # aclose() may have run while the SDK was importing: start nothing after it.
            if not self._closed:
                await self._launch(srv)

        await asyncio.gather(*(launch(s) for s in servers))
        self._take_snapshot()

    def _sdk_missing(self, servers: list[_Server], exc: ImportError) -> None:
        """No MCP SDK (an install without its dependencies): a notice, never a traceback."""
        why = (
            f"the MCP SDK could not be imported ({exc}); reinstall reasonix "
            "(`pip install --force-reinstall reasonix`, or `pip install 'mcp>=1.20'`)"
        )
        for srv in servers:
            srv.state = ServerState.FAILED
            srv.error = why
            srv.ready.set()
            srv.done.set()
        names = ", ".join(s.config.name for s in servers)
        self.sink.emit(
            NoticeEvent(EVENT_ROLE, "mcp_unavailable", f"MCP servers not started ({names}): {why}.")
        )
        self._take_snapshot()

    async def aclose(self) -> None:
        """Stop every server: close stdin, then terminate, then kill after the grace period."""
        self._closed = True
        await asyncio.gather(*(self._stop(s) for s in self._servers.values()))

    async def restart(self, name: str) -> McpServerStatus:
        """Stop (if needed) and start one server again. The session's tool snapshot keeps its
        names and schemas; if the server now offers different tools that is recorded as a
        pending change for the next session."""
        srv = self._get(name)
        await self._stop(srv)
        if not self.log_dir.exists():
            private_dir(self.log_dir)
        await self._launch(srv)
        if srv.state is ServerState.RUNNING:
            self._emit_notice("mcp_server_restarted", f"MCP server '{name}' restarted.")
            if name in self._snapshot_defs and self._pending_reason(srv) is not None:
                self._emit_notice(
                    "mcp_tools_changed",
                    f"MCP server '{name}' now offers a different tool list; the change applies "
                    "to the next session.",
                )
        return self._status_of(srv)

    async def _launch(self, srv: _Server) -> None:
        srv.reset()
        srv.state = ServerState.STARTING
        srv.task = asyncio.create_task(self._serve(srv), name=f"mcp-server-{srv.config.name}")
        # The task enforces the start-up timeout itself; this outer bound only guards against a
        # transport that ignores cancellation.
        limit = srv.config.startup_timeout + 2 * self.shutdown_grace + 5
        try:
            await asyncio.wait_for(srv.ready.wait(), limit)
        except TimeoutError:
            srv.error = f"did not start within {srv.config.startup_timeout:g} s"
            await self._stop(srv)
            srv.state = ServerState.FAILED

    async def _stop(self, srv: _Server) -> None:
        task = srv.task
        if task is None:
            return
        srv.stop_requested = True
        srv.wake.set()
        if srv.state is ServerState.STARTING and srv.scope is not None:
            srv.scope.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(srv.done.wait()), 2 * self.shutdown_grace + 5)
        except TimeoutError:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        srv.task = None
        srv.session = None

    async def _serve(self, srv: _Server) -> None:
        """The background task owning one connection, from spawn to shutdown."""
        import anyio

        cfg = srv.config
        started = False
        failure: BaseException | None = None
        timed_out = False
        log: BinaryIO | None = None
        log_start = 0
        # SDK log records from this task and the session tasks it starts go to this log.
        _CURRENT_LOG.set(srv.log_path)
        try:
            log = private_file(srv.log_path).open("ab")
            log_start = log.tell()
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"--- reasonix: starting {cfg.describe()} at {stamp} ---\n".encode())
            log.flush()
            info = ProcessInfo()
            srv.info = info
            with anyio.CancelScope() as scope:
                srv.scope = scope
                if srv.stop_requested:
                    scope.cancel()
                scope.deadline = anyio.current_time() + cfg.startup_timeout
                async with AsyncExitStack() as stack:
                    if cfg.transport == "stdio":
                        streams = await stack.enter_async_context(
                            open_stdio(
                                cfg,
                                log=log,
                                info=info,
                                on_exit=srv.wake.set,
                                grace=self.shutdown_grace,
                            )
                        )
                    else:
                        streams = await stack.enter_async_context(open_http(cfg))
                    session = await stack.enter_async_context(self._new_session(srv, streams, log))
                    await session.initialize()
                    info.initialized = True
                    # A change announced while tools/list is in flight may or may not be in
                    # the answer: list again (servers that announce one right after
                    # initialization would otherwise report a change every session).
                    for _ in range(3):
                        changes_before_list = srv.early_changes
                        tools = await _list_all_tools(session)
                        if srv.early_changes == changes_before_list:
                            break
                    scope.deadline = math.inf
                    started = True
                    srv.session = session
                    srv.tools = tools
                    srv.state = ServerState.RUNNING
                    srv.ready.set()
                    if srv.early_changes > changes_before_list:
                        self._mark_changed(srv)  # still changing: count it as a change
                    if info.garbage_lines:
                        self._emit_notice(
                            "mcp_server_stdout_noise",
                            f"MCP server '{cfg.name}' started, but {info.garbage_text()}.",
                        )
                    await srv.wake.wait()
                    srv.session = None  # new calls fail fast while the connection winds down
            timed_out = scope.cancelled_caught and not srv.stop_requested and not started
        except asyncio.CancelledError:
            # Our owner, or an event loop shutting down, cancelled the task: the connection was
            # closed on purpose (shielded, above), which is a stop and not a crash to report.
            srv.stop_requested = True
            raise
        except Exception as exc:
            failure = exc
        finally:
            srv.session = None
            self._settle(srv, started, failure, timed_out, log_start)
            if log is not None:
                with contextlib.suppress(OSError):
                    log.close()
            srv.ready.set()
            srv.done.set()

    def _new_session(self, srv: _Server, streams: tuple[Any, Any], log: BinaryIO) -> Any:
        from mcp.client.session import ClientSession
        from mcp_types import Implementation

        from reasonix._version import __version__

        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                _log_line(log, f"transport error: {_describe_exc(message)}")
                return
            if getattr(message, "method", None) != "notifications/tools/list_changed":
                return
            if srv.is_running():
                self._mark_changed(srv)
            else:
                # Start-up decides whether this came before our tools/list was sent.
                srv.early_changes += 1

        async def on_log(params: Any) -> None:
            data = params.data if isinstance(params.data, str) else json.dumps(params.data)
            _log_line(log, f"log {params.level}: {data}")

        return ClientSession(
            streams[0],
            streams[1],
            message_handler=on_message,
            logging_callback=on_log,
            client_info=Implementation(name="reasonix", version=__version__),
        )

    def _mark_changed(self, srv: _Server) -> None:
        if srv.list_changed:
            return
        srv.list_changed = True
        self._emit_notice(
            "mcp_tools_changed",
            f"MCP server '{srv.config.name}' changed its tool list; the change applies to the "
            "next session.",
        )

    def _settle(
        self,
        srv: _Server,
        started: bool,
        failure: BaseException | None,
        timed_out: bool,
        log_start: int,
    ) -> None:
        """Record how a connection ended and tell the sink."""
        cfg = srv.config
        info = srv.info
        if srv.stop_requested:
            srv.state = ServerState.STOPPED
            return
        details: list[str] = []
        if not started:
            if timed_out:
                details.append(f"did not answer within {cfg.startup_timeout:g} s")
            elif isinstance(failure, McpStartError):
                details.append(str(failure))
            elif info is not None and info.died:
                details.append(info.exit_text() + " during start-up")
            elif failure is not None:
                details.append(_describe_exc(failure))
                if cfg.transport == "http":
                    details.append("check the URL and the headers (credentials)")
            else:
                details.append("closed the connection during start-up")
            if info is not None and info.garbage_lines:
                details.append(info.garbage_text())
            tail = srv.stderr_tail(log_start)
            if tail:
                details.append(f"stderr: {tail}")
            srv.state = ServerState.FAILED
            srv.error = "; ".join(details)
            self.sink.emit(
                ErrorEvent(
                    EVENT_ROLE,
                    "mcp_server_failed",
                    f"MCP server '{cfg.name}' failed to start: {srv.error}. "
                    f"Continuing without it (log: {srv.log_path}).",
                )
            )
            return
        if info is not None and info.died:
            srv.error = info.exit_text()
        elif failure is not None:
            srv.error = f"connection lost: {_describe_exc(failure)}"
        else:
            srv.error = "connection closed"
        srv.state = ServerState.EXITED
        tail = srv.stderr_tail(log_start)
        self.sink.emit(
            ErrorEvent(
                EVENT_ROLE,
                "mcp_server_exited",
                f"MCP server '{cfg.name}' stopped unexpectedly ({srv.error})"
                + (f"; stderr: {tail}" if tail else "")
                + f". Restart it with /mcp restart {cfg.name} (log: {srv.log_path}).",
            )
        )

    # -- tools -----------------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """The tool snapshot of this session: taken when :meth:`start` finished (or at the last
        :meth:`refresh_snapshot`), sorted by name, unchanged by later server events."""
        return list(self._snapshot)

    def pending_changes(self) -> list[PendingChange]:
        """Servers whose tools differ from the snapshot; they apply to the next session."""
        out: list[PendingChange] = []
        for srv in self._servers.values():
            reason = self._pending_reason(srv)
            if reason is not None:
                out.append(PendingChange(srv.config.name, reason))
        return out

    async def refresh_snapshot(self) -> list[Tool]:
        """Re-list the tools of servers that announced a change and take a new snapshot — for a
        frontend starting a new session. The running session must keep the old one."""
        for srv in self._servers.values():
            if srv.list_changed and srv.state is ServerState.RUNNING and srv.session is not None:
                token = _CURRENT_LOG.set(srv.log_path)
                try:
                    # Bounded: a server that stopped answering must not hang a new session.
                    srv.tools = await asyncio.wait_for(
                        _list_all_tools(srv.session), srv.config.call_timeout
                    )
                    srv.list_changed = False
                except Exception as exc:
                    if isinstance(exc, TimeoutError):
                        why = f"no answer within {srv.config.call_timeout:g} s"
                    else:
                        why = _describe_exc(exc)
                    _log_line_path(srv.log_path, f"tools/list failed: {why}")
                finally:
                    _CURRENT_LOG.reset(token)
        self._take_snapshot()
        return self.tools()

    def _pending_reason(self, srv: _Server) -> str | None:
        if srv.list_changed:
            return "the server announced a tool list change (notifications/tools/list_changed)"
        if srv.state is not ServerState.RUNNING:
            return None
        before = self._snapshot_defs.get(srv.config.name)
        if before is None:
            return "the server started after this session's tools were fixed"
        if before != _canonical(srv.tools):
            return "the server's tool list differs from this session's snapshot"
        return None

    def _take_snapshot(self) -> None:
        running = [s for s in self._servers.values() if s.state is ServerState.RUNNING]
        pairs = [(s.config.name, str(t["name"])) for s in running for t in s.tools]
        names = assign_names(pairs)
        built: list[Tool] = []
        for srv in running:
            for t in srv.tools:
                built.append(self._make_tool(srv.config, t, names[(srv.config.name, t["name"])]))
        self._snapshot = tuple(sorted(built, key=lambda t: t.name))
        self._snapshot_defs = {s.config.name: _canonical(s.tools) for s in running}

    def _make_tool(self, cfg: McpServerConfig, t: Mapping[str, Any], name: str) -> Tool:
        server, remote = cfg.name, str(t["name"])
        annotations = t.get("annotations") or {}
        identity = identity_from_annotations(
            annotations if isinstance(annotations, Mapping) else {},
            trusted=cfg.trust_annotations,
        )
        description = str(t.get("description") or "").strip()
        if not description:
            description = f"Tool {remote!r} of the MCP server {server!r}."

        async def call_mcp_tool(**arguments: Any) -> ToolResult:
            return await self.call_tool(server, remote, arguments)

        return Tool(
            name=name,
            description=description,
            parameters=normalize_schema(t.get("inputSchema")),
            func=call_mcp_tool,
            read_only=identity.read_only,
            destructive=identity.destructive,
            # A little beyond our own call timeout, so ours fires first with the clearer message.
            timeout=cfg.call_timeout + 5,
            category="mcp",
            kind=identity.kind,
            writes=identity.writes,
        )

    async def call_tool(
        self, server: str, tool: str, arguments: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """Call ``tool`` on ``server``. Never raises for the server's failures: a dead server, a
        JSON-RPC error, a timeout each become an error result with a message for the model."""
        srv = self._get(server)
        session = srv.session
        if srv.state is not ServerState.RUNNING or session is None:
            return ToolResult.error(srv.not_running_message())
        timeout = srv.config.call_timeout
        token = _CURRENT_LOG.set(srv.log_path)
        try:
            result = await session.call_tool(
                tool, dict(arguments or {}), read_timeout_seconds=timeout
            )
        except Exception as exc:
            code = getattr(exc, "code", None)
            if code == _CONNECTION_CLOSED:
                # Let the owning task notice the exit so the message can carry the exit code.
                srv.wake.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(srv.done.wait()), 3.0)
                if not srv.is_running():
                    return ToolResult.error(srv.not_running_message())
                return ToolResult.error(
                    f"MCP server '{server}' closed the connection during the call to {tool}."
                )
            if code == _REQUEST_TIMEOUT:
                return ToolResult.error(
                    f"MCP tool {tool} on server '{server}' did not answer within {timeout:g} s; "
                    "the call was cancelled. The server is still available."
                )
            if isinstance(code, int):
                return ToolResult.error(
                    f"MCP server '{server}' rejected the call to {tool}: {exc} "
                    f"(JSON-RPC error {code})."
                )
            return ToolResult.error(
                f"MCP tool {tool} on server '{server}' failed: {_describe_exc(exc)}"
            )
        finally:
            _CURRENT_LOG.reset(token)
        return result_to_tool_result(
            result.model_dump(by_alias=True, mode="json", exclude_none=True)
        )

    # -- reporting -------------------------------------------------------------------------------

    def status(self) -> list[McpServerStatus]:
        """Every configured server's state, in configuration order."""
        return [self._status_of(s) for s in self._servers.values()]

    def _status_of(self, srv: _Server) -> McpServerStatus:
        cfg = srv.config
        running = srv.state is ServerState.RUNNING
        alive = srv.state in (ServerState.STARTING, ServerState.RUNNING)
        pid = srv.info.pid if srv.info is not None and alive else None
        return McpServerStatus(
            name=cfg.name,
            transport=cfg.transport,
            target=cfg.describe(),
            state=srv.state,
            tool_count=len(srv.tools) if running else 0,
            error=srv.error,
            log_path=srv.log_path if cfg.enabled else None,
            pid=pid,
            pending_change=self._pending_reason(srv) is not None,
        )

    @property
    def server_names(self) -> list[str]:
        return list(self._servers)

    def _get(self, name: str) -> _Server:
        srv = self._servers.get(name)
        if srv is None:
            known = ", ".join(self._servers) or "none"
            raise KeyError(f"no MCP server named {name!r} (configured: {known})")
        return srv

    def _emit_notice(self, code: str, message: str) -> None:
        self.sink.emit(NoticeEvent(EVENT_ROLE, code, message))


#: The log file of the server whose connection (or call) the current task serves.
_CURRENT_LOG: ContextVar[Path | None] = ContextVar("reasonix_mcp_log", default=None)
_SDK_LOGS_ROUTED = False


def _route_sdk_logs() -> None:
    """Send the SDK's own log records (warnings about a server's malformed messages, with
    tracebacks) to the log file of the server concerned. Without a handler Python prints them
    on stderr, in the middle of the terminal UI. Records still propagate, so an application that
    configured logging sees them too."""
    global _SDK_LOGS_ROUTED
    if _SDK_LOGS_ROUTED:
        return
    _SDK_LOGS_ROUTED = True
    import logging

    class ToServerLog(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            path = _CURRENT_LOG.get()
            if path is None:
                return
            try:
                text = self.format(record)
            except Exception:
                return
            # Every line marked as ours, so a traceback never passes for the server's stderr.
            body = "\n[reasonix]   ".join(text.splitlines())
            _log_line_path(path, f"sdk {record.levelname.lower()}: {body}")

    # The SDK's modules log under their own names; its client session logs as "client".
    for name in ("mcp", "mcp_types", "client"):
        logging.getLogger(name).addHandler(ToServerLog())


def _import_sdk() -> None:
    import mcp.client.session
    import mcp.shared.message
    import mcp_types

    del mcp, mcp_types


async def _list_all_tools(session: Any) -> list[dict[str, Any]]:
    """Every page of ``tools/list``, as wire JSON."""
    from mcp_types import PaginatedRequestParams

    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(1000):  # a server that never stops paginating is not followed forever
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for t in page.tools:
            # A tool listed twice (a server bug, or pages that overlap) would give two tools
            # of one name, which no registry accepts: the first listing wins.
            if t.name not in seen:
                seen.add(t.name)
                out.append(t.model_dump(by_alias=True, mode="json", exclude_none=True))
        cursor = page.next_cursor
        if not cursor:
            break
    return out


def _log_line(log: BinaryIO, text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        log.write(f"[reasonix] {text}\n".encode())
        log.flush()


def _log_line_path(path: Path, text: str) -> None:
    with contextlib.suppress(OSError), path.open("ab") as f:
        f.write(f"[reasonix] {text}\n".encode())
