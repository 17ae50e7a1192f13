"""The fake speaks the recorded wire: each shape of DeepSeek's live answers, compared with small
samples in that shape (tests/fixtures/wire, written for this test; the shapes follow the live
streams vercel/ai recorded, see the README there), plus keep-alive connections, token-sized
deltas and an answering model that differs from the requested one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonix.providers.sse import SSEDecoder, StreamAssembler
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.answer_wire import compact

SAMPLES = Path(__file__).parent / "fixtures" / "wire"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
OFF = {"thinking": {"type": "disabled"}}


def sample_lines(name: str) -> list[str]:
    return (SAMPLES / name).read_text(encoding="utf-8").splitlines()


def skeleton(value: Any) -> Any:
    """The shape of a JSON value: keys kept, ``null`` and ``""`` kept apart from other
    strings, numbers and other text replaced by their type."""
    if isinstance(value, dict):
        return {k: skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [skeleton(v) for v in value]
    if value is None or value == "":
        return value
    if isinstance(value, str):
        return "<text>"
    return f"<{type(value).__name__}>"


def fingerprint(chunk: dict[str, Any]) -> str:
    return json.dumps(skeleton(chunk), sort_keys=True)


def shapes(lines: list[str]) -> tuple[str, set[str], dict[str, Any]]:
    """First chunk's shape, the set of middle chunk shapes, the last chunk."""
    chunks = [json.loads(line) for line in lines]
    return fingerprint(chunks[0]), {fingerprint(c) for c in chunks[1:-1]}, chunks[-1]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def streamed_lines(http: httpx.Client, srv: FakeDeepSeekServer, **extra: Any) -> list[str]:
    body = {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "hi"}]}
    body |= {"stream": True, "stream_options": {"include_usage": True}, **extra}
    r = http.post(srv.base_url + "/chat/completions", json=body)
    assert r.status_code == 200
    events = r.text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    return [e.removeprefix("data: ") for e in events[:-2]]


def assert_same_shape(ours: list[str], recorded: list[str]) -> None:
    first, middle, last = shapes(ours)
    r_first, r_middle, r_last = shapes(recorded)
    assert first == r_first
    assert middle == r_middle
    # The finishing delta may carry text (as in the non-thinking recording) or be empty.
    for chunk in (last, r_last):
        chunk["choices"][0]["delta"]["content"] = "<any>"
    assert fingerprint(last) == fingerprint(r_last)


# -- the shapes ------------------------------------------------------------------------------


def test_thinking_text_stream_has_the_recorded_shape(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("Hello!", reasoning="The user greets")]) as srv:
        ours = streamed_lines(http, srv)
    assert_same_shape(ours, sample_lines("thinking_text.jsonl"))
    first = json.loads(ours[0])["choices"][0]["delta"]
    assert first == {"role": "assistant", "content": None, "reasoning_content": ""}
    last = json.loads(ours[-1])["choices"][0]["delta"]
    assert last == {"content": "", "reasoning_content": None}


def test_thinking_tool_call_stream_has_the_recorded_shape(http: httpx.Client) -> None:
    reply = Reply.call("weather", {"city": "Oslo"}, reasoning="Look it up")
    with FakeDeepSeekServer([reply]) as srv:
        ours = streamed_lines(http, srv, tools=TOOLS)
    assert_same_shape(ours, sample_lines("thinking_tool_call.jsonl"))


def test_plain_text_stream_has_the_recorded_shape(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("Hello!", reasoning="unsent")]) as srv:
        ours = streamed_lines(http, srv, **OFF)
    assert_same_shape(ours, sample_lines("plain_text.jsonl"))
    usage = json.loads(ours[-1])["usage"]
    assert "completion_tokens_details" not in usage
    assert all("reasoning_content" not in line for line in ours)


def test_non_streamed_tool_call_has_the_recorded_shape(http: httpx.Client) -> None:
    reply = Reply.call("weather", {"city": "Oslo"}, reasoning="Look it up")
    body = {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "hi"}]}
    with FakeDeepSeekServer([reply]) as srv:
        r = http.post(srv.base_url + "/chat/completions", json=body | {"tools": TOOLS})
    recorded = json.loads((SAMPLES / "thinking_tool_call.json").read_text(encoding="utf-8"))
    assert fingerprint(r.json()) == fingerprint(recorded)
    assert r.json()["choices"][0]["message"]["tool_calls"][0]["index"] == 0


