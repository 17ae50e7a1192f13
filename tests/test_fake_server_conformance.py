"""The fake server is as strict as DeepSeek's documentation (shared/reference/deepseek-api.md,
revised 2026-12-01): one test per documented rule, named after it, over plain HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import REASONING_MUST_BE_PASSED

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
CALL_ID = "call_00_" + "q" * 24
CALL_TURN = {
    "role": "assistant",
    "content": "",
    "reasoning_content": "I should read it.",
    "tool_calls": [
        {
            "id": CALL_ID,
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path":"a"}'},
        }
    ],
}
TOOL_ANSWER = {"role": "tool", "tool_call_id": CALL_ID, "content": "contents of a"}
LONG_SYSTEM = "You are a careful coding agent working in a repository. " * 40


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def answer(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **extra}


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "deepseek-flash", "messages": messages, **extra}


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def post(http: httpx.Client, srv: FakeDeepSeekServer, payload: Any) -> httpx.Response:
    return http.post(srv.base_url + "/chat/completions", json=payload)


def stream(http: httpx.Client, srv: FakeDeepSeekServer, payload: dict[str, Any]) -> bytes:
    """The raw SSE bytes received before the body ended or broke."""
    received = bytearray()
    with http.stream(
        "POST", srv.base_url + "/chat/completions", json={**payload, "stream": True}
    ) as response:
        try:
            for piece in response.iter_raw():
                received += piece
        except httpx.HTTPError:
            pass
    return bytes(received)


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return dict(error)


# -- the reasoning rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "earlier",
    [
        pytest.param([user("a"), answer("A final answer.")], id="final-answer"),
        pytest.param(
            [user("a"), {k: v for k, v in CALL_TURN.items() if k != "reasoning_content"}],
            id="tool-call-turn",
        ),
        pytest.param([user("a"), answer("[interrupted before the answer]")], id="host-written"),
        pytest.param([user("a"), answer("x", reasoning_content=None)], id="null-reasoning"),
    ],
)
def test_reasoning_rule_with_tools_every_earlier_assistant_message_needs_reasoning(
    http: httpx.Client, earlier: list[dict[str, Any]]
) -> None:
    messages = [*earlier, TOOL_ANSWER] if earlier[-1].get("tool_calls") else earlier
    with FakeDeepSeekServer([Reply.text("unused")]) as srv:
        r = post(http, srv, body([*messages, user("next")], tools=TOOLS))
        error = error_of(r, 400)
        assert srv.remaining == 1
    assert error["message"] == REASONING_MUST_BE_PASSED
    assert error["type"] == "invalid_request_error"


def test_reasoning_rule_accepts_an_empty_string(http: httpx.Client) -> None:
    messages = [user("a"), answer("A.", reasoning_content=""), user("b")]
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        assert post(http, srv, body(messages, tools=TOOLS)).status_code == 200


def test_reasoning_rule_is_ignored_without_tools(http: httpx.Client) -> None:
    messages = [user("a"), answer("A."), user("b")]
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        assert post(http, srv, body(messages)).status_code == 200


def test_reasoning_rule_does_not_apply_with_thinking_disabled(http: httpx.Client) -> None:
    messages = [user("a"), answer("A."), user("b")]
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        payload = body(messages, tools=TOOLS, thinking={"type": "disabled"})
        assert post(http, srv, payload).status_code == 200


# -- tools -------------------------------------------------------------------------------------


def test_at_most_128_tools(http: httpx.Client) -> None:
    def tools(n: int) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": f"t{i}"}} for i in range(n)]

    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        assert (
            "128" in error_of(post(http, srv, body([user("a")], tools=tools(129))), 400)["message"]
        )
        assert post(http, srv, body([user("a")], tools=tools(128))).status_code == 200


@pytest.mark.parametrize("name", ["read file", "a" * 65, "", "café", "mcp.tool"])
def test_tool_name_pattern(http: httpx.Client, name: str) -> None:
    tools = [{"type": "function", "function": {"name": name}}]
    with FakeDeepSeekServer() as srv:
        assert (
            "a-zA-Z0-9_-"
            in error_of(post(http, srv, body([user("a")], tools=tools)), 400)["message"]
        )


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "read_file"}}]
)
def test_tool_choice_required_or_named_is_rejected_in_thinking_mode(
    http: httpx.Client, choice: Any
) -> None:
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        payload = body([user("a")], tools=TOOLS, tool_choice=choice)
        assert error_of(post(http, srv, payload), 400)["param"] == "tool_choice"
        off = {**payload, "thinking": {"type": "disabled"}}
        assert post(http, srv, off).status_code == 200


# -- effort ------------------------------------------------------------------------------------


@pytest.mark.parametrize("effort", ["extreme", "none", "off", "HIGH"])
def test_unknown_effort_is_422_unknown_variant(http: httpx.Client, effort: str) -> None:
    with FakeDeepSeekServer() as srv:
        error = error_of(post(http, srv, body([user("a")], reasoning_effort=effort)), 422)
    assert "unknown variant" in error["message"]


@pytest.mark.parametrize(
    ("alias", "level"),
    [("minimal", "low"), ("medium", "high"), ("xhigh", "high"), ("ultra", "max")],
)
def test_effort_aliases_are_mapped(http: httpx.Client, alias: str, level: str) -> None:
    """An alias runs at its level: it shares that level's cache (the effort is in its identity)."""
    messages = [{"role": "system", "content": LONG_SYSTEM}, user("a")]
    with FakeDeepSeekServer(handler=lambda r: Reply.text("ok")) as srv:
        assert post(http, srv, body(messages, reasoning_effort=level)).status_code == 200
        r = post(http, srv, body(messages, reasoning_effort=alias))
        assert r.status_code == 200
        assert r.json()["usage"]["prompt_cache_hit_tokens"] > 0


