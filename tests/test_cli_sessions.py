"""Sessions through the CLI: resume (both roles) with byte-exact prefix extension, a process
killed mid-turn resumed with ``reasonix -c``, and ``reasonix sessions list|show|export``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pexpect
import pytest

from reasonix.store import SessionStore
from reasonix.testing import Fault, Reply
from tests.support.project import Project, json_lines, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]

pytestmark = pytest.mark.slow


def plan(title: str) -> Reply:
    return Reply.call(
        "submit_plan", {"objective": title, "steps": [{"title": title, "verify": ""}]}
    )


def test_resume_extends_both_sessions_byte_exactly(project: Project) -> None:
    ex, pl = project.ex, project.pl
    (project.root / "notes.txt").write_text("alpha\n")
    pl.push(Reply.call("read_file", {"path": "notes.txt"}), plan("Summarise the notes"))
    (project.root / "more.txt").write_text("beta\n")
    ex.push(
        Reply.call("read_file", {"path": "notes.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "read notes.txt"}),
        Reply.text("The notes say alpha."),
    )
    proc = project.run("run", "--plan", "--output-format", "json", "summarise notes.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = json_lines(proc.stdout)[0]
    sid = first["session_id"]
    assert first["route"] == "plan_and_execute"
    ex_before, pl_before = len(ex.requests), len(pl.requests)

    pl.push(plan("Summarise again"))
    ex.push(
        Reply.call("read_file", {"path": "more.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "read more.txt"}),
        Reply.text("Still alpha."),
    )
    proc = project.run("run", "--resume", sid, "--plan", "--output-format", "json", "again")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    second = json_lines(proc.stdout)[0]
    assert second["session_id"] == sid
    assert second["result"] == "Still alpha."
    # The first request of each role after resuming extends that role's last request.
    assert wire_prefix_violations(ex.requests[ex_before - 1 :]) == []
    assert wire_prefix_violations(pl.requests[pl_before - 1 :]) == []
    assert len(ex.requests[ex_before].messages) > len(ex.requests[ex_before - 1].messages)
    # Cache hits show the server saw a pure extension.
    assert ex.requests[ex_before].cache_hit_tokens


def test_killed_mid_turn_then_continue(project: Project) -> None:
    ex = project.ex
    (project.root / "a.txt").write_text("content of a\n")
    ex.push(
        Reply.call("read_file", {"path": "a.txt"}),
        Reply.failing(Fault(stall_seconds=30)),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "reasonix", "run", "read a.txt and explain it"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120  # start-up on a loaded machine
        while len(ex.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(ex.requests) == 2, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    stalled = ex.requests[1]

    with SessionStore(project.data / "sessions.db") as store:
        assert store.integrity_check()
        (info,) = store.list_sessions()
        stored = store.load_messages(info.id, "executor")
        # Every message completed before the kill is there: system, user, the tool call and
        # its result (the request in flight had exactly these).
        assert [m.role for m in stored] == ["system", "user", "assistant", "tool"]
        assert [m.to_wire() for m in stored] == stalled.messages

    ex.push(Reply.text("a.txt holds one line of content."))
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "-c"],
        cwd=str(project.root),
        env=project.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color"),
        encoding="utf-8",
        timeout=60,  # each expect's bound: generous, for a loaded machine
        dimensions=(40, 120),
    )
    try:
        child.expect(f"resumed session {info.id}")
        child.expect("›")
        child.sendline("go on")
        child.expect("one line of content")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    resumed = ex.requests[2]
    assert wire_prefix_violations([stalled, resumed]) == []
    assert resumed.messages[-1] == {"role": "user", "content": "go on"}
    with SessionStore(project.data / "sessions.db") as store:
        assert store.integrity_check()
        assert len(store.load_messages(info.id, "executor")) == 6


def test_sessions_list_show_export(project: Project) -> None:
    project.ex.push(Reply.text("Answer one."))
    proc = project.run("run", "--output-format", "json", "first question")
    sid = json_lines(proc.stdout)[0]["session_id"]

    proc = project.run("sessions", "list")
    assert proc.returncode == 0
    assert sid in proc.stdout
    assert "first question" in proc.stdout

    proc = project.run("sessions", "show", sid)
    assert proc.returncode == 0
    assert "Answer one." in proc.stdout
    assert "executor: 1 requests" in proc.stdout

    proc = project.run("sessions", "export", sid, "--format", "json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["session"]["id"] == sid
    roles = [m["role"] for m in data["messages"]["executor"]]
    assert roles == ["system", "user", "assistant"]

    out = project.root / "s.md"
    proc = project.run("sessions", "export", sid, "--format", "markdown", "-o", str(out))
    assert proc.returncode == 0
    assert "Answer one." in out.read_text()

    proc = project.run("sessions", "show", "nope")
    assert proc.returncode == 2  # a usage error, as the README says
    assert "no session 'nope'" in proc.stderr

    proc = project.run("run", "--resume", "nope", "hello")
    assert proc.returncode == 2
    assert "no session 'nope'" in proc.stderr