def test_json_is_compact_and_the_fingerprint_recorded_style(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("Hello, wide world!", reasoning="ok")]) as srv:
        ours = streamed_lines(http, srv)
    for line in ours:
        assert line.encode() == compact(json.loads(line))
    fp = json.loads(ours[0])["system_fingerprint"]
    recorded_fp = json.loads(sample_lines("thinking_text.jsonl")[0])["system_fingerprint"]
    assert len(fp) == len(recorded_fp) == 32
    assert int(fp, 16) >= 0 and not fp.startswith("fp_")


def test_the_recorded_samples_assemble_in_our_client() -> None:
    """The samples are real enough to drive the client: text, reasoning, calls, usage."""
    for name, text, reasoning in (
        ("thinking_text.jsonl", "Hello!", "The user greets"),
        ("plain_text.jsonl", "Hello!", None),
    ):
        assembler = StreamAssembler()
        decoder = SSEDecoder()
        wire = "".join(f"data: {line}\n\n" for line in sample_lines(name)) + "data: [DONE]\n\n"
        for sse in decoder.feed(wire.encode()):
            assembler.feed(sse)
        finished = assembler.finish()[-1]
        assert finished.message.content == text  # type: ignore[union-attr]
        assert finished.message.reasoning_content == reasoning  # type: ignore[union-attr]


# -- token-sized deltas ------------------------------------------------------------------------


def test_deltas_are_about_one_token_and_configurable(http: httpx.Client) -> None:
    text = "A sentence long enough to be streamed in many small pieces."
    args = {"city": "Oslo, Norway, the capital"}
    with FakeDeepSeekServer([Reply.text(text), Reply.call("weather", args)]) as srv:
        ours = streamed_lines(http, srv)
        calls = streamed_lines(http, srv, tools=TOOLS)
    pieces = [json.loads(x)["choices"][0]["delta"].get("content") for x in ours[1:-1]]
    assert "".join(pieces) == text
    assert max(len(p) for p in pieces) == 4  # chars_per_token: one token per chunk
    fragments = [
        frag["function"]["arguments"]
        for x in calls
        for frag in json.loads(x)["choices"][0]["delta"].get("tool_calls", [])
        if "id" not in frag
    ]
    assert "".join(fragments) == json.dumps(args)
    assert len(fragments) > 8  # not 3 or 4 big pieces
    with FakeDeepSeekServer([Reply.text(text)], delta_chars=1) as srv:
        ones = streamed_lines(http, srv)
    assert len(ones) == len(text) + 2


# -- connections and the answering model --------------------------------------------------------


def test_connections_are_kept_alive_by_default(http: httpx.Client) -> None:
    body = {"model": "deepseek-flash", "messages": [{"role": "user", "content": "hi"}]}
    with FakeDeepSeekServer([Reply.text("one"), Reply.text("two")]) as srv:
        first = http.post(srv.base_url + "/chat/completions", json=body | {"stream": True})
        second = http.post(srv.base_url + "/chat/completions", json=body)
        ports = [r.client_port for r in srv.requests]
    assert first.http_version == "HTTP/1.1"
    assert first.headers["transfer-encoding"] == "chunked"
    assert "connection" not in first.headers and "connection" not in second.headers
    assert ports[0] == ports[1]  # one connection served both


def test_keep_alive_can_be_switched_off(http: httpx.Client) -> None:
    body = {"model": "deepseek-flash", "messages": [{"role": "user", "content": "hi"}]}
    with FakeDeepSeekServer([Reply.text("one"), Reply.text("two")], keep_alive=False) as srv:
        first = http.post(srv.base_url + "/chat/completions", json=body)
        http.post(srv.base_url + "/chat/completions", json=body)
        ports = [r.client_port for r in srv.requests]
    assert first.headers["connection"] == "close"
    assert ports[0] != ports[1]


def test_the_answer_can_name_another_model(http: httpx.Client) -> None:
    answers = {"deepseek-v4-flash": "deepseek-flash"}
    with FakeDeepSeekServer([Reply.text("hi")], answer_model=answers) as srv:
        ours = streamed_lines(http, srv)
    assert {json.loads(x)["model"] for x in ours} == {"deepseek-flash"}
    assert srv.requests[0].model == "deepseek-v4-flash"
    assert srv.requests[0].answered_model == "deepseek-flash"
