"""MCP server processes outside a running turn: separate logs for names that sanitise alike,
a closing event loop stops the servers quietly, SDK diagnostics go to the server log."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reasonix.events import CollectingSink, ErrorEvent
from reasonix.mcp import McpManager, McpServerConfig, ServerState
from tests.support.mcp import FAKE, fake_server

ROOT = Path(__file__).resolve().parent.parent


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_servers_whose_names_sanitise_alike_get_separate_logs(tmp_path: Path) -> None:
    configs = [
        McpServerConfig("my server", command="x"),
        McpServerConfig("my_server", command="x"),
        McpServerConfig("my/server", command="x"),
    ]
    paths = [s.log_path for s in McpManager(configs, tmp_path).status()]
    assert len(set(paths)) == 3
    assert paths[1] == tmp_path / "my_server.log"  # a plain name keeps its plain file
    assert all(p is not None and p.parent == tmp_path for p in paths)


def test_a_closing_event_loop_stops_servers_without_reporting_a_crash(tmp_path: Path) -> None:
    """``asyncio.run`` ending with the manager still open cancels its tasks: the servers are
    shut down, and that is a stop, not "stopped unexpectedly"."""
    sink = CollectingSink()
    pids: list[int] = []
    managers: list[McpManager] = []

    async def main() -> None:
        mgr = McpManager([fake_server("a")], tmp_path, sink)
        managers.append(mgr)
        await mgr.start()
        pids.extend(s.pid for s in mgr.status() if s.pid is not None)

    asyncio.run(main())
    assert len(pids) == 1 and _gone(pids[0])
    assert sink.of_type(ErrorEvent) == []
    assert [s.state for s in managers[0].status()] == [ServerState.STOPPED]


@pytest.mark.slow
def test_sdk_diagnostics_go_to_the_server_log_not_the_terminal(tmp_path: Path) -> None:
    """The SDK logs a warning with a traceback when a server sends a notification the schema
    rejects (``"level": "warn"`` is common); without a handler Python prints it on stderr, in
    the middle of the terminal UI."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from reasonix.mcp import McpManager, McpServerConfig

        async def main():
            cfg = McpServerConfig("noisy", command=sys.executable, args=({FAKE!r}, "--bad-log"))
            log = Path({str(tmp_path)!r}) / "noisy.log"
            async with McpManager([cfg], {str(tmp_path)!r}) as mgr:
                for _ in range(500):
                    if "Failed to validate notification" in log.read_text():
                        break
                    r = await mgr.call_tool("noisy", "echo", {{"text": "x"}})
                    assert r.content == "x"
                    await asyncio.sleep(0.01)

        asyncio.run(main())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    log = (tmp_path / "noisy.log").read_text()
    assert "Failed to validate notification: notifications/message" in log
    traceback = [ln for ln in log.splitlines() if "Traceback" in ln or "File " in ln]
    assert traceback and all(ln.startswith("[reasonix]") for ln in traceback)  # not "stderr"
