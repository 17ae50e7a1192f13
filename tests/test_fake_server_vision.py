"""The fake server's vision and search rules, one test per documented rule
(shared/reference/deepseek-api.md, "Vision (image input)" and "Search and Fetch APIs")."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reasonix import images
from reasonix.testing import FakeDeepSeekServer, Reply
from tests.support.images import gif, jpeg_header, png, webp


def image_part(data: bytes, mime: str = "image/png", **extra: Any) -> dict[str, Any]:
    url = f"data:{mime};base64," + base64.b64encode(data).decode()
    return {"type": "image_url", "image_url": {"url": url, **extra}}


def user_with(*parts: dict[str, Any], text: str = "What is in the picture?") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}, *parts]}


def post(srv: FakeDeepSeekServer, http: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return http.post(f"{srv.base_url}/chat/completions", json=body)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def test_models_say_which_model_accepts_images(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        data = http.get(f"{srv.base_url}/models").json()["data"]
    modalities = {m["id"]: m["input_modalities"] for m in data}
    assert modalities == {"deepseek-flash": ["text", "image"], "deepseek-v4-pro": ["text"]}


def test_flash_accepts_an_image_in_a_user_message(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("a cat")]) as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(image_part(png()))]})
        assert r.status_code == 200, r.text
        srv.assert_exhausted()


def test_a_text_only_model_refuses_an_image_with_the_documented_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("never")]) as srv:
        r = post(
            srv, http, {"model": "deepseek-v4-pro", "messages": [user_with(image_part(png()))]}
        )
    assert r.status_code == 400
    assert r.json()["error"]["message"] == "This model does not support image"


@pytest.mark.parametrize("role", ["system", "assistant"])
def test_images_in_system_or_assistant_messages_are_400(http: httpx.Client, role: str) -> None:
    msg = {"role": role, "content": [image_part(png())]}
    with FakeDeepSeekServer() as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [msg, user_with()]})
    assert r.status_code == 400
    assert "only in user and tool messages" in r.json()["error"]["message"]


def test_a_tool_message_may_carry_an_image(http: httpx.Client) -> None:
    call_id = "call_00_" + "i" * 24
    call = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "look",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "shot", "arguments": "{}"}}
        ],
    }
    tool = {"role": "tool", "tool_call_id": call_id, "content": [image_part(png())]}
    with FakeDeepSeekServer([Reply.text("seen")]) as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(), call, tool]})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (png(9, 7), "png"),
        (jpeg_header(640, 480), "jpeg"),
        (gif(5, 6), "gif"),
        (webp(300, 200), "webp"),
    ],
)
def test_formats_are_told_from_the_bytes_not_the_declared_type(
    http: httpx.Client, data: bytes, fmt: str
) -> None:
    info = images.sniff(data)
    assert info.format == fmt
    # a declared MIME type that lies does not matter: the bytes decide
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        body = {"model": "deepseek-flash", "messages": [user_with(image_part(data, "image/bmp"))]}
        assert post(srv, http, body).status_code == 200


def test_bytes_that_are_no_image_are_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        body = {"model": "deepseek-flash", "messages": [user_with(image_part(b"BM" + b"\0" * 64))]}
        r = post(srv, http, body)
    assert r.status_code == 400
    assert "not a JPEG, PNG, GIF or WebP" in r.json()["error"]["message"]


def test_an_image_over_8192_px_a_side_is_400(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        body = {"model": "deepseek-flash", "messages": [user_with(image_part(gif(8193, 10)))]}
        r = post(srv, http, body)
    assert r.status_code == 400 and "8192 px" in r.json()["error"]["message"]


def test_from_15_images_on_a_side_is_at_most_4096_px(http: httpx.Client) -> None:
    parts = [image_part(gif(5000, 10))] + [image_part(gif(10, 10)) for _ in range(14)]
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(*parts)]})
        assert r.status_code == 400 and "4096 px" in r.json()["error"]["message"]
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(*parts[:14])]})
        assert r.status_code == 200


def test_more_than_600_images_in_a_request_is_400(http: httpx.Client) -> None:
    tiny = image_part(gif(2, 2))
    with FakeDeepSeekServer() as srv:
        body = {"model": "deepseek-flash", "messages": [user_with(*[tiny] * 601)]}
        r = post(srv, http, body)
    assert r.status_code == 400 and "at most 600" in r.json()["error"]["message"]


@pytest.mark.slow
def test_one_image_over_32_mib_is_400(http: httpx.Client) -> None:
    big = gif(100, 100) + b"\0" * (images.MAX_IMAGE_BYTES)
    with FakeDeepSeekServer() as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(image_part(big))]})
    assert r.status_code == 400 and "32 MiB" in r.json()["error"]["message"]


def test_a_body_over_48_mib_is_400(http: httpx.Client) -> None:
    text = "x" * (images.MAX_BODY_BYTES + 10)
    with FakeDeepSeekServer() as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(text=text)]})
    assert r.status_code == 400 and "48 MiB" in r.json()["error"]["message"]


def test_an_unknown_detail_is_400_and_low_costs_fewer_tokens(http: httpx.Client) -> None:
    big = png(2000, 2000)
    with FakeDeepSeekServer([Reply.text("a"), Reply.text("b")]) as srv:
        bad = {"model": "deepseek-flash", "messages": [user_with(image_part(big, detail="tiny"))]}
        assert post(srv, http, bad).status_code == 400
        for detail in ("original", "low"):
            body = {
                "model": "deepseek-flash",
                "messages": [user_with(image_part(big, detail=detail), text=detail[:3])],
            }
            assert post(srv, http, body).status_code == 200
        original, low = (r.prompt_tokens or 0 for r in srv.requests[1:])
    assert original - low == images.image_tokens(2000, 2000) - images.image_tokens(
        2000, 2000, "low"
    )


def test_image_tokens_follow_the_rule_and_cap_at_1024(http: httpx.Client) -> None:
    assert images.image_tokens(10, 10) == images.image_tokens(544, 544)  # scaled up
    assert images.image_tokens(8000, 8000) == images.image_tokens(1300, 1300) <= 1024
    with FakeDeepSeekServer([Reply.text("a"), Reply.text("b")]) as srv:
        for parts in ((), (image_part(png(1300, 1300)),)):
            body = {"model": "deepseek-flash", "messages": [user_with(*parts)]}
            assert post(srv, http, body).status_code == 200
        plain, with_image = (r.prompt_tokens or 0 for r in srv.requests)
    assert with_image - plain == images.image_tokens(1300, 1300)


def test_the_same_image_sent_again_is_a_cache_hit_prefix(http: httpx.Client) -> None:
    def second_hit(second_seed: int) -> int:
        first = [user_with(image_part(png(600, 600, seed=3)))]
        again = [user_with(image_part(png(600, 600, seed=second_seed)))]
        later = [*again, {"role": "assistant", "content": "one"}, user_with(text="and now?")]
        with FakeDeepSeekServer([Reply.text("one"), Reply.text("two")]) as srv:
            for messages in (first, later):
                body = {"model": "deepseek-flash", "messages": messages}
                assert post(srv, http, body).status_code == 200
            return srv.requests[1].cache_hit_tokens or 0

    # the same bytes hit nearly the whole image; other bytes of the same size hit nothing
    assert second_hit(3) >= images.image_tokens(600, 600) - 64
    assert second_hit(4) == 0


def test_a_file_id_the_fake_never_issued_is_400(http: httpx.Client) -> None:
    part = {"type": "file", "file_id": "file-api-" + "0" * 32}
    with FakeDeepSeekServer() as srv:
        r = post(srv, http, {"model": "deepseek-flash", "messages": [user_with(part)]})
    assert r.status_code == 400 and "file not found" in r.json()["error"]["message"]


# -- search ------------------------------------------------------------------------------------


def search(
    srv: FakeDeepSeekServer, http: httpx.Client, body: Any, key: str = "sk"
) -> httpx.Response:
    return http.post(
        f"{srv.base_url}/v1/tools/search", json=body, headers={"Authorization": f"Bearer {key}"}
    )


def test_search_answers_deterministic_results_with_title_url_summary(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        a = search(srv, http, {"query": "DeepSeek V4 release", "count": 5}).json()
        b = search(srv, http, {"query": "DeepSeek V4 release", "count": 5}).json()
        assert a == b and len(a["results"]) == 5
        assert {"title", "url", "summary", "date"} <= set(a["results"][0])
        assert all(s.billed for s in srv.searches)


@pytest.mark.parametrize(
    "body", [{"query": ""}, {"query": "   "}, {"query": "q" * 129}, {"query": "x", "count": 51}]
)
def test_search_refuses_a_query_or_count_out_of_range(http: httpx.Client, body: Any) -> None:
    with FakeDeepSeekServer() as srv:
        r = search(srv, http, body)
        assert r.status_code == 400 and not srv.searches[0].billed


def test_search_with_a_wrong_key_is_401(http: httpx.Client) -> None:
    with FakeDeepSeekServer(api_key="sk-right") as srv:
        assert search(srv, http, {"query": "x"}, key="sk-wrong").status_code == 401


def test_empty_results_and_errors_are_not_billed(http: httpx.Client) -> None:
    with FakeDeepSeekServer(search_results=lambda q, n: []) as srv:
        srv.search_faults.append(500)
        assert search(srv, http, {"query": "x"}).status_code == 500
        assert search(srv, http, {"query": "x"}).json() == {"results": []}
        assert [s.billed for s in srv.searches] == [False, False]
