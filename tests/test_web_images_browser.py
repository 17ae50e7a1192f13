"""The dashboard's image pick and drop, in Debian's Chromium against the real ``reasonix
serve``: an image picked with the file input, and one dropped on the message box, each reach
the executor's request at the fake server as an image part of that message's turn."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.browser import WAIT, browser, needs_chromium, open_logged_in
from tests.support.images import png
from tests.support.project import Project, project
from tests.support.web import serve

__all__ = ["browser", "project"]

pytestmark = [needs_chromium, pytest.mark.slow]

#: drops ``name`` (the given base64 bytes) on the message box as a file, as a user's drag does
_DROP = """([name, data]) => {
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  const dt = new DataTransfer();
  dt.items.add(new File([bytes], name, { type: 'image/png' }));
  const box = document.querySelector('#message');
  box.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
}"""


def image_parts(request: Any) -> list[dict[str, Any]]:
    user = [m for m in request.messages if m["role"] == "user"][-1]
    content = user["content"]
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_a_picked_and_a_dropped_image_reach_the_executor_as_image_parts(
    project: Project, browser: Any, tmp_path: Path
) -> None:
    picked, dropped = png(30, 20, seed=31), png(18, 12, seed=32)
    (tmp_path / "picked.png").write_bytes(picked)
    project.ex.push(Reply.text("Hello."), Reply.text("A picked chart."), Reply.text("A drop."))
    with serve(project) as served:
        context, page = open_logged_in(browser, served, {"width": 1280, "height": 800})
        page.fill(".new-session textarea", "hello")
        page.click("button:text-is('New session')")
        page.wait_for_url(re.compile(r"#/s/"), timeout=WAIT)
        page.wait_for_selector(".note:has-text('Turn 1 ended')", timeout=WAIT)

        page.set_input_files("#image-pick", str(tmp_path / "picked.png"))
        page.wait_for_selector("#image-note:has-text('1 image(s) attached')", timeout=WAIT)
        page.fill("#message", "what is in the picked one?")
        page.click("button:text-is('Send')")
        page.wait_for_selector(".note:has-text('Turn 2 ended')", timeout=WAIT)
        assert page.locator("#image-note").inner_text() == ""  # sent, not kept for the next
        assert image_parts(project.ex.requests[1]) == [
            {"type": "image_url", "image_url": {"url": data_url(picked)}}
        ]

        page.evaluate(_DROP, ["dropped.png", base64.b64encode(dropped).decode()])
        page.wait_for_selector("#image-note:has-text('1 image(s) attached')", timeout=WAIT)
        page.fill("#message", "and the dropped one?")
        page.click("button:text-is('Send')")
        page.wait_for_selector(".note:has-text('Turn 3 ended')", timeout=WAIT)
        context.close()
    last = project.ex.requests[2]
    assert image_parts(last) == [{"type": "image_url", "image_url": {"url": data_url(dropped)}}]
    # the earlier turn's image is still sent as it was: the history is a prefix extension
    assert image_parts(project.ex.requests[1])[0] in [
        p for m in last.messages if isinstance(m["content"], list) for p in m["content"]
    ]
    assert len(project.ex.requests) == 3
