"""OpenAICompatProvider: request shape, error mapping and retries.

Quick request-shape tests use ``httpx.MockTransport``; the behaviour tests run the provider over
real loopback HTTP against :class:`reasonix.testing.FakeDeepSeekServer`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from reasonix.errors import (
    AuthenticationError,
    ConfigError,
    InsufficientBalanceError,
    RateLimitError,
    ServerError,
    StreamCutError,
    StreamIdleTimeout,
)
from reasonix.messages import (
    AssistantMessage,
    ModelRequest,
    StreamEvent,
    StreamFinished,
    StreamRetry,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallComplete,
    ToolCallStarted,
    ToolMessage,
    UserMessage,
)
from reasonix.providers import Provider
from reasonix.providers.models import PRESETS, ModelInfo
from reasonix.providers.openai_compat import OpenAICompatProvider, encode_body

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


async def no_sleep(delay: float) -> None:
    sleeps.append(delay)


sleeps: list[float] = []


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
    return OpenAICompatProvider(transport=recorder.transport(), sleep=no_sleep, **kwargs)


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
        from reasonix.errors import ProviderConnectionError

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


async def test_break_after_output_is_raised_not_retried() -> None:
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
        events, error = await collect_error(p, request("hi"))
    assert isinstance(error, StreamCutError)
    assert "reset" in str(error)
    assert any(isinstance(e, ToolCallStarted) for e in events)
    assert not any(isinstance(e, ToolCallComplete | StreamFinished | StreamRetry) for e in events)
    assert len(rec.requests) == 1


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
