"""Plans that need approval in the interactive app, read off an emulated screen: "n <what to
change>" asks the planner for a revised plan, which is kept with a note that /approve runs it;
/approve then does."""

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


def test_a_declined_plan_is_revised_then_kept_for_approve(project: Project) -> None:
    project.pl.push(
        plan("Tidy the build", "Remove the build folder"),
        plan("Tidy the build, tested", "Remove the build folder", "Run the test suite"),
    )
    project.ex.push(Reply.text("Removed it and the tests pass."))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("/plan tidy the build")
        screen = term.wait(r"Run this plan\?")
        assert "Remove the build folder" in screen
        assert "n <what to change>" in screen
        term.sendline("n also run the tests")
        # The revised plan is made and kept (not run): /approve runs it.
        screen = term.wait("/approve runs it")
        assert "Asking the planner for a revised plan" in screen
        assert "Run the test suite" in screen
        assert project.ex.requests == []  # nothing ran while the plan waited
        term.sendline("/approve")
        term.wait("Removed it and the tests pass.")
    finally:
        term.close()
    revised = project.pl.requests[1].messages
    assert any("What to change: also run the tests" in str(m.get("content")) for m in revised)
    executor_task = str(project.ex.requests[0].messages)
    assert "Run the test suite" in executor_task
