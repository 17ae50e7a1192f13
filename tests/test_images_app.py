"""The terminal app sends an ``@screenshot.png`` turn to the executor as an image part, and
refuses an image DeepSeek would refuse without sending anything (real CLI, pty, fake server)."""

from __future__ import annotations

import base64
import sys

import pexpect
import pytest

from reasonix.testing import Reply
from tests.support.images import png
from tests.support.interactive import spawn
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
]


def test_an_at_screenshot_turn_reaches_the_executor_as_an_image(project: Project) -> None:
    shot = png(32, 24, seed=3)
    (project.root / "screenshot.png").write_bytes(shot)
    (project.root / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 8)
    project.ex.push(Reply.text("The button is cut off."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("what is wrong in @huge.png?")
        child.expect("not sent")
        child.expect("›")
        child.sendline("what is wrong in @screenshot.png?")
        child.expect("attached @screenshot.png")
        child.expect("The button is cut off.")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert len(project.ex.requests) == 1  # the refused image sent nothing
    user = project.ex.requests[0].messages[-1]
    assert user["content"][0]["text"].startswith("what is wrong in @screenshot.png?")
    url = "data:image/png;base64," + base64.b64encode(shot).decode()
    assert user["content"][1] == {"type": "image_url", "image_url": {"url": url}}