def test_effort_is_part_of_the_cache_identity(http: httpx.Client) -> None:
    messages = [{"role": "system", "content": LONG_SYSTEM}, user("a")]
    with FakeDeepSeekServer(handler=lambda r: Reply.text("ok")) as srv:
        post(http, srv, body(messages, reasoning_effort="high"))
        changed = post(http, srv, body(messages, reasoning_effort="max"))
        same = post(http, srv, body(messages, reasoning_effort="high"))
    assert changed.json()["usage"]["prompt_cache_hit_tokens"] == 0
    assert same.json()["usage"]["prompt_cache_hit_tokens"] > 0


# -- models ------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-reasoner"])
def test_retired_models_are_400(http: httpx.Client, model: str) -> None:
    with FakeDeepSeekServer() as srv:
        error = error_of(post(http, srv, {**body([user("a")]), "model": model}), 400)
    assert error["param"] == "model"
    assert "deepseek-flash" in error["message"]


def test_models_lists_only_todays_names_with_metadata(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        for path in ("/models", "/v1/models"):
            data = http.get(srv.base_url + path).json()["data"]
            assert [m["id"] for m in data] == ["deepseek-flash", "deepseek-v4-pro"]
            for entry in data:
                assert entry["context_window"] == 1_048_576
                assert entry["max_output_tokens"] == 393_216
                assert entry["effort"]["supported_levels"] == ["low", "high", "max"]
                assert entry["effort"]["default_level"] == "high"


def test_legacy_alias_is_accepted_but_not_listed(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        listed = [m["id"] for m in http.get(srv.base_url + "/models").json()["data"]]
        r = post(http, srv, {**body([user("a")]), "model": "deepseek-v4-flash"})
    assert "deepseek-v4-flash" not in listed
    assert r.status_code == 200


def test_user_balance(http: httpx.Client) -> None:
    with FakeDeepSeekServer(api_key="sk-good") as srv:
        assert http.get(srv.base_url + "/user/balance").status_code == 401
        r = http.get(srv.base_url + "/user/balance", headers={"Authorization": "Bearer sk-good"})
    data = r.json()
    assert data["is_available"] is True
    info = data["balance_infos"][0]
    assert info["currency"] in ("USD", "CNY")
    for key in ("total_balance", "granted_balance", "topped_up_balance"):
        assert isinstance(info[key], str)  # amounts are strings


def test_max_tokens_range(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        for bad in (0, 393_217):
            assert (
                "max_tokens"
                in error_of(post(http, srv, body([user("a")], max_tokens=bad)), 400)["message"]
            )
        assert post(http, srv, body([user("a")], max_tokens=393_216)).status_code == 200


# -- outcomes and breaks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "reason", ["aborted", "content_filter", "length", "insufficient_system_resource"]
)
def test_injectable_finish_reasons(http: httpx.Client, reason: str) -> None:
    with FakeDeepSeekServer([Reply(content="partial", finish_reason=reason)]) as srv:
        raw = stream(http, srv, body([user("a")]))
    finishes = [
        json.loads(e[6:])["choices"][0]["finish_reason"]
        for e in raw.decode().split("\n\n")
        if e.startswith("data: {")
    ]
    assert finishes[-1] == reason


def _deltas(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for event in raw.decode(errors="replace").split("\n\n"):
        if event.startswith("data: {"):
            try:
                out.append(json.loads(event[6:])["choices"][0]["delta"])
            except ValueError:
                pass  # the event the cut went through
    return out


FULL = Reply(
    content="Here is the plan for the change, in a few words. ",
    reasoning="Let me think about which file to read first and why it matters. " * 2,
    tool_calls=Reply.call("read_file", {"path": "src/long/path/to/module.py"}).tool_calls,
)


@pytest.mark.parametrize("part", ["reasoning", "text", "tool_arguments"])
def test_mid_stream_cut_at_a_chosen_part(http: httpx.Client, part: Any) -> None:
    with FakeDeepSeekServer([Reply(**{**FULL.__dict__, "fault": Fault(cut_in=part)})]) as srv:
        raw = stream(http, srv, body([user("a")]))
        assert srv.requests[0].usage is None  # a cut answer reports no usage
    deltas = _deltas(raw)
    assert b"[DONE]" not in raw
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    text = "".join(d.get("content") or "" for d in deltas)
    args = "".join(
        (c.get("function") or {}).get("arguments") or ""
        for d in deltas
        for c in d.get("tool_calls") or ()
    )
    assert FULL.reasoning is not None
    expected_args = FULL.tool_calls[0].arguments
    if part == "reasoning":
        assert reasoning and len(reasoning) < len(FULL.reasoning) and not text
    elif part == "text":
        assert reasoning == FULL.reasoning
        assert text and len(text) < len(FULL.content) and not args
    else:
        assert text == FULL.content
        assert args and len(args) < len(expected_args)


def _read_until_silent(url: str, payload: dict[str, Any], received: bytearray) -> None:
    with (
        httpx.Client(timeout=httpx.Timeout(30, read=2.0)) as short,
        short.stream("POST", url, json={**payload, "stream": True}) as response,
    ):
        for piece in response.iter_raw():
            received += piece


@pytest.mark.slow
def test_silent_stall_at_a_chosen_part(http: httpx.Client) -> None:
    reply = Reply(**{**FULL.__dict__, "fault": Fault(stall_in="text", stall_seconds=30)})
    received = bytearray()
    with FakeDeepSeekServer([reply]) as srv, pytest.raises(httpx.ReadTimeout):
        _read_until_silent(srv.base_url + "/chat/completions", body([user("a")]), received)
    deltas = _deltas(bytes(received))
    assert any(d.get("content") for d in deltas)  # output had started
    assert b"[DONE]" not in received


# -- the cache ---------------------------------------------------------------------------------


def test_measured_cache_formula(http: httpx.Client) -> None:
    """A fully matched prefix of n tokens hits 128 * max(0, floor(n / 128) - 1)."""
    with FakeDeepSeekServer(handler=lambda r: Reply.text("ok"), cache_formula="measured") as srv:
        for repeat in (4, 40, 80):
            messages = [{"role": "system", "content": "abcd" * 30 * repeat}, user("same")]
            post(http, srv, body(messages))
            r = post(http, srv, body(messages))
            n = r.json()["usage"]["prompt_tokens"]
            assert r.json()["usage"]["prompt_cache_hit_tokens"] == 128 * max(0, n // 128 - 1)
