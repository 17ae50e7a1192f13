"""Images over DeepSeek's 32 MiB inline limit, through the real CLI against the fake server:
uploaded once per session through the Files API (``POST /files``, purpose before file), sent
as a ``file`` part whose id is stored with the message, so the next turn, in a new process,
sends the same bytes and uploads nothing; over the Files API's 64 MiB the image is refused
with a clear message before any request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonix import images
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.image_cli import image_urls, run, setup
from tests.support.images import large_gif, png

pytestmark = pytest.mark.slow

MiB = 1024 * 1024


def file_parts(request: RecordedRequest) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, list):
            parts += [p for p in content if p.get("type") == "file"]
    return parts


def test_an_image_over_the_inline_limit_is_uploaded_once_and_sent_as_a_file_part(
    tmp_path: Path,
) -> None:
    big = large_gif(images.MAX_IMAGE_BYTES + 1, seed=1)
    with FakeDeepSeekServer([Reply.text("a big chart"), Reply.text("still a chart")]) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "chart.gif").write_bytes(big)
        code, out = run(["what is this?", "--image", "chart.gif"], repo, env)
        assert code == 0, out
        [upload] = srv.files.uploads
        assert upload.status == 200 and upload.fields == ["purpose", "file"]
        assert upload.purpose == "user_data" and upload.filename == "chart.gif"
        assert srv.files.get(upload.file_id or "") is not None
        first = srv.requests[0]
        assert file_parts(first) == [{"type": "file", "file_id": upload.file_id}]
        assert image_urls(first) == []  # nothing of it inline
        assert len(first.raw_body) < MiB
        # the same bytes again, in the next turn of the session (a new process): no upload,
        # and the first request's messages come back byte for byte
        code, out = run(["-c", "and again?", "--image", "chart.gif"], repo, env)
        assert code == 0, out
        assert len(srv.files.uploads) == 1
        second = srv.requests[1]
        assert file_parts(second) == [{"type": "file", "file_id": upload.file_id}] * 2
        sent = [json.dumps(m) for m in first.messages]
        assert [json.dumps(m) for m in second.messages[: len(sent)]] == sent
        assert all(r.status == 200 for r in srv.requests), [r.error for r in srv.requests]


def test_an_image_over_the_files_api_limit_is_refused_before_any_request(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "huge.gif").write_bytes(large_gif(images.MAX_FILE_IMAGE_BYTES + 1))
        code, out = run(["look", "--image", "huge.gif"], repo, env)
        assert code == 2, out
        assert "at most 67,108,864 (64 MiB) for one image through its Files API" in out
        assert "nothing was sent" in out
        assert srv.requests == [] and srv.files.uploads == []


def test_a_refused_upload_ends_the_turn_with_the_reason_and_sends_no_chat_request(
    tmp_path: Path,
) -> None:
    with FakeDeepSeekServer() as srv:
        srv.files.max_files = 0  # the account's file quota is used up
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "chart.gif").write_bytes(large_gif(images.MAX_IMAGE_BYTES + 1))
        code, out = run(["what is this?", "--image", "chart.gif"], repo, env)
        assert code != 0, out
        assert "image upload failed" in out and "file quota" in out
        assert [u.status for u in srv.files.uploads] == [400]
        assert srv.requests == []


def test_a_refused_upload_in_a_planned_turn_is_said_and_sends_nothing(tmp_path: Path) -> None:
    # The planner cannot see images: the executor's model describes them first, after the
    # upload; a refused upload there ends the turn with the reason, not a traceback.
    with FakeDeepSeekServer() as srv:
        srv.files.max_files = 0
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "chart.gif").write_bytes(large_gif(images.MAX_IMAGE_BYTES + 1))
        code, out = run(["/plan what is this?", "--image", "chart.gif"], repo, env)
        assert code != 0, out
        assert "Traceback" not in out, out
        assert "could not be prepared for the planner" in out and "file quota" in out, out
        assert [u.status for u in srv.files.uploads] == [400]
        assert srv.requests == []


def test_a_small_image_stays_inline_and_uploads_nothing(tmp_path: Path) -> None:
    with FakeDeepSeekServer([Reply.text("small")]) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "s.png").write_bytes(png(8, 8))
        assert run(["look", "--image", "s.png"], repo, env)[0] == 0
        assert srv.files.uploads == [] and len(image_urls(srv.requests[0])) == 1
