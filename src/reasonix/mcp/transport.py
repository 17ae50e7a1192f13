"""Transports from reasonix to MCP servers: a stdio one of our own, and the SDK's streamable HTTP.

Why our own stdio transport rather than the SDK's ``stdio_client``: the manager needs what that one
keeps private — the process id and exit code (for "exited with code 1" messages and for status),
a count and sample of lines on stdout that are not JSON-RPC (a common server bug that otherwise
shows only as a start-up timeout), bytes that are not UTF-8 tolerated instead of fatal, the full
inherited environment, and a notification the moment the process dies.

Shutdown follows the MCP lifecycle: close the server's stdin, wait ``grace`` seconds, SIGTERM its
process group, wait again, SIGKILL. It runs shielded from cancellation so a cancelled caller never
leaks a live server.

The SDK is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from reasonix.errors import ReasonixError
from reasonix.mcp.config import McpServerConfig


class McpStartError(ReasonixError):
    """An MCP server could not be started (missing command, bad working directory, …)."""


@dataclass
class ProcessInfo:
    """What we know of a stdio server's process; filled in as it runs."""

    pid: int | None = None
    returncode: int | None = None
    garbage_lines: int = 0
    #: set once the handshake is done; before that a server has nothing worth a long grace
    initialized: bool = False
    #: stdout closed before we began shutting the server down: it exited (or crashed) by itself
    died: bool = False
    first_garbage: str | None = None
    stopping: bool = False

    def exit_text(self) -> str:
        """``exited with code 3`` / ``killed by signal SIGKILL`` / ``exited``."""
        rc = self.returncode
        if rc is None:
            return "exited"
        if rc < 0:
            try:
                return f"killed by signal {signal.Signals(-rc).name}"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exited with code {rc}"

    def garbage_text(self) -> str:
        """A sentence about non-protocol stdout output, or ``""`` when there was none."""
        if not self.garbage_lines:
            return ""
        return (
            f"it wrote {self.garbage_lines} line(s) to stdout that are not JSON-RPC (first: "
            f"{self.first_garbage!r}); an MCP server must keep stdout for protocol messages "
            "and log to stderr"
        )


def resolve_command(config: McpServerConfig, env: dict[str, str]) -> str:
    """The executable to run, or :class:`McpStartError` saying what was searched."""
    assert config.command is not None
    found = shutil.which(config.command, path=env.get("PATH"))
    if found is None:
        if os.sep in config.command or (os.altsep and os.altsep in config.command):
            raise McpStartError(f"command not found or not executable: {config.command}")
        raise McpStartError(f"command not found: {config.command!r} is not on PATH")
    if config.cwd is not None and not os.path.isdir(config.cwd):
        raise McpStartError(f"working directory does not exist: {config.cwd}")
    return found


def _signal_group(pid: int, sig: int, process: Any) -> None:
    """Signal the server's whole process group (a wrapper such as ``npx`` or ``uvx`` has the real
    server as a child); fall back to the process alone where groups do not exist."""
    try:
        if sys.platform != "win32":
            os.killpg(pid, sig)
        elif sig == signal.SIGTERM:
            process.terminate()
        else:
            process.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


async def _wait_exit(process: Any, timeout: float) -> bool:
    import anyio

    # Poll rather than process.wait(): on asyncio that also waits for the pipes to close, and a
    # grandchild that inherited them would make an exited server look hung.
    deadline = time.monotonic() + timeout
    while process.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(0.02)
    return True


@asynccontextmanager
async def open_stdio(
    config: McpServerConfig,
    *,
    log: BinaryIO,
    info: ProcessInfo,
    on_exit: Callable[[], None],
    grace: float = 2.0,
) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn the server and yield ``(read_stream, write_stream)`` for a ``ClientSession``.

    The server's stderr goes to ``log``. ``on_exit`` is called once stdout has closed (the
    process died or is being shut down) and ``info.returncode`` is known when possible.
    """
    import subprocess

    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    from reasonix.safety.environment import build_environment

    # The allowlist, the user's own additions, never our key variables; the entry's own env on
    # top (written by whoever configured the server).
    env = build_environment(
        include=config.pass_env, extra=dict(config.env), withheld=config.withheld_env
    )
    executable = resolve_command(config, env)
    try:
        process = await anyio.open_process(
            [executable, *config.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=config.cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise McpStartError(f"could not start {config.command!r}: {exc}") from exc
    info.pid = process.pid

    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)

    async def deliver(raw: bytes, state: dict[str, bool]) -> None:
        text = raw.decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValueError:
            info.garbage_lines += 1
            if info.first_garbage is None:
                info.first_garbage = text[:120]
            with contextlib.suppress(OSError, ValueError):
                log.write(b"[reasonix] not JSON-RPC on stdout: " + raw[:500] + b"\n")
                log.flush()
            return
        if state["discard"]:
            return
        try:
            await read_send.send(SessionMessage(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The session has gone; keep draining so the server never blocks on a full pipe.
            state["discard"] = True

    async def reader() -> None:
        assert process.stdout is not None
        buf = bytearray()
        state = {"discard": False}
        try:
            try:
                async for chunk in process.stdout:
                    buf += chunk
                    start = 0
                    while (nl := buf.find(b"\n", start)) >= 0:
                        await deliver(bytes(buf[start:nl]), state)
                        start = nl + 1
                    del buf[:start]
                if buf:
                    await deliver(bytes(buf), state)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass
            # stdout closed: the server is exiting. Learn the exit code before anyone is told.
            if not info.stopping:
                info.died = True
                with anyio.CancelScope(shield=True):
                    await _wait_exit(process, 2.0)
            info.returncode = process.returncode
        finally:
            read_send.close()
            on_exit()

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for session_message in write_recv:
                    line = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send(line.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the server closed its stdin; the reader sees it exit

    async def shutdown() -> None:
        info.stopping = True
        write_send.close()
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            assert process.stdin is not None
            await process.stdin.aclose()
        wait = grace if info.initialized else min(grace, 0.5)
        if not await _wait_exit(process, wait):
            _signal_group(process.pid, signal.SIGTERM, process)
            if not await _wait_exit(process, wait):
                _signal_group(process.pid, signal.SIGKILL, process)
                await _wait_exit(process, 2.0)
        info.returncode = process.returncode

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await shutdown()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2.0):
            await process.aclose()
        read_recv.close()
        write_send.close()
        read_send.close()
        write_recv.close()


@asynccontextmanager
async def open_http(config: McpServerConfig) -> AsyncIterator[tuple[Any, Any]]:
    """Connect to a streamable HTTP server, sending the configured headers on every request."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    assert config.url is not None
    client = create_mcp_http_client(headers=dict(config.headers) or None)
    async with client, streamable_http_client(config.url, http_client=client) as streams:
        yield streams[0], streams[1]
