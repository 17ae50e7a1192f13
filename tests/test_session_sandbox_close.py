"""Closing a session ends bash's kept sandbox at once (its bubblewrap process, the sandbox's
init and the supervisor), not when the garbage collector or the process exit gets to it. The
control keeps the registry's close from running and sees the same processes still alive after
the session closed, so the probe can see a sandbox that outlives its session. The same holds
for a writer subagent's copy: its sandbox ends when the child does."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from pathlib import Path

import pytest

from reasonix.app import AgentSession
from reasonix.config.schema import SandboxConfig
from reasonix.safety.confinement import confinement_for
from reasonix.store import SessionStore
from reasonix.testing import Reply
from reasonix.tools.registry import ToolRegistry
from tests.support.processes import alive, command_line, descendants
from tests.support.sessions import Servers, open_session

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None
    or confinement_for(SandboxConfig(bash="bwrap")).confiner.name != "bwrap",
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
    # bubblewrap and the supervisor (the sandbox's init)
    assert any("reasonix-supervisor" in command_line(p) for p in started), started
    assert len(started) >= 2 and all(alive(p) for p in started)
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


def _writer_script(seen: list[set[int]]):  # type: ignore[no-untyped-def]
    """The model: the parent starts a writer child, whose one bash call starts the copy's kept
    sandbox; when the child's report comes back, the sandbox processes alive are noted."""
    from reasonix.control.delegation import WRITER_PROMPT
    from reasonix.testing.fake_server import RecordedRequest

    def reply(request: RecordedRequest) -> Reply:
        steps = sum(1 for m in request.messages if m.get("role") == "assistant")
        if request.messages and request.messages[0].get("content") == WRITER_PROMPT:
            script = [Reply.call("bash", {"command": "echo hi > note.txt"}), Reply.text("done")]
            return script[min(steps, 1)]
        if steps == 0:
            task = {"description": "a note", "prompt": "write a note", "read_only": False}
            return Reply.call("task", task)
        seen.append({p for p in _sandbox_processes() if alive(p)})
        return Reply.text("the child is done")

    return reply


async def _writer_leaves(
    root: Path, servers: Servers, store: SessionStore
) -> tuple[set[int], set[int]]:
    """The sandbox processes alive once the writer child ended (its copy's sandbox, if it
    still runs) and, of those, the ones still alive after the session closed."""
    seen: list[set[int]] = []
    servers[0].handler = _writer_script(seen)
    session = await open_session(root, servers, store, {"permissions.mode": "yolo"})
    try:
        await session.run_turn("have a child write a note")
    finally:
        await session.aclose()
    assert seen, "the parent never got the child's report"
    return seen[0], {p for p in seen[0] if alive(p)}


async def test_a_writer_childs_sandbox_ends_with_the_child(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    at_report, _ = await _writer_leaves(tmp_path, servers, store)
    assert at_report == set()


async def test_control_without_the_close_the_writer_childs_sandbox_outlives_it(
    tmp_path: Path, servers: Servers, store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ToolRegistry, "close", lambda self: None)
    at_report, after = await _writer_leaves(tmp_path, servers, store)
    assert any("reasonix-supervisor" in command_line(p) for p in at_report), at_report
    for pid in after:  # nothing closes it now: end it here
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
