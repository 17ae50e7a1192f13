"""Rough edges of the command line, each through the real ``reasonix`` process: a closed pipe,
a wrong session id, a file too large to load whole, an MCP server that fails to start."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from reasonix.messages import AssistantMessage, UserMessage
from reasonix.store import SessionStore
from reasonix.testing import Reply
from reasonix.tools.builtin.files import READ_MAX_BYTES
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def test_a_closed_pipe_is_not_a_traceback(project: Project) -> None:
    project.data.mkdir(exist_ok=True)
    with SessionStore(project.data / "sessions.db") as store:
        sid = store.create_session(project.root, "big")
        store.append_message(sid, "executor", 0, UserMessage("show me"))
        store.append_message(sid, "executor", 1, AssistantMessage("line\n" * 200_000))
    proc = subprocess.run(
        f"{sys.executable} -m reasonix sessions export {sid} --format markdown | head -1",
        shell=True,
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_an_unknown_session_id_is_a_usage_error(project: Project) -> None:
    proc = project.run("sessions", "show", "bogus")
    assert proc.returncode == 2
    assert "no session 'bogus'" in proc.stderr


def test_read_file_reads_a_window_of_a_file_over_the_whole_file_limit(project: Project) -> None:
    big = project.root / "big.log"
    line = "x" * 99 + "\n"
    with big.open("w") as f:
        for i in range(READ_MAX_BYTES // len(line) + 1000):
            f.write(f"{i:08d} {line}" if i != 150_000 else "THE NEEDLE LINE\n")
    project.ex.push(
        Reply.call("read_file", {"path": "big.log", "offset": 150_000, "limit": 3}),
        Reply.text("Found it."),
    )
    proc = project.run("run", "--output-format", "json", "read the needle")
    assert proc.returncode == 0, proc.stderr
    result = project.ex.requests[1].messages[-1]
    assert result["role"] == "tool"
    assert "150001\tTHE NEEDLE LINE" in result["content"]
    assert "call read_file with offset=150003 to continue" in result["content"]


def test_mcp_start_failures_are_reported_in_text_and_json(project: Project) -> None:
    project.write_toml('\n[[mcp.servers]]\nname = "broken"\ncommand = "/nonexistent/mcp-server"\n')
    project.ex.push(Reply.text("Hi."), Reply.text("Hi again."))
    text = project.run("run", "hello")
    assert text.returncode == 0, text.stderr
    assert "MCP server broken" in text.stderr and "failed" in text.stderr
    js = project.run("run", "--output-format", "json", "hello")
    (result,) = json_lines(js.stdout)
    (problem,) = result["mcp_problems"]
    assert problem.startswith("MCP server broken") and "failed" in problem


def test_many_searches_leave_no_unknown_child_warning(project: Project) -> None:
    # Each grep runs rg; finishing one used to reap it behind asyncio's back now and then (one
    # search in ten to a hundred here), which printed "Unknown child process pid ..." on stderr.
    # 200 searches show it in most runs without the fix.
    assert shutil.which("rg"), "this test needs ripgrep (rg) on PATH"
    for i in range(20):
        (project.root / f"f{i}.txt").write_text(f"hello {i}\n")
    # distinct patterns: a repeated identical call is not run again
    batches = [[("grep", {"pattern": f"hello|x{b}{k}"}) for k in range(20)] for b in range(10)]
    project.ex.push(*[Reply.calls(*batch) for batch in batches], Reply.text("Searched."))
    proc = project.run("run", "--yes", "search a lot")
    assert proc.returncode == 0, proc.stderr
    assert "Searched." in proc.stdout
    assert len(project.ex.requests) == 11
    assert "hello 19" in str(project.ex.requests[-1].messages[-1])
    assert "Unknown child" not in proc.stderr, proc.stderr
