"""The fake server's Files API, one test per documented rule (shared/reference/deepseek-api.md,
"Files API" and "Vision (image input)"): the upload form and its limits, the file object,
expiry, listing and deletion, and ``file`` parts in chat requests only for a known image id
and an image model."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reasonix import images
from reasonix.testing import FakeDeepSeekServer, Reply
from tests.support.images import gif, png

MiB = 1024 * 1024


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60) as client:
        yield client


def upload(
    srv: FakeDeepSeekServer,
    http: httpx.Client,
    data: bytes = b"",
    *,
    purpose: str | None = "user_data",
    filename: str = "shot.png",
    extra: dict[str, str] | None = None,
    path: str = "/files",
) -> httpx.Response:
    fields = {} if purpose is None else {"purpose": purpose}
    fields.update(extra or {})
    files = {"file": (filename, data or png(), "image/png")}
    return http.post(f"{srv.base_url}{path}", data=fields, files=files)


def raw_upload(
    srv: FakeDeepSeekServer, http: httpx.Client, parts: list[tuple[str, str | None, bytes]]
) -> httpx.Response:
    """A multipart body with the parts in exactly this order (name, file name, content)."""
    boundary = "b0undary"
    body = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content
        body += b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    return http.post(f"{srv.base_url}/files", content=body, headers=headers)


def chat(
    srv: FakeDeepSeekServer,
    http: httpx.Client,
    *parts: dict[str, Any],
    model: str = "deepseek-flash",
) -> httpx.Response:
    content = [{"type": "text", "text": "What is in it?"}, *parts]
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    return http.post(f"{srv.base_url}/chat/completions", json=body)


def error(r: httpx.Response) -> str:
    return str(r.json()["error"]["message"])


def test_an_image_upload_answers_the_documented_file_object(http: httpx.Client) -> None:
    shot = png(30, 20)
    with FakeDeepSeekServer() as srv:
        r = upload(srv, http, shot)
        assert r.status_code == 200, r.text
        obj = r.json()
        assert set(obj) == {"id", "object", "bytes", "created_at", "filename", "purpose"}
        assert re.fullmatch(r"file-api-[0-9a-f]{32}", obj["id"])
        assert obj["object"] == "file" and obj["bytes"] == len(shot)
        assert obj["filename"] == "shot.png" and obj["purpose"] == "user_data"
        assert isinstance(obj["created_at"], int)
        # the same base with /v1 serves it too
        assert upload(srv, http, shot, path="/v1/files").status_code == 200


@pytest.mark.parametrize(
    ("purpose", "said"), [(None, "purpose is required"), ("vision", "not one of")]
)
def test_a_missing_or_unknown_purpose_is_400(
    http: httpx.Client, purpose: str | None, said: str
) -> None:
    with FakeDeepSeekServer() as srv:
        r = upload(srv, http, purpose=purpose)
        assert r.status_code == 400 and said in error(r)
        assert srv.files.live() == []


def test_purpose_must_come_before_file_in_the_form(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        late = raw_upload(srv, http, [("file", "a.png", png()), ("purpose", None, b"user_data")])
        early = raw_upload(srv, http, [("purpose", None, b"user_data"), ("file", "a.png", png())])
    assert late.status_code == 400 and "purpose must come before file" in error(late)
    assert early.status_code == 200, early.text


def test_an_upload_without_a_file_is_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = raw_upload(srv, http, [("purpose", None, b"user_data"), ("file", None, png())])
    assert r.status_code == 400 and "file is required" in error(r)


def test_an_upload_that_is_not_multipart_is_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = http.post(f"{srv.base_url}/files", json={"purpose": "user_data"})
    assert r.status_code == 400 and "multipart/form-data" in error(r)


def test_a_file_name_over_512_characters_is_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        long = upload(srv, http, filename="a" * 509 + ".png")
        ok = upload(srv, http, filename="a" * 508 + ".png")
    assert long.status_code == 400 and "1 to 512 characters" in error(long)
    assert ok.status_code == 200


def test_an_image_upload_is_told_from_its_bytes(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = upload(srv, http, b"BM" + b"\0" * 64, filename="looks.png")
    assert r.status_code == 400 and "not a JPEG, PNG, GIF or WebP" in error(r)


@pytest.mark.slow
def test_an_image_over_64_mib_is_400_and_up_to_64_mib_is_kept(http: httpx.Client) -> None:
    head = gif(64, 64)
    with FakeDeepSeekServer() as srv:
        over = upload(srv, http, head + b"\0" * (64 * MiB - len(head) + 1), filename="a.gif")
        at = upload(srv, http, head + b"\0" * (64 * MiB - len(head)), filename="b.gif")
    assert over.status_code == 400 and "64 MiB" in error(over)
    assert at.status_code == 200 and at.json()["bytes"] == 64 * MiB


def test_documents_are_refused_as_not_modelled(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = upload(srv, http, b"%PDF-1.7", purpose="text_recognition", filename="a.pdf")
    assert r.status_code == 400 and "cannot parse documents" in error(r)


def test_an_upload_with_a_wrong_key_is_401(http: httpx.Client) -> None:
    with FakeDeepSeekServer(api_key="sk-right") as srv:
        r = http.post(
            f"{srv.base_url}/files",
            data={"purpose": "user_data"},
            files={"file": ("a.png", png(), "image/png")},
            headers={"Authorization": "Bearer sk-wrong"},
        )
        assert r.status_code == 401 and srv.files.live() == []


def test_expiry_sets_expires_at_and_an_expired_file_is_gone(http: httpx.Client) -> None:
    clock = [1_800_000_000.0]
    with FakeDeepSeekServer([Reply.text("never")]) as srv:
        srv.files.now = lambda: clock[0]
        extra = {"expires_after[anchor]": "created_at", "expires_after[seconds]": "3600"}
        obj = upload(srv, http, extra=extra).json()
        assert obj["expires_at"] == obj["created_at"] + 3600
        assert http.get(f"{srv.base_url}/files/{obj['id']}").status_code == 200
        clock[0] += 3600
        assert http.get(f"{srv.base_url}/files/{obj['id']}").status_code == 404
        r = chat(srv, http, {"type": "file", "file_id": obj["id"]})
        assert r.status_code == 400 and "file not found" in error(r)


@pytest.mark.parametrize(
    "extra",
    [
        {"expires_after[anchor]": "created_at", "expires_after[seconds]": "3599"},
        {"expires_after[anchor]": "created_at", "expires_after[seconds]": "2592001"},
        {"expires_after[anchor]": "last_active_at", "expires_after[seconds]": "3600"},
        {"expires_after[seconds]": "3600"},
    ],
)
def test_an_expiry_out_of_range_or_incomplete_is_400(
    http: httpx.Client, extra: dict[str, str]
) -> None:
    with FakeDeepSeekServer() as srv:
        r = upload(srv, http, extra=extra)
    assert r.status_code == 400 and "expires_after" in error(r)


def test_the_file_quota_is_enforced(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        srv.files.max_files = 1
        assert upload(srv, http).status_code == 200
        r = upload(srv, http)
    assert r.status_code == 400 and "file quota" in error(r)


def test_files_are_listed_fetched_and_deleted(http: httpx.Client) -> None:
    clock = [1_800_000_000.0]
    with FakeDeepSeekServer([Reply.text("never")]) as srv:
        srv.files.now = lambda: clock[0]
        ids = []
        for seed in range(3):
            ids.append(upload(srv, http, png(seed=seed)).json()["id"])
            clock[0] += 1
        listing = http.get(f"{srv.base_url}/files").json()
        assert listing["object"] == "list" and [f["id"] for f in listing["data"]] == ids[::-1]
        assert listing["first_id"] == ids[2] and listing["last_id"] == ids[0]
        page = http.get(f"{srv.base_url}/files", params={"order": "asc", "limit": 2}).json()
        assert [f["id"] for f in page["data"]] == ids[:2] and page["has_more"] is True
        rest = http.get(f"{srv.base_url}/files", params={"order": "asc", "after": ids[1]}).json()
        assert [f["id"] for f in rest["data"]] == ids[2:] and rest["has_more"] is False
        assert http.get(f"{srv.base_url}/files", params={"limit": 0}).status_code == 400
        assert http.get(f"{srv.base_url}/v1/files/{ids[0]}").json()["id"] == ids[0]
        gone = http.delete(f"{srv.base_url}/files/{ids[0]}")
        assert gone.json() == {"id": ids[0], "object": "file", "deleted": True}
        assert http.get(f"{srv.base_url}/files/{ids[0]}").status_code == 404
        assert http.delete(f"{srv.base_url}/files/{ids[0]}").status_code == 404
        r = chat(srv, http, {"type": "file", "file_id": ids[0]})
        assert r.status_code == 400 and "file not found" in error(r)


def test_a_file_part_with_a_known_id_reaches_an_image_model_and_counts_its_tokens(
    http: httpx.Client,
) -> None:
    shot = png(900, 700)
    with FakeDeepSeekServer([Reply.text("plain"), Reply.text("a chart")]) as srv:
        file_id = upload(srv, http, shot).json()["id"]
        assert chat(srv, http).status_code == 200
        r = chat(srv, http, {"type": "file", "file_id": file_id})
        assert r.status_code == 200, r.text
        plain, with_image = (q.prompt_tokens or 0 for q in srv.requests)
    assert with_image - plain == images.image_tokens(900, 700)


def test_a_file_part_to_a_text_only_model_is_the_documented_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        file_id = upload(srv, http).json()["id"]
        r = chat(srv, http, {"type": "file", "file_id": file_id}, model="deepseek-v4-pro")
    assert r.status_code == 400 and error(r) == "This model does not support image"


def test_filename_is_accepted_only_with_file_data(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        file_id = upload(srv, http).json()["id"]
        r = chat(srv, http, {"type": "file", "file_id": file_id, "filename": "a.png"})
    assert r.status_code == 400 and "filename is accepted only with file_data" in error(r)


@pytest.mark.slow
def test_a_file_image_skips_the_32_mib_inline_check_but_counts_toward_200_mib(
    http: httpx.Client,
) -> None:
    head = gif(64, 64)
    big = head + b"\0" * (51 * MiB)
    with FakeDeepSeekServer([Reply.text("a big picture")]) as srv:
        file_id = upload(srv, http, big, filename="big.gif").json()["id"]
        part = {"type": "file", "file_id": file_id}
        assert chat(srv, http, part).status_code == 200
        r = chat(srv, http, *[part] * 4)  # 204 MiB of images in one request
    assert r.status_code == 400 and "200 MiB" in error(r)
