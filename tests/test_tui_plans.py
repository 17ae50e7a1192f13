"""Plans that need approval in the interactive app, read off an emulated screen: "n <what to
change>" asks the planner for a revised plan, which is offered for approval the same way as the
first; "y" then runs it."""

from __future__ import annotations

import sys

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def plan(objective: str, *titles: str) -> Reply:
    steps = [{"title": t, "verify": ""} for t in titles]
    return Reply.call(
        "submit_plan", {"objective": objective, "steps": steps, "requires_approval": True}
    )


def test_a_declined_plan_is_revised_and_offered_for_approval_again(project: Project) -> None:
    (project.root / "a.txt").write_text("a\n")
    (project.root / "b.txt").write_text("b\n")
    project.pl.push(
        plan("Tidy the build", "Remove the build folder"),
        plan("Tidy the build, tested", "Remove the build folder", "Run the test suite"),
    )
    project.ex.push(
        Reply.call("read_file", {"path": "a.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "read a.txt"}),
        Reply.call("read_file", {"path": "b.txt"}),
        Reply.call("complete_step", {"step": "2", "evidence": "read b.txt"}),
        Reply.text("Removed it and the tests pass."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("/plan tidy the build")
        screen = term.wait(r"Run this plan\?")
        assert "Remove the build folder" in screen
        assert "n <what to change>" in screen
        term.sendline("n also run the tests")
        # The revised plan is offered the same way as the first: answering yes runs it.
        term.wait("Asking the planner for a revised plan")
        screen = term.wait(r"Run the test suite[\s\S]*Run this plan\?")
        assert project.ex.requests == []  # nothing ran while the plan waited
        term.sendline("y")
        screen = term.wait("Removed it and the tests pass.")
        term.wait(r"plan_for_approval · done")
    finally:
        term.close()
    revised = project.pl.requests[1].messages
    assert any("What to change: also run the tests" in str(m.get("content")) for m in revised)
    assert any("tidy the build" in str(m.get("content")) for m in revised)
    executor_task = str(project.ex.requests[0].messages)
    assert "Run the test suite" in executor_task
