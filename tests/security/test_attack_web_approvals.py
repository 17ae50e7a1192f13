"""What the web dashboard (``reasonix serve``) shows when a command waits for approval, in a
real Chromium.

The approval showed the command as plain text in an inline element, where a browser folds a
newline into a space: ``echo cleaning temporary files`` newline ``touch ../web-newline-ran``
read as one ``echo`` of a few more words, while the shell runs the second line as a command of
its own — the same trick the terminal's approval (which keeps the layout) and the trust question
(which escapes it) do not fall for.

Worked before the fix in this module's commit (the subject keeps its line breaks). Control: the
page shows a one-line command whole, so the probe reads the approval it renders.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.web import serve

__all__ = ["project"]

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium"),
    pytest.mark.slow,
]
WAIT = 60_000  # ms


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        try:
            yield b
        finally:
            b.close()


def _approval_subject(project: Project, browser: Any, command: str) -> str:
    project.ex.push(Reply.call("bash", {"command": command}))
    with serve(project) as served:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(served.url)
        page.wait_for_selector("h1:has-text('Sessions')", timeout=WAIT)
        page.fill(".new-session textarea", "tidy up")
        page.click("button:text-is('New session')")
        approval = page.locator("[data-approval-id]")
        approval.wait_for(timeout=WAIT)
        shown = str(approval.locator(".subject").inner_text())
        page.click("button:has-text('Interrupt')")
        context.close()
    return shown


def test_an_approval_shows_a_newline_in_the_command(project: Project, browser: Any) -> None:
    shown = _approval_subject(
        project, browser, "echo cleaning temporary files\ntouch ../web-newline-ran"
    )
    assert "files\ntouch ../web-newline-ran" in shown, repr(shown)


def test_control_a_one_line_command_is_shown_whole(project: Project, browser: Any) -> None:
    shown = _approval_subject(project, browser, "touch one-line-ran")
    assert shown.strip() == "touch one-line-ran", repr(shown)
