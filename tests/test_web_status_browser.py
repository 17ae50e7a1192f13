"""The dashboard's status in plain words (issue 29), in Debian's Chromium against the real
``reasonix serve``: a bash approval shows the command line (not JSON), its answer names what
was approved (no internal id), the planner gate's route is plain words with its codes in a
details view, and "the planner is studying the task" goes once the plan is there."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.browser import WAIT, browser, needs_chromium, open_logged_in
from tests.support.project import Project, project
from tests.support.web import serve

__all__ = ["browser", "project"]

pytestmark = [needs_chromium, pytest.mark.slow]

_REPO = Path(__file__).resolve().parent.parent
SHOTS = _REPO / os.environ.get("REASONIX_SCREENSHOTS", "build/screenshots")


def test_bash_approval_shows_the_command_and_status_is_plain_words(
    project: Project, browser: Any
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    project.pl.push(
        Reply.call("submit_plan", {"objective": "Run the tests", "steps": [{"title": "Run"}]})
    )
    project.ex.push(
        Reply.call("bash", {"command": "python3 -m pytest -q"}),
        Reply.call("complete_step", {"step": "1", "evidence": "ran pytest"}),
        Reply.text("Ran the tests."),
    )
    with serve(project) as served:
        context, page = open_logged_in(browser, served, {"width": 1280, "height": 800})
        page.fill(".new-session textarea", "/plan run the tests")
        page.click("button:text-is('New session')")
        approval = page.locator("[data-approval-id]")
        approval.wait_for(timeout=WAIT)
        shown = approval.inner_text()
        assert "$ python3 -m pytest -q" in shown
        assert '"command"' not in shown
        # the call's card names what it acts on: the subject the tool declares, sent with the event
        card = page.locator('.call[data-tool="bash"] .subject').first
        assert card.inner_text() == "python3 -m pytest -q"
        page.screenshot(path=str(SHOTS / "session-bash-approval-desktop.png"))
        page.click("[data-approval-id] button:text-is('Approve for session')")
        page.wait_for_selector(".note:has-text('Turn 1 ended')", timeout=WAIT)
        transcript = page.locator("#transcript").inner_text()
        answered = page.locator(".approval-note").first.inner_text()
        assert answered.startswith("bash python3 -m pytest -q: approved for this session")
        assert "approval-" not in transcript
        gate = page.locator("details.gate-note")
        assert gate.locator("summary").inner_text().startswith("The planner studies the task")
        assert "explicit" not in gate.locator("summary").inner_text()
        assert "Route:" not in transcript
        assert page.locator(".note:has-text('The planner is studying the task')").count() == 0
        context.close()


def test_edit_approval_shows_the_terminals_diff_with_context_lines(
    project: Project, browser: Any
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    (project.root / "calc.py").write_text(
        "import math\n\n\ndef add(a, b):\n    return a - b\n\n\nprint(add(1, 2))\n"
    )
    project.pl.push(
        Reply.call("submit_plan", {"objective": "Fix add", "steps": [{"title": "Edit"}]})
    )
    project.ex.push(
        Reply.call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        Reply.call("complete_step", {"step": "1", "evidence": "edited calc.py"}),
        Reply.text("Fixed add()."),
    )
    with serve(project) as served:
        context, page = open_logged_in(browser, served, {"width": 1280, "height": 800})
        page.fill(".new-session textarea", "/plan fix add in calc.py")
        page.click("button:text-is('New session')")
        approval = page.locator("[data-approval-id]")
        approval.wait_for(timeout=WAIT)
        diff = approval.locator(".diff")
        assert diff.locator(".del").first.inner_text().strip() == "-    return a - b"
        assert diff.locator(".add").first.inner_text().strip() == "+    return a + b"
        # unchanged lines around the change, shown as context (not as removed or added)
        context_lines = [t.rstrip("\n") for t in diff.locator(".ctx").all_inner_texts()]
        assert " def add(a, b):" in context_lines
        assert diff.locator(".hunk").count() == 1
        assert diff.locator(".file").first.inner_text().strip() == "--- a/calc.py"
        page.screenshot(path=str(SHOTS / "session-edit-approval-desktop.png"))
        page.click("[data-approval-id] button:text-is('Approve')")
        page.wait_for_selector(".note:has-text('Turn 1 ended')", timeout=WAIT)
        assert "return a + b" in (project.root / "calc.py").read_text()
        context.close()
