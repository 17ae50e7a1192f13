"""Sessions you can find again, through the real CLI: launches that send nothing are not
stored, so ``run -c "<answer>"`` after two of them still answers the question the agent asked;
stored empty sessions of older releases are hidden from ``-c`` and the lists; every session
shows a real status (waiting for an answer, finished, interrupted)."""

from __future__ import annotations

import sys

import pytest

from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

QUESTION = [
    {
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "one file"},
            {"label": "Postgres", "description": "a server"},
        ],
        "multiSelect": False,
    }
]


def launch_and_leave(project: Project) -> None:
    """Open the interactive app, send nothing, exit."""
    import pexpect

    env = {**project.env(), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "--no-planner"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 160),
    )
    try:
        child.expect("new session")
        child.expect("›")
        # /clear leaves an empty session too: it is not kept, and /clear does not offer it.
        child.sendline("/clear")
        child.expect(r"New session \S+\.\s")
        assert "/resume" not in (child.before or "") + (child.after or "")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def listed(project: Project) -> list[str]:
    proc = project.run("sessions", "list")
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.strip()]


def test_empty_launches_do_not_hijack_run_c(project: Project) -> None:
    project.ex.push(Reply.call("ask", {"questions": QUESTION}))
    proc = project.run("run", "--no-planner", "--output-format", "json", "set up the service")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    (first,) = json_lines(proc.stdout)
    asked = first["session_id"]
    (line,) = listed(project)
    assert asked in line and "waiting" in line

    # The user peeks into the app twice, sending nothing; an older release had also left an
    # empty session behind.
    launch_and_leave(project)
    launch_and_leave(project)
    with SessionStore(project.data / "sessions.db") as store:
        store.create_session(project.root)
    (line,) = listed(project)  # still only the real conversation
    assert asked in line and "(untitled)" not in line

    project.ex.push(Reply.text("Using Postgres."))
    proc = project.run("run", "--no-planner", "--output-format", "json", "-c", "Postgres")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["session_id"] == asked
    sent = project.ex.requests[-1].messages
    assert any("set up the service" in str(m.get("content")) for m in sent)
    assert sent[-1]["role"] == "tool" and "Postgres" in sent[-1]["content"]
    (line,) = listed(project)
    assert asked in line and "finished" in line
    # rewind with no id finds the same conversation.
    proc = project.run("rewind")
    assert proc.returncode == 0, proc.stderr
    assert f"Session {asked} " in proc.stdout


def test_a_session_left_running_by_a_dead_process_reads_interrupted(project: Project) -> None:
    project.ex.push(Reply.text("Hello."))
    proc = project.run("run", "--no-planner", "--output-format", "json", "say hello")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    with SessionStore(project.data / "sessions.db") as store:
        store.set_status(result["session_id"], "running")  # as a killed process leaves it
    (line,) = listed(project)
    assert result["session_id"] in line and "interrupted" in line
