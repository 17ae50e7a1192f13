"""Closing a session ends bash's kept sandbox at once (its bubblewrap process, the sandbox's
init and the supervisor), not when the garbage collector or the process exit gets to it. The
control keeps the registry's close from running and sees the same processes still alive after
the session closed, so the probe can see a sandbox that outlives its session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reasonix.app import AgentSession
from reasonix.safety.confinement import bash_confinement
from reasonix.store import SessionStore
from reasonix.testing import Reply
from reasonix.tools.registry import ToolRegistry
from tests.support.processes import alive, command_line, descendants
from tests.support.sessions import Servers, open_session

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or bash_confinement("bwrap").confiner.name != "bwrap",
    reason="bubblewrap (bwrap) cannot make a sandbox here; CI installs it",
)


def _sandbox_processes() -> set[int]:
    """This test's processes that are a kept sandbox: bubblewrap and the supervisor."""
    found = set()
    for pid in descendants():
        line = command_line(pid)
        if "reasonix-supervisor" in line or line.split(" ", 1)[0].endswith("bwrap"):
            found.add(pid)
    return found


async def _session_with_a_sandbox(
    root: Path, servers: Servers, store: SessionStore
) -> tuple[AgentSession, set[int]]:
    ex, _ = servers
    ex.push(Reply.call("bash", {"command": "echo hello"}), Reply.text("ran it"))
    session = await open_session(root, servers, store, {"permissions.mode": "yolo"})
    assert session.bash.confiner.name == "bwrap"
    before = _sandbox_processes()
    await session.run_turn("run a command")
    started = _sandbox_processes() - before
    # bubblewrap, the sandbox's init (bubblewrap too) and the supervisor
    assert any("reasonix-supervisor" in command_line(p) for p in started), started
    assert len(started) >= 3 and all(alive(p) for p in started)
    return session, started


async def test_closing_the_session_ends_its_kept_sandbox(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    session, started = await _session_with_a_sandbox(tmp_path, servers, store)
    await session.aclose()
    assert [p for p in started if alive(p)] == []


async def test_control_without_the_close_the_sandbox_outlives_the_session(
    tmp_path: Path, servers: Servers, store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_close = ToolRegistry.close
    monkeypatch.setattr(ToolRegistry, "close", lambda self: None)
    session, started = await _session_with_a_sandbox(tmp_path, servers, store)
    await session.aclose()
    try:
        assert sorted(p for p in started if alive(p)) == sorted(started)
    finally:
        real_close(session._tools)
    assert [p for p in started if alive(p)] == []
