"""FakeDeepSeekServer speaks DeepSeek's wire format: checked with plain httpx (exact bytes) and
with the official ``openai`` SDK (sync and async, streamed and not)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from reasonix.messages import ToolCall, Usage
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import (
    REASONING_MUST_BE_PASSED,
    RecordedRequest,
    render_prompt,
    tokenize,
)

MODEL = "deepseek-v4-flash"
SYSTEM = "You are a careful coding agent. " * 20
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def system(text: str = SYSTEM) -> dict[str, Any]:
    return {"role": "system", "content": text}


def body(messages: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": messages or [system(), user("hi")], **extra}


def call(name: str, args: dict[str, Any], call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(args))


def sse_data(raw: bytes) -> list[str]:
    """The ``data:`` payloads of an SSE body, checking the framing on the way."""
    text = raw.decode()
    assert text.endswith("\n\n")
    out = []
    for event in text[:-2].split("\n\n"):
        if event.startswith(":"):
            continue
        assert event.startswith("data: "), event
        out.append(event[len("data: ") :])
    return out


def chunks(raw: bytes) -> list[dict[str, Any]]:
    data = sse_data(raw)
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def post(
    http: httpx.Client, srv: FakeDeepSeekServer, payload: Any, **kwargs: Any
) -> httpx.Response:
    return http.post(srv.base_url + "/chat/completions", json=payload, **kwargs)


def collect_raw(client: httpx.Client, url: str, payload: Any, sink: bytearray) -> None:
    """Stream the raw body into ``sink``, so a test still sees what arrived before an error."""
    with client.stream("POST", url, json=payload) as r:
        for piece in r.iter_raw():
            sink += piece


def sdk(srv: FakeDeepSeekServer, api_key: str = "sk-test") -> OpenAI:
    return OpenAI(base_url=srv.base_url, api_key=api_key, max_retries=0, timeout=10)


def async_sdk(srv: FakeDeepSeekServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0, timeout=10)


def floor_units(n: int, unit: int = 64) -> int:
    return n // unit * unit


# ---------------------------------------------------------------------------------------------
# Lifecycle and recording


def test_serves_both_paths_and_records_requests(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("one"), Reply.text("two")]) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
        r1 = http.post(srv.base_url + "/chat/completions", json=body())
        r2 = http.post(
            srv.base_url + "/v1/chat/completions",
            json=body(),
            headers={"Authorization": "Bearer sk-x"},
        )
        assert r1.json()["choices"][0]["message"]["content"] == "one"
        assert r2.json()["choices"][0]["message"]["content"] == "two"
        assert [r.path for r in srv.requests] == ["/chat/completions", "/v1/chat/completions"]
        assert srv.requests[1].headers["authorization"] == "Bearer sk-x"
        assert srv.requests[0].body["messages"][1] == user("hi")
        assert srv.requests[0].usage is not None
        assert srv.last_request is srv.requests[1]
        assert http.post(srv.base_url + "/completions", json=body()).status_code == 404
        srv.assert_exhausted()


def test_close_is_clean_and_idempotent() -> None:
    srv = FakeDeepSeekServer().start()
    url = srv.base_url
    srv.close()
    srv.close()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    with httpx.Client() as client, pytest.raises(httpx.ConnectError):
        client.post(url + "/chat/completions", json=body())


def test_push_and_assert_exhausted(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        srv.push(Reply.text("a"), Reply.text("b"))
        assert srv.remaining == 2
        post(http, srv, body())
        with pytest.raises(AssertionError, match="1 scripted replies"):
            srv.assert_exhausted()
        post(http, srv, body())
        srv.assert_exhausted()


def test_script_exhausted_answers_500_and_is_visible(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = post(http, srv, body())
        assert r.status_code == 500
        assert "script exhausted" in r.json()["error"]["message"]
        assert srv.errors and "script exhausted" in srv.errors[0]
        assert srv.requests[0].status == 500
        assert srv.requests[0].usage is None
        with pytest.raises(AssertionError, match="script exhausted"):
            srv.assert_exhausted()


def test_handler_answers_after_the_script(http: httpx.Client) -> None:
    seen: list[RecordedRequest] = []

    def handler(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply.text(f"echo {request.messages[-1]['content']}")

    with FakeDeepSeekServer([Reply.text("scripted")], handler=handler) as srv:
        assert post(http, srv, body()).json()["choices"][0]["message"]["content"] == "scripted"
        r = post(http, srv, body([user("ping")]))
        assert r.json()["choices"][0]["message"]["content"] == "echo ping"
        assert seen == [srv.requests[1]]
        srv.assert_exhausted()


def test_handler_errors_become_500(http: httpx.Client) -> None:
    def handler(request: RecordedRequest) -> Reply:
        raise RuntimeError("boom")

    with FakeDeepSeekServer(handler=handler) as srv:
        r = post(http, srv, body())
        assert r.status_code == 500
        assert "boom" in r.json()["error"]["message"]
        assert "boom" in srv.errors[0]


async def test_async_context_manager_and_concurrent_requests() -> None:
    def handler(request: RecordedRequest) -> Reply:
        return Reply.text("answer to " + str(request.messages[-1]["content"]))

    async with FakeDeepSeekServer(handler=handler) as srv, async_sdk(srv) as client:

        async def ask(i: int) -> str:
            r = await client.chat.completions.create(model=MODEL, messages=[user(f"q{i}")])
            return r.choices[0].message.content or ""

        answers = await asyncio.gather(*(ask(i) for i in range(8)))
        assert answers == [f"answer to q{i}" for i in range(8)]
        assert sorted(r.index for r in srv.requests) == list(range(8))
        assert {r.messages[0]["content"] for r in srv.requests} == {f"q{i}" for i in range(8)}


# ---------------------------------------------------------------------------------------------
# Wire format: non-streamed


def test_non_streamed_completion_shape(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("Hello!", reasoning="The user greets me.")]) as srv:
        data = post(http, srv, body()).json()
    assert data["object"] == "chat.completion"
    assert data["model"] == MODEL
    assert isinstance(data["id"], str) and isinstance(data["created"], int)
    assert data["system_fingerprint"]
    choice = data["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"] == {
        "role": "assistant",
        "content": "Hello!",
        "reasoning_content": "The user greets me.",
    }
    usage = data["usage"]
    assert (
        usage["prompt_tokens"]
        == usage["prompt_cache_hit_tokens"] + usage["prompt_cache_miss_tokens"]
    )
    assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_cache_hit_tokens"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] > 0


def test_non_streamed_tool_call_turn(http: httpx.Client) -> None:
    tc = call("read_file", {"path": "a.py"}, "call_00_abcdefghijklmnopqrstuvwx")
    with FakeDeepSeekServer([Reply(tool_calls=(tc,), reasoning="Need the file.")]) as srv:
        data = post(http, srv, body(tools=TOOLS)).json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == ""  # empty string, not null
    assert message["reasoning_content"] == "Need the file."
    assert message["tool_calls"] == [
        {
            "index": 0,
            "id": "call_00_abcdefghijklmnopqrstuvwx",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        }
    ]


def test_openai_sdk_sync_non_streamed() -> None:
    with FakeDeepSeekServer([Reply.text("42", reasoning="Compute.")]) as srv, sdk(srv) as client:
        r = client.chat.completions.create(model=MODEL, messages=[system(), user("6*7?")])
    message = r.choices[0].message
    assert message.content == "42"
    assert (message.model_extra or {})["reasoning_content"] == "Compute."
    assert r.usage is not None
    extra = r.usage.model_extra or {}
    assert (
        r.usage.prompt_tokens
        == extra["prompt_cache_hit_tokens"] + extra["prompt_cache_miss_tokens"]
    )
    assert r.usage.prompt_tokens_details is not None
    assert r.usage.prompt_tokens_details.cached_tokens == extra["prompt_cache_hit_tokens"]
    assert Usage.from_api(r.usage.model_dump()) == srv.requests[0].usage


def test_openai_sdk_sync_non_streamed_tool_calls() -> None:
    reply = Reply.calls(("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"}))
    with FakeDeepSeekServer([reply]) as srv, sdk(srv) as client:
        r = client.chat.completions.create(
            model=MODEL,
            messages=[user("read both")],
            tools=TOOLS,
        )
    message = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert message.content == ""
    assert message.tool_calls is not None
    got = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
    assert got == [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls]
    assert all(c.id.startswith("call_") for c in message.tool_calls)
    # thinking mode: the model always reasons before calling tools
    assert getattr(message, "reasoning_content", None)


# ---------------------------------------------------------------------------------------------
# Wire format: streamed


def test_stream_framing_and_order(http: httpx.Client) -> None:
    reply = Reply.text("Hello there, friend.", reasoning="Think about greeting.")
    with FakeDeepSeekServer([reply]) as srv:
        r = post(http, srv, body(stream=True))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    items = chunks(r.content)
    for item in items:
        assert item["object"] == "chat.completion.chunk"
        assert item["model"] == MODEL
        assert item["id"] == items[0]["id"]
        assert item["system_fingerprint"]
        assert isinstance(item["created"], int)
    assert items[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "",
    }
    deltas = [c["choices"][0]["delta"] for c in items[1:-1]]
    kinds = ["r" if d.get("reasoning_content") else "c" for d in deltas]
    assert kinds == sorted(kinds, reverse=True)  # every reasoning delta before any content
    assert "".join(d["reasoning_content"] or "" for d in deltas) == reply.reasoning
    assert "".join(d["content"] or "" for d in deltas) == reply.content
    assert len(deltas) > 2  # streamed in several pieces
    # no include_usage: earlier chunks carry no usage field at all
    assert all("usage" not in c for c in items[:-1])
    last = items[-1]
    assert last["choices"][0]["finish_reason"] == "stop"
    assert all(c["choices"][0]["finish_reason"] is None for c in items[:-1])
    usage = last["usage"]
    assert (
        usage["prompt_tokens"]
        == usage["prompt_cache_hit_tokens"] + usage["prompt_cache_miss_tokens"]
    )
    assert Usage.from_api(usage) == srv.requests[0].usage


def test_stream_include_usage_sends_null_usage_on_earlier_chunks(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        r = post(http, srv, body(stream=True, stream_options={"include_usage": True}))
    items = chunks(r.content)
    assert all(c["usage"] is None for c in items[:-1])
    assert items[-1]["usage"]["total_tokens"] > 0
    assert items[-1]["choices"][0]["finish_reason"] == "stop"


def test_stream_tool_call_fragments(http: httpx.Client) -> None:
    first = call("read_file", {"path": "src/reasonix/messages.py"}, "call_00_" + "a" * 24)
    second = call("read_file", {"path": "README.md"}, "call_01_" + "b" * 24)
    reply = Reply(tool_calls=(first, second), reasoning="Read both.")
    with FakeDeepSeekServer([reply]) as srv:
        r = post(http, srv, body(tools=TOOLS, stream=True))
    items = chunks(r.content)
    fragments = [tc for c in items for tc in (c["choices"][0]["delta"].get("tool_calls") or [])]
    for index, expected in enumerate((first, second)):
        mine = [f for f in fragments if f["index"] == index]
        assert mine[0] == {
            "index": index,
            "id": expected.id,
            "type": "function",
            "function": {"name": expected.name, "arguments": ""},
        }
        rest = mine[1:]
        assert len(rest) >= 2  # arguments arrive in several fragments
        assert all(set(f) == {"index", "function"} for f in rest)
        assert all(set(f["function"]) == {"arguments"} for f in rest)
        assert "".join(f["function"]["arguments"] for f in rest) == expected.arguments
    assert items[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_openai_sdk_sync_stream_assembles_everything() -> None:
    tc = call("read_file", {"path": "a.py"}, "call_00_" + "c" * 24)
    reply = Reply(content="Let me look.", reasoning="I need a.py.", tool_calls=(tc,))
    with FakeDeepSeekServer([reply]) as srv, sdk(srv) as client:
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[user("look at a.py")],
            tools=TOOLS,
            stream=True,
        )
        content, reasoning, finish = "", "", None
        calls: dict[int, dict[str, str]] = {}
        usage = None
        with stream:
            for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    delta = choice.delta
                    content += delta.content or ""
                    reasoning += getattr(delta, "reasoning_content", None) or ""
                    for frag in delta.tool_calls or []:
                        slot = calls.setdefault(frag.index, {"id": "", "name": "", "args": ""})
                        if frag.id:
                            slot["id"] = frag.id
                        if frag.function and frag.function.name:
                            slot["name"] = frag.function.name
                        if frag.function and frag.function.arguments:
                            slot["args"] += frag.function.arguments
                    finish = choice.finish_reason or finish
    assert content == "Let me look."
    assert reasoning == "I need a.py."
    assert calls == {0: {"id": tc.id, "name": "read_file", "args": tc.arguments}}
    assert finish == "tool_calls"
    assert usage is not None
    assert usage.completion_tokens_details is not None
    assert (
        usage.completion_tokens_details.reasoning_tokens == srv.requests[0].usage.reasoning_tokens
    )


async def test_openai_sdk_async_stream_and_non_stream() -> None:
    replies = [Reply.text("streamed", reasoning="r1"), Reply.text("whole", reasoning="r2")]
    async with FakeDeepSeekServer(replies) as srv, async_sdk(srv) as client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=[user("a")],
            stream=True,
            stream_options={"include_usage": True},
        )
        text, thought = "", ""
        usage = None
        async with stream:
            async for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    thought += (choice.delta.model_extra or {}).get("reasoning_content") or ""
        assert (text, thought) == ("streamed", "r1")
        assert usage is not None and usage.total_tokens > 0
        r = await client.chat.completions.create(model=MODEL, messages=[user("b")])
        assert r.choices[0].message.content == "whole"
        assert getattr(r.choices[0].message, "reasoning_content", None) == "r2"
        srv.assert_exhausted()


# ---------------------------------------------------------------------------------------------
# Thinking mode


def test_thinking_disabled_sends_no_reasoning(http: httpx.Client) -> None:
    replies = [Reply.text("plain", reasoning="secret"), Reply.text("plain", reasoning="secret")]
    off = {"thinking": {"type": "disabled"}}
    with FakeDeepSeekServer(replies) as srv:
        whole = post(http, srv, body(**off)).json()
        streamed = post(http, srv, body(stream=True, **off)).content
    assert "reasoning_content" not in whole["choices"][0]["message"]
    assert "completion_tokens_details" not in whole["usage"]
    assert b"secret" not in streamed
    assert b"reasoning_content" not in streamed
    assert srv.requests[0].thinking is False


def test_thinking_tool_turn_without_scripted_reasoning_gets_some(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.call("read_file", {"path": "x"})]) as srv:
        message = post(http, srv, body(tools=TOOLS)).json()["choices"][0]["message"]
    assert message["reasoning_content"]
    assert srv.requests[0].thinking is True


# ---------------------------------------------------------------------------------------------
# usage_style="openai"


def test_openai_usage_style_separate_usage_chunk(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("hi")], usage_style="openai") as srv:
        r = post(http, srv, body(stream=True, stream_options={"include_usage": True}))
    items = chunks(r.content)
    finish = items[-2]
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert finish["usage"] is None
    last = items[-1]
    assert last["choices"] == []
    assert "prompt_cache_hit_tokens" not in last["usage"]
    assert last["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert Usage.from_api(last["usage"]) == srv.requests[0].usage


def test_openai_usage_style_without_include_usage_reports_none(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("hi")], usage_style="openai") as srv:
        r = post(http, srv, body(stream=True))
    assert all("usage" not in c for c in chunks(r.content))
    assert srv.requests[0].usage is None
    assert srv.requests[0].prompt_tokens


def test_openai_usage_style_with_the_sdk() -> None:
    with FakeDeepSeekServer([Reply.text("hi")], usage_style="openai") as srv, sdk(srv) as client:
        stream = client.chat.completions.create(
            model=MODEL, messages=[user("x")], stream=True, stream_options={"include_usage": True}
        )
        with stream:
            got = list(stream)
    assert got[-1].choices == []
    assert got[-1].usage is not None
    assert got[-1].usage.prompt_tokens == srv.requests[0].prompt_tokens


# ---------------------------------------------------------------------------------------------
# Prefix cache over HTTP


def prompt_len(messages: list[dict[str, Any]], tools: list[Any] | None = None) -> int:
    payload: dict[str, Any] = {"messages": messages}
    if tools:
        payload["tools"] = tools
    return len(tokenize(render_prompt(payload)))


A = [system("You are a helpful assistant. " * 30)]
B = [user("Please summarise the following design document in detail. " * 12)]
C = [user("Now list the open questions it raises. " * 9)]
D = [user("Translate the summary to French, keeping headings. " * 7)]


def test_documented_cache_examples_over_http(http: httpx.Client) -> None:
    with FakeDeepSeekServer(handler=lambda r: Reply.text("ok")) as srv:
        assert prompt_len(A) % 64 != 0  # so "up to unit rounding" is exercised

        first = post(http, srv, body(A + B)).json()["usage"]
        assert first["prompt_cache_hit_tokens"] == 0
        assert first["prompt_cache_miss_tokens"] == first["prompt_tokens"] == prompt_len(A + B)

        # A+B then A+B+C hits A+B
        second = post(http, srv, body(A + B + C)).json()["usage"]
        assert second["prompt_cache_hit_tokens"] == floor_units(prompt_len(A + B))
        assert second["prompt_tokens_details"]["cached_tokens"] == floor_units(prompt_len(A + B))

        # A+C misses: nothing stored ends inside A
        assert post(http, srv, body(A + C)).json()["usage"]["prompt_cache_hit_tokens"] == 0
        # ... but A is now known to be shared, so A+D hits A
        fourth = post(http, srv, body(A + D)).json()["usage"]
        assert fourth["prompt_cache_hit_tokens"] == floor_units(prompt_len(A))
        assert [r.cache_hit_tokens for r in srv.requests] == [
            0,
            floor_units(prompt_len(A + B)),
            0,
            floor_units(prompt_len(A)),
        ]


@pytest.mark.parametrize(("unit", "count_last"), [(64, True), (128, False), (16, True)])
def test_pure_append_session_hits_everything_replayed(
    http: httpx.Client, unit: int, count_last: bool
) -> None:
    """Each request replays the previous answer verbatim: it hits input + output, rounded down."""
    script = [
        Reply.call("read_file", {"path": f"src/file_{i}.py"}, reasoning=f"Step {i}: read more.")
        for i in range(5)
    ] + [Reply.text("All done: the files look fine.", reasoning="Wrap up.")]
    with FakeDeepSeekServer(script, unit_tokens=unit, count_last_unit=count_last) as srv:
        messages: list[dict[str, Any]] = A + B
        for step in range(len(script)):
            data = post(http, srv, body(messages, tools=TOOLS)).json()
            message = data["choices"][0]["message"]
            record = srv.requests[-1]
            assert record.prompt_tokens == data["usage"]["prompt_tokens"]
            if step:
                previous = srv.requests[-2].stored_tokens_after_output
                assert previous is not None
                assert data["usage"]["prompt_cache_hit_tokens"] == floor_units(previous, unit)
            messages = [*messages, message]
            for tool_call in message.get("tool_calls") or []:
                messages.append(
                    {"role": "tool", "tool_call_id": tool_call["id"], "content": "x = 1\n" * 20}
                )
        # the stored length is exactly what the next request replays
        final = srv.requests[-1]
        assert final.stored_tokens_after_output == prompt_len(
            [*srv.requests[-1].messages, message], TOOLS
        )
        srv.assert_exhausted()


def test_pure_append_with_the_sdk_stream() -> None:
    """The same through the openai SDK, streaming, rebuilding the assistant message."""
    script = [Reply.call("read_file", {"path": "a.py"}, reasoning="Look."), Reply.text("Done.")]
    with FakeDeepSeekServer(script) as srv, sdk(srv) as client:
        messages: list[Any] = [*A, *B]
        for _ in script:
            stream = client.chat.completions.create(
                model=MODEL,
                messages=messages,
                tools=TOOLS,
                stream=True,
            )
            content, reasoning = "", ""
            calls: dict[int, dict[str, Any]] = {}
            with stream:
                for chunk in stream:
                    for choice in chunk.choices:
                        content += choice.delta.content or ""
                        reasoning += getattr(choice.delta, "reasoning_content", None) or ""
                        for f in choice.delta.tool_calls or []:
                            slot = calls.setdefault(
                                f.index,
                                {"id": f.id, "type": "function", "function": {"arguments": ""}},
                            )
                            if f.function and f.function.name:
                                slot["function"]["name"] = f.function.name
                            if f.function and f.function.arguments:
                                slot["function"]["arguments"] += f.function.arguments
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["reasoning_content"] = reasoning
                message["tool_calls"] = [calls[i] for i in sorted(calls)]
            messages.append(message)
            for c in message.get("tool_calls", []):
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": "data"})
        first, second = srv.requests
        assert first.stored_tokens_after_output is not None
        assert second.usage is not None
        assert second.usage.cache_hit_tokens == floor_units(first.stored_tokens_after_output)


def test_changing_history_breaks_the_cache(http: httpx.Client) -> None:
    with FakeDeepSeekServer(handler=lambda r: Reply.text("ok")) as srv:
        post(http, srv, body(A + B))
        edited = [system("You are a helpful assistant. Today is Monday. " * 20)]
        assert post(http, srv, body(edited + B)).json()["usage"]["prompt_cache_hit_tokens"] == 0


def test_cache_is_per_model_and_can_be_reset(http: httpx.Client) -> None:
    with FakeDeepSeekServer(handler=lambda r: Reply.text("ok")) as srv:
        post(http, srv, body(A + B))
        other = {**body(A + B + C), "model": "deepseek-v4-pro"}
        assert post(http, srv, other).json()["usage"]["prompt_cache_hit_tokens"] == 0
        assert post(http, srv, body(A + B + C)).json()["usage"]["prompt_cache_hit_tokens"] > 0
        srv.reset_cache()
        assert post(http, srv, body(A + B + C)).json()["usage"]["prompt_cache_hit_tokens"] == 0


def test_reasoning_of_turns_without_tool_calls_is_not_part_of_the_prefix(
    http: httpx.Client,
) -> None:
    """Sending or dropping ignored reasoning gives the same tokens (the API ignores it)."""
    with_reasoning = {"role": "assistant", "content": "Hi.", "reasoning_content": "long " * 50}
    without = {"role": "assistant", "content": "Hi."}
    assert prompt_len([*A, user("a"), with_reasoning]) == prompt_len([*A, user("a"), without])


def test_chars_per_token_setting(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("ok")], chars_per_token=2) as srv:
        post(http, srv, body(A))
    assert srv.requests[0].prompt_tokens == len(tokenize(render_prompt({"messages": A}), 2))


# ---------------------------------------------------------------------------------------------
# Validation


def assert_400(response: httpx.Response, fragment: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert fragment in error["message"]


ASSISTANT_CALL = {
    "role": "assistant",
    "content": "",
    "reasoning_content": "Look at it.",
    "tool_calls": [
        {
            "id": "call_00_" + "z" * 24,
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path":"a"}'},
        }
    ],
}
NO_REASONING_CALL = {k: v for k, v in ASSISTANT_CALL.items() if k != "reasoning_content"}
TOOL_ANSWER = {"role": "tool", "tool_call_id": "call_00_" + "z" * 24, "content": "a"}


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"model": MODEL}, "messages"),
        ({"model": MODEL, "messages": []}, "messages"),
        (body([{"role": "developer", "content": "x"}]), "developer"),
        (body([{"role": "narrator", "content": "x"}]), "narrator"),
        (body([{"content": "x"}]), "unknown variant"),
        (body([user("x")], tools=[{**TOOLS[0], "function": {"name": "read file"}}]), "name"),
        (body([user("x")], tools=[{**TOOLS[0], "function": {"name": "a" * 65}}]), "name"),
        (
            body(
                [user("x")],
                tools=[{"type": "function", "function": {"name": f"t{i}"}} for i in range(129)],
            ),
            "128",
        ),
        (body([user("x"), {**ASSISTANT_CALL}, {**TOOL_ANSWER, "tool_call_id": "nope"}]), "tool"),
        (body([TOOL_ANSWER, user("x")]), "preceding"),
        (body([user("x"), ASSISTANT_CALL, user("y")]), "insufficient tool messages"),
        (
            body([user("x"), NO_REASONING_CALL, TOOL_ANSWER], tools=TOOLS),
            REASONING_MUST_BE_PASSED,
        ),
        (
            body([user("x"), {"role": "assistant", "content": "hi"}, user("y")], tools=TOOLS),
            REASONING_MUST_BE_PASSED,
        ),
        (body(tool_choice="required", tools=TOOLS), "tool_choice"),
        (
            body(tool_choice={"type": "function", "function": {"name": "read_file"}}, tools=TOOLS),
            "tool_choice",
        ),
        (body(tool_choice="sometimes"), "tool_choice"),
        (body(thinking={"type": "maybe"}), "thinking"),
        (body(response_format={"type": "json_schema"}), "response_format"),
        ({"messages": [user("x")]}, "Model Not Exist"),
        ([1, 2, 3], "JSON object"),
    ],
)
def test_validation_rejects(http: httpx.Client, payload: Any, fragment: str) -> None:
    with FakeDeepSeekServer([Reply.text("unused")]) as srv:
        assert_400(post(http, srv, payload), fragment)
        assert srv.remaining == 1  # a rejected request consumes no scripted reply
        assert srv.requests[0].status == 400
        assert srv.requests[0].usage is None


def test_reasoning_content_rule_message_is_exact(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = post(http, srv, body([user("x"), NO_REASONING_CALL, TOOL_ANSWER], tools=TOOLS))
    assert r.json()["error"]["message"] == REASONING_MUST_BE_PASSED


@pytest.mark.parametrize(
    "payload",
    [
        # without thinking, reasoning_content need not come back and tool_choice is free
        body(
            [user("x"), NO_REASONING_CALL, TOOL_ANSWER],
            thinking={"type": "disabled"},
        ),
        body(tool_choice="required", tools=TOOLS, thinking={"type": "disabled"}),
        body(
            tool_choice={"type": "function", "function": {"name": "read_file"}},
            tools=TOOLS,
            thinking={"type": "disabled"},
        ),
        # a complete, valid tool round trip in thinking mode
        body([system(), user("x"), ASSISTANT_CALL, TOOL_ANSWER], tools=TOOLS),
        # without tools in the request, earlier reasoning may be left out (it is ignored)
        body([user("x"), {"role": "assistant", "content": "hi"}, user("y")]),
        body([user("x"), NO_REASONING_CALL, TOOL_ANSWER]),
        body(tools=[{"type": "function", "function": {"name": "a-Z_9" + "x" * 59}}]),
        body(tools=[{"type": "function", "function": {"name": f"t{i}"}} for i in range(128)]),
        body(reasoning_effort="max"),
        body(tool_choice="auto", tools=TOOLS),
        body(response_format={"type": "json_object"}),
    ],
)
def test_validation_accepts(http: httpx.Client, payload: dict[str, Any]) -> None:
    with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        r = post(http, srv, payload)
        assert r.status_code == 200, r.text
        srv.assert_exhausted()


def test_invalid_json_body(http: httpx.Client) -> None:
    with FakeDeepSeekServer() as srv:
        r = http.post(
            srv.base_url + "/chat/completions",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
        assert_400(r, "JSON")
        assert srv.requests[0].raw_body == b"{not json"


def test_unknown_model_when_models_are_set(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("ok")], models=[MODEL]) as srv:
        assert_400(post(http, srv, {**body(), "model": "gpt-4o"}), "Model Not Exist")
        assert post(http, srv, body()).status_code == 200


def test_api_key(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.text("ok")], api_key="sk-good") as srv:
        for headers in ({}, {"Authorization": "Bearer sk-bad"}, {"Authorization": "sk-good"}):
            r = post(http, srv, body(), headers=headers)
            assert r.status_code == 401
            assert r.json()["error"]["type"] == "authentication_error"
        ok = post(http, srv, body(), headers={"Authorization": "Bearer sk-good"})
        assert ok.status_code == 200
        srv.assert_exhausted()


def test_sdk_sees_typed_errors() -> None:
    with FakeDeepSeekServer(api_key="sk-good") as srv:
        with sdk(srv, api_key="sk-bad") as client, pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model=MODEL, messages=[user("x")])
        with (
            sdk(srv, api_key="sk-good") as client,
            pytest.raises(openai.BadRequestError, match="developer"),
        ):
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "developer", "content": "x"}]
            )


# ---------------------------------------------------------------------------------------------
# Faults


@pytest.mark.parametrize(
    ("status", "message", "sdk_error"),
    [
        (402, "Insufficient Balance", openai.APIStatusError),
        (422, "Invalid Parameters", openai.UnprocessableEntityError),
        (429, "Rate Limit Reached", openai.RateLimitError),
        (500, "Server Error", openai.InternalServerError),
        (503, "Server Overloaded", openai.InternalServerError),
    ],
)
def test_status_faults(status: int, message: str, sdk_error: type[Exception]) -> None:
    with FakeDeepSeekServer([Reply.failing(Fault(status=status)), Reply.text("after")]) as srv:
        with sdk(srv) as client:
            with pytest.raises(sdk_error, match=message) as info:
                client.chat.completions.create(model=MODEL, messages=[user("x")])
            assert getattr(info.value, "status_code", None) == status
            # the next request gets the next scripted reply
            r = client.chat.completions.create(model=MODEL, messages=[user("x")])
            assert r.choices[0].message.content == "after"
        first = srv.requests[0]
        assert (first.status, first.usage) == (status, None)
        assert first.error == message


def test_status_fault_custom_message_and_shape(http: httpx.Client) -> None:
    with FakeDeepSeekServer([Reply.failing(Fault(status=429, message="Slow down"))]) as srv:
        r = post(http, srv, body(stream=True))
    assert r.status_code == 429
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] == "Slow down"


def test_keepalive_comments_before_the_stream(http: httpx.Client) -> None:
    fault = Fault(keepalive_lines=3)
    with FakeDeepSeekServer([Reply(content="after waiting", fault=fault)]) as srv:
        r = post(http, srv, body(stream=True))
    assert r.content.startswith(b": keep-alive\n\n" * 3 + b"data: {")
    items = chunks(r.content)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in items) == (
        "after waiting"
    )
    assert srv.requests[0].usage is not None


def test_keepalive_blank_lines_before_a_json_body(http: httpx.Client) -> None:
    fault = Fault(keepalive_lines=4)
    with FakeDeepSeekServer([Reply(content="queued", fault=fault)] * 2) as srv:
        r = post(http, srv, body())
        assert r.content.startswith(b"\n\n\n\n{")
        assert json.loads(r.content)["choices"][0]["message"]["content"] == "queued"
        with sdk(srv) as client:
            sdk_reply = client.chat.completions.create(model=MODEL, messages=[user("x")])
        assert sdk_reply.choices[0].message.content == "queued"


def test_keepalives_are_ignored_by_the_sdk_stream() -> None:
    fault = Fault(keepalive_lines=5)
    with FakeDeepSeekServer([Reply(content="fine", fault=fault)]) as srv, sdk(srv) as client:
        stream = client.chat.completions.create(model=MODEL, messages=[user("x")], stream=True)
        with stream:
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "fine"


def test_cut_after_bytes_drops_the_connection(http: httpx.Client) -> None:
    fault = Fault(cut_after_bytes=300)
    with FakeDeepSeekServer([Reply(content="x" * 500, fault=fault)]) as srv:
        received = bytearray()
        url = srv.base_url + "/chat/completions"
        with pytest.raises(httpx.RemoteProtocolError):
            collect_raw(http, url, body(stream=True), received)
        assert len(received) == 300
        assert b"[DONE]" not in received
        assert srv.requests[0].usage is None
        assert srv.requests[0].status == 200


def test_cut_with_the_sdk_raises() -> None:
    fault = Fault(cut_after_bytes=200)
    with FakeDeepSeekServer([Reply(content="y" * 400, fault=fault)]) as srv, sdk(srv) as client:
        stream = client.chat.completions.create(model=MODEL, messages=[user("x")], stream=True)
        with pytest.raises(openai.APIError), stream:
            for _ in stream:
                pass


def test_cut_non_streamed_body(http: httpx.Client) -> None:
    reply = Reply(content="z" * 100, fault=Fault(cut_after_bytes=50))
    with FakeDeepSeekServer([reply]) as srv, pytest.raises(httpx.RemoteProtocolError):
        post(http, srv, body())


def test_stall_still_delivers_the_reply(http: httpx.Client) -> None:
    fault = Fault(stall_seconds=0.05, stall_after_bytes=120)
    with FakeDeepSeekServer([Reply(content="slow but complete", fault=fault)]) as srv:
        r = post(http, srv, body(stream=True))
    items = chunks(r.content)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in items) == (
        "slow but complete"
    )
    assert items[-1]["usage"]["prompt_tokens"] > 0


@pytest.mark.slow
def test_stall_trips_a_client_read_timeout() -> None:
    """A long stall mid-stream looks like an idle connection; closing the server ends it."""
    fault = Fault(stall_seconds=30, stall_after_bytes=100)
    with FakeDeepSeekServer([Reply(content="never mind", fault=fault)]) as srv:
        received = bytearray()
        url = srv.base_url + "/chat/completions"
        timeout = httpx.Timeout(30, read=2.0)  # the 100 bytes come first, even when loaded
        with httpx.Client(timeout=timeout) as client, pytest.raises(httpx.ReadTimeout):
            collect_raw(client, url, body(stream=True), received)
        assert len(received) == 100


def test_malformed_chunk_mid_stream(http: httpx.Client) -> None:
    fault = Fault(malformed_chunk=True)
    with FakeDeepSeekServer([Reply(content="text", fault=fault)]) as srv:
        r = post(http, srv, body(stream=True))
    data = sse_data(r.content)
    assert "{not json" in data
    assert data.index("{not json") == 1  # after the first chunk
    assert data[-1] == "[DONE]"
    for item in data:
        if item not in ("{not json", "[DONE]"):
            json.loads(item)
    assert srv.requests[0].usage is None


def test_insufficient_resource_finish(http: httpx.Client) -> None:
    fault = Fault(insufficient_resource=True)
    with FakeDeepSeekServer([Reply(fault=fault), Reply(fault=fault)]) as srv:
        items = chunks(post(http, srv, body(stream=True)).content)
        whole = post(http, srv, body()).json()
    assert items[-1]["choices"][0]["finish_reason"] == "insufficient_system_resource"
    assert "usage" in items[-1]
    assert whole["choices"][0]["finish_reason"] == "insufficient_system_resource"


def test_raw_sse_is_sent_verbatim(http: httpx.Client) -> None:
    raw = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hal'
    with FakeDeepSeekServer([Reply(meta={"raw_sse": raw})]) as srv:
        r = post(http, srv, body(stream=True))
    assert r.content == raw
    assert srv.requests[0].usage is None


def test_faulted_requests_are_recorded(http: httpx.Client) -> None:
    script = [
        Reply.failing(Fault(status=503)),
        Reply(content="ok", fault=Fault(keepalive_lines=1)),
        Reply(content="ok", fault=Fault(malformed_chunk=True)),
    ]
    with FakeDeepSeekServer(script) as srv:
        post(http, srv, body(stream=True))
        post(http, srv, body(stream=True))
        post(http, srv, body(stream=True))
        assert [r.status for r in srv.requests] == [503, 200, 200]
        assert [r.reply for r in srv.requests] == script
        assert [r.usage is None for r in srv.requests] == [True, False, True]
        srv.assert_exhausted()


def test_constructor_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="usage_style"):
        FakeDeepSeekServer(usage_style="anthropic")
    with pytest.raises(ValueError, match="chars_per_token"):
        FakeDeepSeekServer(chars_per_token=0)


def test_a_request_rejected_by_validation_records_its_parsed_body() -> None:
    payload = {
        "model": "deepseek-v4-flash",
        "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": "x"},
        ],
    }
    with FakeDeepSeekServer() as srv, httpx.Client(timeout=10) as http:
        response = http.post(srv.base_url + "/chat/completions", json=payload)
    assert response.status_code == 400
    (record,) = srv.requests
    assert record.status == 400
    assert record.body == payload
    assert record.messages == payload["messages"]
    assert record.model == "deepseek-v4-flash"
