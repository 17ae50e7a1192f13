"""OpenAICompatProvider: request shape, error mapping and retries.

Quick request-shape tests use ``httpx.MockTransport``; the behaviour tests run the provider over
real loopback HTTP against :class:`reasonix.testing.FakeDeepSeekServer`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from reasonix.errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    InsufficientBalanceError,
    InvalidParametersError,
    MalformedChunkError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    StreamCutError,
    StreamIdleTimeout,
    TransientFinishError,
)
from reasonix.messages import (
    AssistantMessage,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    StreamFinished,
    StreamRetry,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallComplete,
    ToolCallStarted,
    ToolMessage,
    UsageReported,
    UserMessage,
)
from reasonix.providers import Provider
from reasonix.providers.models import PRESETS, ModelInfo, price_usage
from reasonix.providers.openai_compat import OpenAICompatProvider, encode_body
from reasonix.providers.sse import is_output_event
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from tests.support.sleep import SleepLog

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def request(*texts: str, **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        messages=(SystemMessage("You are terse."), *(UserMessage(t) for t in texts)), **kwargs
    )


sleeps = SleepLog()


@pytest.fixture(autouse=True)
def _reset_sleeps() -> None:
    sleeps.clear()


async def collect(provider: OpenAICompatProvider, req: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(req)]


async def collect_error(
    provider: OpenAICompatProvider, req: ModelRequest
) -> tuple[list[StreamEvent], BaseException]:
    """The events yielded before the stream raised, and the exception."""
    events: list[StreamEvent] = []
    try:
        async for event in provider.stream(req):
            events.append(event)
    except Exception as exc:
        return events, exc
    raise AssertionError(f"the stream did not fail: {events}")


def finished(events: list[StreamEvent]) -> StreamFinished:
    ends = [e for e in events if isinstance(e, StreamFinished)]
    assert len(ends) == 1
    assert events[-1] is ends[0]
    return ends[0]


# ---------------------------------------------------------------------------------------------
# Helpers for MockTransport tests


def sse(*chunks: dict[str, Any] | str, done: bool = True) -> bytes:
    out = b""
    for c in chunks:
        data = c if isinstance(c, str) else json.dumps(c)
        out += b"data: " + data.encode() + b"\n\n"
    if done:
        out += b"data: [DONE]\n\n"
    return out


def delta_chunk(
    delta: dict[str, Any], finish: str | None = None, usage: Any = None
) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": usage,
    }


HELLO = sse(delta_chunk({"content": "Hello"}), delta_chunk({}, "stop", {"prompt_tokens": 3}))


class Recorder:
    """A MockTransport handler that records requests and answers from a list of responders."""

    def __init__(self, *responders: Callable[[httpx.Request], httpx.Response]) -> None:
        self.responders = list(responders)
        self.requests: list[httpx.Request] = []

    def __call__(self, req: httpx.Request) -> httpx.Response:
        self.requests.append(req)
        responder = self.responders.pop(0) if len(self.responders) > 1 else self.responders[0]
        return responder(req)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def ok(body: bytes = HELLO) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _req: httpx.Response(
        200, content=body, headers={"content-type": "text/event-stream"}
    )


def status(
    code: int, message: str = "nope", **headers: str
) -> Callable[[httpx.Request], httpx.Response]:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return lambda _req: httpx.Response(code, json=body, headers=headers)


def mock_provider(recorder: Recorder, **kwargs: Any) -> OpenAICompatProvider:
    kwargs.setdefault("api_key", "sk-test")
    kwargs.setdefault("model", "deepseek-v4-flash")
    kwargs.setdefault("base_url", "https://api.deepseek.com")
    return OpenAICompatProvider(transport=recorder.transport(), sleep=sleeps, **kwargs)


# ---------------------------------------------------------------------------------------------
# Request shape


def test_is_a_provider_with_preset_info() -> None:
    p = OpenAICompatProvider(base_url="https://api.deepseek.com", model="deepseek-v4-pro")
    assert isinstance(p, Provider)
    assert p.model == "deepseek-v4-pro"
    assert p.info == PRESETS["deepseek-v4-pro"]
    unknown = OpenAICompatProvider(base_url="http://localhost:1/v1", model="my-local-model")
    assert unknown.info == ModelInfo("my-local-model")
    custom = ModelInfo("x", context_window=5)
    assert OpenAICompatProvider(base_url="http://h", model="x", info=custom).info is custom


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.deepseek.com", "https://api.deepseek.com/chat/completions"),
        ("https://api.deepseek.com/", "https://api.deepseek.com/chat/completions"),
        ("https://api.deepseek.com/v1", "https://api.deepseek.com/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
    ],
)
def test_url_with_or_without_v1(base: str, url: str) -> None:
    assert OpenAICompatProvider(base_url=base, model="m").url == url


def test_request_body_shape_and_order() -> None:
    p = OpenAICompatProvider(
        base_url="https://api.deepseek.com",
        model="deepseek-v4-flash",
        user_id="alice_1",
        extra_body={"top_p": 0.9, "stream_options": None},
    )
    call = ToolCall("call_1", "read_file", '{"path":"a.py"}')
    req = ModelRequest(
        messages=(
            SystemMessage("sys"),
            UserMessage("读 a.py"),
            AssistantMessage("", "need to read", (call,)),
            ToolMessage("call_1", "print(1)", name="read_file", is_error=False),
        ),
        tools=(READ_TOOL,),
        thinking=True,
        reasoning_effort="high",
        temperature=0.2,
        max_tokens=1000,
        tool_choice="auto",
        extra_body={"top_p": 0.5, "seed": 7},
    )
    body = p.build_request_body(req)
    assert list(body) == [
        "model",
        "messages",
        "tools",
        "stream",
        "thinking",
        "reasoning_effort",
        "temperature",
        "max_tokens",
        "tool_choice",
        "user_id",
        "top_p",
        "seed",
    ]
    assert body["model"] == "deepseek-v4-flash"
    assert body["messages"] == [m.to_wire() for m in req.messages]
    assert body["messages"][2]["reasoning_content"] == "need to read"
    assert body["tools"] == [READ_TOOL]
    assert body["stream"] is True
    assert body["thinking"] == {"type": "enabled"}
    assert body["top_p"] == 0.5  # the request's extra_body wins over the provider's
    assert "stream_options" not in body  # removed by a None in extra_body
    raw = encode_body(body)
    assert raw == encode_body(p.build_request_body(req))  # deterministic bytes
    assert "读".encode() in raw  # not \\u-escaped
    assert b", " not in raw and b": " not in raw.replace(b'"path": "', b"")


def test_minimal_body_and_thinking_disabled() -> None:
    p = OpenAICompatProvider(base_url="http://h", model="m")
    body = p.build_request_body(request("hi", thinking=False, model="other"))
    assert body == {
        "model": "other",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "thinking": {"type": "disabled"},
    }
    assert "thinking" not in p.build_request_body(request("hi"))


@pytest.mark.parametrize("bad", ["", "has space", "a" * 513, "é"])
def test_user_id_is_validated(bad: str) -> None:
    p = OpenAICompatProvider(base_url="http://h", model="m")
    with pytest.raises(ConfigError, match="user_id"):
        p.build_request_body(request("hi", user_id=bad))
    if bad:
        with pytest.raises(ConfigError, match="user_id"):
            OpenAICompatProvider(base_url="http://h", model="m", user_id=bad)


async def test_headers_and_posted_bytes() -> None:
    rec = Recorder(ok())
    async with mock_provider(rec, headers={"X-Extra": "1"}) as p:
        events = await collect(p, request("hi"))
    assert finished(events).message == AssistantMessage("Hello")
    (sent,) = rec.requests
    assert sent.method == "POST"
    assert str(sent.url) == "https://api.deepseek.com/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-extra"] == "1"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.content == encode_body(p.build_request_body(request("hi")))


async def test_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-env")
    rec = Recorder(ok())
    async with mock_provider(rec, api_key=None, api_key_env="MY_KEY") as p:
        await collect(p, request("hi"))
    assert rec.requests[0].headers["authorization"] == "Bearer sk-env"


async def test_missing_key_fails_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    rec = Recorder(ok())
    async with mock_provider(rec, api_key=None) as p:
        with pytest.raises(AuthenticationError, match="DEEPSEEK_API_KEY"):
            await collect(p, request("hi"))
    assert rec.requests == []


async def test_no_key_needed_when_api_key_env_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(ok())
    async with mock_provider(rec, api_key=None, api_key_env=None) as p:
        await collect(p, request("hi"))
    assert "authorization" not in rec.requests[0].headers


# ---------------------------------------------------------------------------------------------
# Retries and errors through MockTransport


async def test_retry_then_success_reports_stream_retry() -> None:
    rec = Recorder(status(503, "overloaded"), status(429, "slow down"), ok())
    async with mock_provider(rec, backoff_base=1.0, backoff_max=3.0) as p:
        events = await collect(p, request("hi"))
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [r.attempt for r in retries] == [1, 2]
    assert "overloaded" in retries[0].reason and "ServerError" in retries[0].reason
    assert "RateLimitError" in retries[1].reason
    assert 0.0 <= retries[0].delay <= 1.0 and 0.0 <= retries[1].delay <= 2.0
    assert sleeps == [r.delay for r in retries]
    assert finished(events).message.content == "Hello"
    assert len(rec.requests) == 3


async def test_retry_after_header_is_honoured_within_backoff_max() -> None:
    rec = Recorder(
        status(429, "wait", **{"retry-after": "2"}),
        status(429, "wait", **{"retry-after": "99"}),
        ok(),
    )
    async with mock_provider(rec, backoff_max=5.0) as p:
        events = await collect(p, request("hi"))
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert retries[0].delay >= 2.0
    assert retries[1].delay == 5.0


async def test_gives_up_after_max_retries_with_last_error() -> None:
    rec = Recorder(status(500, "boom"))
    async with mock_provider(rec, max_retries=2) as p:
        events, error = await collect_error(p, request("hi"))
    assert isinstance(error, ServerError)
    assert "boom" in str(error)
    assert error.status == 500
    assert len(rec.requests) == 3
    assert [e.attempt for e in events if isinstance(e, StreamRetry)] == [1, 2]


async def test_backoff_is_bounded_by_backoff_max() -> None:
    rec = Recorder(status(502, "bad gateway"))
    async with mock_provider(rec, max_retries=8, backoff_base=1.0, backoff_max=3.0) as p:
        with pytest.raises(ServerError):
            await collect(p, request("hi"))
    assert len(sleeps) == 8
    assert all(0.0 <= s <= 3.0 for s in sleeps)


async def test_501_is_not_retried() -> None:
    rec = Recorder(status(501, "not implemented"))
    async with mock_provider(rec) as p:
        with pytest.raises(ServerError) as info:
            await collect(p, request("hi"))
    assert not info.value.retryable
    assert len(rec.requests) == 1


async def test_402_names_the_top_up_page() -> None:
    rec = Recorder(status(402, "Insufficient Balance"))
    async with mock_provider(rec) as p:
        with pytest.raises(InsufficientBalanceError, match=r"platform\.deepseek\.com/top_up"):
            await collect(p, request("hi"))
    rec = Recorder(status(402, "no credit"))
    async with mock_provider(rec, base_url="https://llm.example.com/v1", model="x") as p:
        with pytest.raises(InsufficientBalanceError, match=r"provider \(llm.example.com\)"):
            await collect(p, request("hi"))


async def test_connection_error_is_retried_then_raised() -> None:
    def refuse(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    rec = Recorder(refuse)
    async with mock_provider(rec, max_retries=1) as p:
        with pytest.raises(ProviderConnectionError, match="connection refused"):
            await collect(p, request("hi"))
    assert len(rec.requests) == 2


class ScriptedStream(httpx.AsyncByteStream):
    """A response body that yields pieces, sleeps, or breaks, in order."""

    def __init__(self, *steps: bytes | float | Exception) -> None:
        self.steps = steps

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import asyncio

        for step in self.steps:
            if isinstance(step, bytes):
                yield step
            elif isinstance(step, float):
                await asyncio.sleep(step)
            else:
                raise step


def streaming(*steps: bytes | float | Exception) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _req: httpx.Response(200, stream=ScriptedStream(*steps))


async def test_break_after_output_is_retried_and_retracted() -> None:
    call_start = delta_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "write", "arguments": '{"path": "a'},
                }
            ]
        }
    )
    rec = Recorder(streaming(sse(call_start, done=False), httpx.ReadError("reset")), ok())
    async with mock_provider(rec) as p:
        events = await collect(p, request("hi"))
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert retry.retract and "reset" in retry.reason
    assert retry.partial_chars == len("write") + len('{"path": "a')
    before = events[: events.index(retry)]
    assert any(isinstance(e, ToolCallStarted) for e in before)
    # the half-streamed call was never reported complete; the retry's answer is
    assert not any(isinstance(e, ToolCallComplete) for e in events)
    assert finished(events).message.content == "Hello"
    assert len(rec.requests) == 2


async def test_break_after_output_past_the_retry_budget_is_raised() -> None:
    role_text = delta_chunk({"content": "Hel"})
    rec = Recorder(
        *(streaming(sse(role_text, done=False), httpx.ReadError("reset")) for _ in range(3))
    )
    async with mock_provider(rec, max_retries=2) as p:
        events, error = await collect_error(p, request("hi"))
    assert isinstance(error, StreamCutError)
    assert [e.retract for e in events if isinstance(e, StreamRetry)] == [True, True]
    assert len(rec.requests) == 3


async def test_break_before_output_is_retried() -> None:
    role_only = delta_chunk({"role": "assistant", "content": ""})
    rec = Recorder(streaming(b": keep-alive\n\n", sse(role_only, done=False)), ok())
    async with mock_provider(rec) as p:
        events = await collect(p, request("hi"))
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert "StreamCutError" in retry.reason
    assert finished(events).message.content == "Hello"


async def test_idle_watchdog_with_any_transport() -> None:
    rec = Recorder(streaming(b": keep-alive\n\n", 5.0, HELLO))
    async with mock_provider(rec, idle_timeout=0.05, max_retries=0) as p:
        with pytest.raises(StreamIdleTimeout, match="silent"):
            await collect(p, request("hi"))


async def test_consumer_may_stop_early() -> None:
    rec = Recorder(ok())
    async with mock_provider(rec) as p:
        stream = p.stream(request("hi"))
        first = await anext(stream)
        assert first == TextDelta("Hello")
        await stream.aclose()  # type: ignore[attr-defined]


async def test_rate_limit_message_includes_server_text() -> None:
    rec = Recorder(status(429, "concurrency cap reached"))
    async with mock_provider(rec, max_retries=0) as p:
        with pytest.raises(RateLimitError, match="concurrency cap reached"):
            await collect(p, request("hi"))


@pytest.mark.slow
async def test_keepalives_reset_the_idle_watchdog() -> None:
    # Silent gaps shorter than idle_timeout, separated by keep-alive comments, adding up to more
    # than idle_timeout: the watchdog must measure silence, not total time.
    # The gaps leave the watchdog 1.2 s of slack for a loaded machine.
    steps: list[bytes | float | Exception] = []
    for _ in range(6):
        steps += [b": keep-alive\n\n", 0.3]
    rec = Recorder(streaming(*steps, HELLO))
    async with mock_provider(rec, idle_timeout=1.5, max_retries=0) as p:
        events = await collect(p, request("hi"))
    assert finished(events).message.content == "Hello"


# ---------------------------------------------------------------------------------------------
# Over loopback HTTP against the fake DeepSeek server

KEY = "sk-test-key"


def fake(*script: Reply, **kwargs: Any) -> FakeDeepSeekServer:
    kwargs.setdefault("api_key", KEY)
    return FakeDeepSeekServer(list(script), **kwargs)


def provider_for(srv: FakeDeepSeekServer, **kwargs: Any) -> OpenAICompatProvider:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("model", "deepseek-v4-flash")
    kwargs.setdefault("base_url", srv.base_url)
    return OpenAICompatProvider(sleep=sleeps, **kwargs)


@asynccontextmanager
async def loopback(
    *script: Reply, server: dict[str, Any] | None = None, **kwargs: Any
) -> AsyncIterator[tuple[FakeDeepSeekServer, OpenAICompatProvider]]:
    """A running fake server with ``script`` and a provider pointed at it."""
    async with fake(*script, **(server or {})) as srv, provider_for(srv, **kwargs) as p:
        yield srv, p


def text_of(events: list[StreamEvent], kind: type[TextDelta] | type[ReasoningDelta]) -> str:
    return "".join(e.text for e in events if isinstance(e, kind))


async def test_loopback_plain_text() -> None:
    async with loopback(Reply.text("Hello there, general Kenobi.")) as (srv, p):
        req = request("hi", thinking=False)
        events = await collect(p, req)
        srv.assert_exhausted()
    end = finished(events)
    assert text_of(events, TextDelta) == "Hello there, general Kenobi."
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1  # streamed in pieces
    assert end.finish_reason == "stop"
    assert end.message == AssistantMessage("Hello there, general Kenobi.", None)
    assert end.usage == srv.requests[0].usage
    assert [e for e in events if isinstance(e, UsageReported)] == [UsageReported(end.usage)]
    assert not any(isinstance(e, StreamRetry) for e in events)
    recorded = srv.requests[0]
    assert recorded.raw_body == encode_body(p.build_request_body(req))
    assert recorded.path == "/chat/completions"


async def test_loopback_base_url_with_v1() -> None:
    async with (
        fake(Reply.text("ok")) as srv,
        provider_for(srv, base_url=srv.base_url + "/v1/") as p,
    ):
        events = await collect(p, request("hi"))
    assert finished(events).message.content == "ok"
    assert srv.requests[0].path == "/v1/chat/completions"


async def test_loopback_reasoning_then_text() -> None:
    reply = Reply.text("The answer is 4.", reasoning="2 plus 2 makes 4.")
    async with loopback(reply) as (_, p):
        events = await collect(p, request("2+2?", thinking=True))
    output = [e for e in events if isinstance(e, ReasoningDelta | TextDelta)]
    kinds = [type(e) for e in output]
    assert kinds.index(TextDelta) > max(i for i, k in enumerate(kinds) if k is ReasoningDelta)
    end = finished(events)
    assert end.message == AssistantMessage("The answer is 4.", "2 plus 2 makes 4.")
    assert end.usage is not None and end.usage.reasoning_tokens > 0


async def test_loopback_parallel_tool_calls_and_round_trip() -> None:
    reply = Reply.calls(("read_file", {"path": "a.py"}), ("ls", {"dir": "src", "deep": True}))
    async with loopback(reply, Reply.text("Done.")) as (srv, p):
        req = request("look around", tools=(READ_TOOL,))
        events = await collect(p, req)
        end = finished(events)
        assert end.finish_reason == "tool_calls"
        assert end.message.tool_calls == reply.tool_calls
        started = [e for e in events if isinstance(e, ToolCallStarted)]
        assert [(s.index, s.id, s.name) for s in started] == [
            (0, reply.tool_calls[0].id, "read_file"),
            (1, reply.tool_calls[1].id, "ls"),
        ]
        completes = [e.call for e in events if isinstance(e, ToolCallComplete)]
        assert completes == list(reply.tool_calls)
        # Complete events come after every output event.
        last_output = max(i for i, e in enumerate(events) if is_output_event(e))
        first_complete = min(i for i, e in enumerate(events) if isinstance(e, ToolCallComplete))
        assert first_complete > last_output
        # In thinking mode the server reasons before calling tools; sending the assembled
        # message back (with its reasoning) must be accepted.
        assert end.message.reasoning_content
        follow = ModelRequest(
            messages=(
                *req.messages,
                end.message,
                ToolMessage(reply.tool_calls[0].id, "print(1)"),
                ToolMessage(reply.tool_calls[1].id, "a.py b.py"),
            ),
            tools=(READ_TOOL,),
        )
        events2 = await collect(p, follow)
        srv.assert_exhausted()
    assert finished(events2).message.content == "Done."


async def test_loopback_cache_split_on_prefix_extension() -> None:
    system = SystemMessage("You are a careful coding agent. " * 40)
    first = ModelRequest(messages=(system, UserMessage("Summarise the repository layout.")))
    async with loopback(Reply.text("It has src/ and tests/."), Reply.text("Yes.")) as (srv, p):
        end1 = finished(await collect(p, first))
        second = ModelRequest(
            messages=(*first.messages, end1.message, UserMessage("Anything else?"))
        )
        end2 = finished(await collect(p, second))
    assert end1.usage is not None and end2.usage is not None
    assert end1.usage.cache_hit_tokens == 0
    assert end2.usage.cache_hit_tokens > 0
    for usage in (end1.usage, end2.usage):
        assert usage.prompt_tokens == usage.cache_hit_tokens + usage.cache_miss_tokens
    assert end2.usage == srv.requests[1].usage


async def test_loopback_keepalive_lines_before_answer() -> None:
    reply = Reply(content="after the queue", fault=Fault(keepalive_lines=5))
    async with loopback(reply) as (_, p):
        events = await collect(p, request("hi"))
    assert not any(isinstance(e, StreamRetry) for e in events)
    assert finished(events).message.content == "after the queue"


async def test_loopback_openai_style_usage_chunk() -> None:
    system = SystemMessage("Shared prefix for the cache. " * 40)
    first = ModelRequest(messages=(system, UserMessage("one")))
    async with loopback(Reply.text("1"), Reply.text("2"), server={"usage_style": "openai"}) as (
        srv,
        p,
    ):
        end1 = finished(await collect(p, first))
        second = ModelRequest(messages=(*first.messages, end1.message, UserMessage("two")))
        events = await collect(p, second)
    end2 = finished(events)
    assert end2.usage is not None
    assert end2.usage == srv.requests[1].usage
    assert end2.usage.cache_hit_tokens > 0
    assert end2.usage.cache_miss_tokens == end2.usage.prompt_tokens - end2.usage.cache_hit_tokens
    assert UsageReported(end2.usage) in events


async def test_loopback_cost_from_reported_usage() -> None:
    async with loopback(Reply.text("cheap"), model="deepseek-v4-pro") as (srv, p):
        end = finished(await collect(p, request("hi")))
        prices = p.info.prices
    usage = srv.requests[0].usage
    assert usage is not None and end.usage == usage
    expected = (
        usage.cache_hit_tokens * 0.022
        + usage.cache_miss_tokens * 0.66
        + usage.completion_tokens * 1.98
    ) / 1_000_000
    assert price_usage(end.usage, prices) == pytest.approx(expected)
    assert expected > 0


@pytest.mark.parametrize(
    ("code", "error_type", "needle"),
    [
        (400, BadRequestError, "Invalid request"),
        (402, InsufficientBalanceError, "top up your balance at https://platform.deepseek.com"),
        (422, InvalidParametersError, "Invalid Parameters"),
    ],
)
async def test_loopback_client_errors_are_not_retried(
    code: int, error_type: type[APIStatusError], needle: str
) -> None:
    async with loopback(Reply.failing(Fault(status=code)), Reply.text("never")) as (srv, p):
        events, error = await collect_error(p, request("hi"))
    assert isinstance(error, error_type)
    assert error.status == code
    assert needle in str(error)
    assert events == []
    assert len(srv.requests) == 1


async def test_loopback_real_validation_error_message_is_shown() -> None:
    async with loopback() as (_, p):
        req = request("hi", tools=(READ_TOOL,), thinking=True, tool_choice="required")
        _, error = await collect_error(p, req)
    assert isinstance(error, BadRequestError)
    assert "not supported in thinking mode" in str(error)
    assert error.code == "invalid_request_error"


async def test_loopback_401_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-wrong")
    async with loopback(Reply.text("never"), api_key=None) as (srv, p):
        _, error = await collect_error(p, request("hi"))
    assert isinstance(error, AuthenticationError)
    assert error.status == 401
    assert "DEEPSEEK_API_KEY" in str(error)
    assert "api key is invalid" in str(error)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    ("code", "error_type"), [(429, RateLimitError), (500, ServerError), (503, ServerError)]
)
async def test_loopback_transient_statuses_are_retried(
    code: int, error_type: type[APIStatusError]
) -> None:
    script = [
        Reply.failing(Fault(status=code)),
        Reply.failing(Fault(status=code)),
        Reply.text("ok"),
    ]
    async with loopback(*script) as (srv, p):
        events = await collect(p, request("hi"))
        srv.assert_exhausted()
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [r.attempt for r in retries] == [1, 2]
    assert all(error_type.__name__ in r.reason for r in retries)
    assert events.index(retries[-1]) < min(
        i for i, e in enumerate(events) if isinstance(e, TextDelta)
    )
    assert finished(events).message.content == "ok"
    assert sleeps == [r.delay for r in retries]


async def test_loopback_retries_exhausted_raise_last_error() -> None:
    script = [Reply.failing(Fault(status=503, message=f"overloaded #{i}")) for i in range(3)]
    async with loopback(*script, max_retries=2) as (srv, p):
        events, error = await collect_error(p, request("hi"))
        srv.assert_exhausted()
    assert isinstance(error, ServerError)
    assert "overloaded #2" in str(error)
    assert len([e for e in events if isinstance(e, StreamRetry)]) == 2


async def test_loopback_cut_stream_after_output_never_completes_the_call() -> None:
    big = {"path": "notes.txt", "content": "x" * 3000}
    reply = Reply(
        tool_calls=Reply.call("write_file", big).tool_calls, fault=Fault(cut_after_bytes=1500)
    )
    async with loopback(reply, max_retries=0) as (srv, p):
        events, error = await collect_error(p, request("write it", thinking=False))
    assert isinstance(error, StreamCutError)
    assert any(isinstance(e, ToolCallStarted) for e in events)
    assert not any(isinstance(e, ToolCallComplete | StreamFinished | StreamRetry) for e in events)
    assert len(srv.requests) == 1


async def test_loopback_cut_before_output_is_retried() -> None:
    script = [Reply(content="ok", fault=Fault(cut_after_bytes=40)), Reply.text("ok")]
    async with loopback(*script) as (srv, p):
        events = await collect(p, request("hi"))
        srv.assert_exhausted()
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert "StreamCutError" in retry.reason
    assert finished(events).message.content == "ok"


async def test_loopback_idle_watchdog() -> None:
    stall = Reply(content="too late", fault=Fault(stall_seconds=10.0, stall_after_bytes=0))
    async with loopback(stall, idle_timeout=0.3, max_retries=0) as (_, p):
        events, error = await collect_error(p, request("hi"))
    assert isinstance(error, StreamIdleTimeout)
    assert events == []


@pytest.mark.slow
async def test_loopback_idle_stall_then_retry_succeeds() -> None:
    stall = Reply(content="late", fault=Fault(stall_seconds=60.0, stall_after_bytes=100))
    # A watchdog a loaded machine's scheduling cannot trip on the good answer.
    async with loopback(stall, Reply.text("on time"), idle_timeout=2.0) as (_, p):
        events = await collect(p, request("hi"))
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert "StreamIdleTimeout" in retry.reason
    assert finished(events).message.content == "on time"


async def test_loopback_insufficient_system_resource_is_retried() -> None:
    busy = Reply(content="", fault=Fault(insufficient_resource=True))
    async with loopback(busy, Reply.text("capacity back")) as (srv, p):
        events = await collect(p, request("hi", thinking=False))
        srv.assert_exhausted()
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert "TransientFinishError" in retry.reason
    assert finished(events).message.content == "capacity back"


@pytest.mark.parametrize("reason", ["insufficient_system_resource", "aborted"])
async def test_loopback_transient_finish_after_output_is_retried_and_retracted(
    reason: str,
) -> None:
    busy = Reply(content="partial answer", finish_reason=reason)
    async with loopback(busy, Reply.text("whole answer")) as (srv, p):
        events = await collect(p, request("hi", thinking=False))
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert retry.retract and reason in retry.reason
    # the broken attempt's usage arrived on its finishing chunk: it is reported, not dropped
    assert retry.billed is not None and retry.billed == srv.requests[0].usage
    assert finished(events).message.content == "whole answer"
    assert len(srv.requests) == 2


async def test_loopback_transient_finish_past_the_budget_is_raised() -> None:
    busy = Reply(content="partial answer", fault=Fault(insufficient_resource=True))
    async with loopback(busy, max_retries=0) as (srv, p):
        events, error = await collect_error(p, request("hi", thinking=False))
    assert isinstance(error, TransientFinishError)
    assert text_of(events, TextDelta) == "partial answer"
    assert len(srv.requests) == 1


async def test_loopback_malformed_chunk() -> None:
    bad = Reply(content="x", fault=Fault(malformed_chunk=True))
    async with loopback(bad, max_retries=0) as (_, p):
        _, error = await collect_error(p, request("hi"))
    assert isinstance(error, MalformedChunkError)
    # With retries left the same fault is retried: no output had reached the caller.
    async with loopback(bad, Reply.text("fine")) as (_, p):
        events = await collect(p, request("hi"))
    assert [type(e) for e in events if isinstance(e, StreamRetry)] == [StreamRetry]
    assert finished(events).message.content == "fine"


async def test_loopback_raw_sse_edge_cases() -> None:
    raw = (
        b": keep-alive\r\n\r\n"
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
        b'"finish_reason":null}],"usage":null}\r\n\r\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"multi"},\r\n'
        b'data: "finish_reason":null}],"usage":null}\r\n\r\n'
        + 'data: {"choices":[{"index":0,"delta":{"content":" 行"},'.encode()
        + b'"finish_reason":"stop"}],'
        + b'"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_cache_hit_tokens":0,'
        b'"prompt_cache_miss_tokens":9}}\r\n\r\n'
        b"data: [DONE]\r\n\r\n"
    )
    async with loopback(Reply(meta={"raw_sse": raw})) as (_, p):
        events = await collect(p, request("hi"))
    end = finished(events)
    assert end.message.content == "multi 行"
    assert end.usage is not None and end.usage.prompt_tokens == 9


async def test_loopback_eof_without_done_or_finish_is_a_cut() -> None:
    raw = b'data: {"choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}\n\n'
    async with loopback(Reply(meta={"raw_sse": raw}), max_retries=0) as (_, p):
        events, error = await collect_error(p, request("hi"))
    assert isinstance(error, StreamCutError)
    assert text_of(events, TextDelta) == "half"


async def test_loopback_server_answering_without_streaming() -> None:
    # A server that ignores stream=true (here: forced off through extra_body) answers with one
    # JSON completion, preceded by blank keep-alive lines while queued.
    reply = Reply(
        content="",
        tool_calls=Reply.call("ls", {"dir": "."}).tool_calls,
        fault=Fault(keepalive_lines=3),
    )
    async with loopback(reply, extra_body={"stream": False, "stream_options": None}) as (srv, p):
        events = await collect(p, request("hi"))
    assert srv.requests[0].body["stream"] is False
    end = finished(events)
    assert end.message.tool_calls == reply.tool_calls
    assert end.message.reasoning_content  # thinking mode: the server reasons before tool calls
    assert [e.call for e in events if isinstance(e, ToolCallComplete)] == list(reply.tool_calls)
    assert end.usage == srv.requests[0].usage


async def test_non_sse_page_gets_a_hint() -> None:
    page = lambda _req: httpx.Response(  # noqa: E731
        200, content=b"<html>login</html>", headers={"content-type": "text/html"}
    )
    rec = Recorder(page)
    async with mock_provider(rec, max_retries=0) as p:
        _, error = await collect_error(p, request("hi"))
    assert isinstance(error, StreamCutError)
    assert "text/html" in str(error) and "base_url" in str(error)
