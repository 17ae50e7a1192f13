"""The dashboard on a phone (issue 29), in Debian's Chromium at 390×844 against the real
``reasonix serve``: no view scrolls sideways (the sessions list, a session with a plan, an
approval, markdown and tool output)."""

from __future__ import annotations

import os
import re
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
PHONE = {"width": 390, "height": 844}


def overflow(page: Any) -> int:
    """How far the page is wider than the viewport (0: no horizontal scroll)."""
    return int(
        page.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            " - document.documentElement.clientWidth"
        )
    )


def test_every_view_fits_390_px(project: Project, browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    long_line = "x" * 300
    project.pl.push(
        Reply.call(
            "submit_plan",
            {"objective": "Fix " + "the cache " * 12, "steps": [{"title": "Edit " + long_line}]},
        )
    )
    project.ex.push(
        # it writes a file, so it asks (a command proved to only read would run unasked)
        Reply.call("bash", {"command": "echo " + long_line + " > long.txt && wc -c long.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "ran " + long_line}),
        Reply.text(f"## Done\n\n`{long_line}`\n\n| a | b |\n|---|---|\n| {long_line} | 2 |\n"),
    )
    with serve(project) as served:
        context, page = open_logged_in(browser, served, PHONE)
        page.fill(".new-session textarea", "/plan fix the cache " + long_line)
        page.click("button:text-is('New session')")
        page.wait_for_url(re.compile(r"#/s/"), timeout=WAIT)
        page.locator("[data-approval-id]").wait_for(timeout=WAIT)
        assert overflow(page) == 0, "session with an approval"
        page.screenshot(path=str(SHOTS / "session-approval-phone.png"))
        page.click("[data-approval-id] button:text-is('Approve')")
        page.wait_for_selector(".note:has-text('Turn 1 ended')", timeout=WAIT)
        assert overflow(page) == 0, "session after the turn"
        page.screenshot(path=str(SHOTS / "session-phone.png"), full_page=True)
        page.goto(served.base + "/#/")
        page.wait_for_selector("h1:has-text('Sessions')", timeout=WAIT)
        page.wait_for_selector(".session-row, .sessions li, .sessions tr", timeout=WAIT)
        assert overflow(page) == 0, "sessions list"
        page.screenshot(path=str(SHOTS / "sessions-phone.png"), full_page=True)
        context.close()
