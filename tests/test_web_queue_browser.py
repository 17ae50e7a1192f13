"""A message sent while a turn runs is queued like the terminal's (issue 29), in Debian's
Chromium against the real ``reasonix serve``: shown as queued, cancellable, and sent when the
turn ends; and a working indicator with the elapsed time while a turn runs."""

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


def test_a_message_sent_during_a_turn_is_queued_then_runs(project: Project, browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    # the first turn waits on an approval, so it is surely running while we type
    project.ex.push(
        Reply.call("bash", {"command": "python3 -c 'print(1)'"}),
        Reply.text("First turn done."),
        Reply.text("Second message answered."),
    )
    with serve(project) as served:
        context, page = open_logged_in(browser, served, {"width": 1280, "height": 800})
        page.fill(".new-session textarea", "run something")
        page.click("button:text-is('New session')")
        page.wait_for_url(re.compile(r"#/s/"), timeout=WAIT)
        page.locator("[data-approval-id]").wait_for(timeout=WAIT)
        # a working indicator with the elapsed time while the turn runs
        page.wait_for_function(
            "() => /^working · [1-9]\\d*s$/.test("
            "(document.querySelector('#working .working-text') || {}).textContent || '')",
            timeout=WAIT,
        )
        page.fill("#message", "never mind this one")
        page.click("button:text-is('Send')")
        page.fill("#message", "and then this")
        page.click("button:text-is('Send')")
        queued = page.locator("#queue .msg.queued")
        assert queued.count() == 2
        assert page.locator(".toast").count() == 0 or not page.locator(".toast").is_visible()
        page.screenshot(path=str(SHOTS / "session-queued-desktop.png"))
        queued.first.locator("button:text-is('Cancel')").click()
        assert queued.count() == 1
        page.click("[data-approval-id] button:text-is('Approve')")
        page.wait_for_selector(".note:has-text('Turn 2 ended: done')", timeout=WAIT)
        assert "Second message answered." in page.locator("#transcript").inner_text()
        assert queued.count() == 0
        assert page.locator("#working").count() == 0
        users = [m["content"] for m in project.ex.last_request.messages if m["role"] == "user"]
        assert any("and then this" in str(u) for u in users)
        assert not any("never mind this one" in str(u) for u in users)
        context.close()
