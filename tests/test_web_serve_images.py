"""The dashboard sends images: a message's ``images`` (what the page's file pick or drop
sends) reach the executor as image parts through the real ``reasonix serve``; one that is no
image is a 400 with nothing sent; a large body needs a signed-in caller."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import httpx
import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from tests.support.images import png
from tests.support.project import Project
from tests.support.web import serve

pytestmark = pytest.mark.slow


@pytest.fixture
def proj(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    tmp = tmp_path_factory.mktemp("web")
    root = tmp / "proj"
    root.mkdir()
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        p = Project(root, tmp / "data", tmp / "cfg", ex, pl)
        p.config_dir.mkdir()
        p.write_toml()
        yield p


def test_a_message_with_images_reaches_the_executor(proj: Project) -> None:
    shot = png(30, 20, seed=8)
    proj.ex.push(Reply.text("A table."))
    with (
        serve(proj) as s,
        httpx.Client(base_url=s.base, timeout=30, headers={"Origin": s.base}) as c,
    ):
        # not signed in: a large body is refused before it is read as a message
        big = {"text": "x", "images": [{"name": "a.png", "data": "A" * 2_000_000}]}
        assert c.post("/api/sessions/nope/messages", json=big).status_code in (401, 403)
        csrf = c.post("/api/auth", json={"token": s.token}).json()["csrf"]
        h = {"X-CSRF-Token": csrf}
        sid = c.post("/api/sessions", json={}, headers=h).json()["id"]
        bad = {
            "text": "see",
            "images": [{"name": "a.png", "data": base64.b64encode(b"BM" * 9).decode()}],
        }
        r = c.post(f"/api/sessions/{sid}/messages", json=bad, headers=h)
        assert r.status_code == 400 and "not a JPEG, PNG, GIF or WebP" in r.json()["error"]
        assert proj.ex.requests == []
        good = {
            "text": "what is it?",
            "images": [{"name": "t.png", "data": base64.b64encode(shot).decode()}],
        }
        r = c.post(f"/api/sessions/{sid}/messages", json=good, headers=h)
        assert r.status_code == 200, r.text
        for _ in range(600):
            if proj.ex.requests:
                break
            time.sleep(0.05)
    user = proj.ex.requests[0].messages[-1]
    url = "data:image/png;base64," + base64.b64encode(shot).decode()
    assert user["content"][-1] == {"type": "image_url", "image_url": {"url": url}}
