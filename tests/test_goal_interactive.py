"""``/goal`` in the interactive app (pexpect, fake servers): a goal started, interrupted while
a turn hangs (it pauses), the app quit, and the goal resumed by ``/goal resume`` in a new
process, where it completes; ``status`` and ``clear`` around it."""

from __future__ import annotations

import sys

import pexpect
import pytest

from reasonix.testing import Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.interactive import spawn, wait_for
from tests.support.project import Project, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def _turn(request: RecordedRequest) -> tuple[str, int]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    steps = sum(1 for m in messages[last_user:] if m.get("role") == "assistant")
    return str(messages[last_user].get("content", "")), steps


def test_goal_paused_by_an_interrupt_resumes_in_a_new_process(project: Project) -> None:
    hang = {"on": True}

    def executor(request: RecordedRequest) -> Reply:
        text, steps = _turn(request)
        if text.startswith("Goal:"):
            script = [
                Reply.call("write_file", {"path": "notes.md", "content": "# Notes\n"}),
                Reply.call(
                    "update_goal",
                    {"status": "continue", "summary": "started", "next_action": "add a line"},
                ),
                Reply.text("First goal turn done."),
            ]
            return script[min(steps, 2)]
        if hang["on"]:
            return Reply.failing(Fault(stall_seconds=30))
        script = [
            Reply.call("write_file", {"path": "notes.md", "content": "# Notes\nmore\n"}),
            Reply.call(
                "update_goal",
                {"status": "complete", "summary": "notes written", "evidence": "wrote notes.md"},
            ),
            Reply.text("Notes are complete."),
        ]
        return script[min(steps, 2)]

    project.ex.handler = executor
    child = spawn(project, "--no-planner", "--mode", "auto-edit")
    try:
        child.expect("›")
        child.sendline("/goal")
        child.expect("No goal")
        child.expect("›")
        child.sendline("/goal write the notes --max-turns 4")
        child.expect("First goal turn done.")
        wait_for(
            lambda: any(
                _turn(r)[0].startswith("[goal turn 2") and r.reply is not None
                for r in project.ex.requests
            ),
            120,
        )
        child.sendintr()
        child.expect(r"Status: paused \(interrupted\); turn 1 of at most 4")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (project.root / "notes.md").read_text() == "# Notes\n"

    hang["on"] = False
    child = spawn(project, "-c", "--no-planner", "--mode", "auto-edit")
    try:
        child.expect("›")
        child.sendline("/goal status")
        child.expect("Goal: write the notes")
        child.expect("Next action: add a line")
        child.expect("›")
        child.sendline("/goal write something else")
        child.expect("unfinished goal")
        child.expect("›")
        child.sendline("/goal resume")
        child.expect("Notes are complete.")
        child.expect(r"Status: complete \(complete\); turn 2 of at most 4")
        child.expect("›")
        child.sendline("/goal clear")
        child.expect("Goal cleared.")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (project.root / "notes.md").read_text() == "# Notes\nmore\n"
    answered = [r for r in project.ex.requests if r.status == 200]
    assert wire_prefix_violations(answered) == []
