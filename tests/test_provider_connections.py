"""The model client's connections and failure reports: a connection is reused across requests
and replaced when cut, a body left open after ``[DONE]`` still finishes, a 401 or a stream of
only keep-alives is blamed on the right thing, and a malformed usage object is a provider error.

The connection-reuse tests here use a small HTTP/1.1 keep-alive server on loopback that can
misbehave in ways the fake DeepSeek server does not (a body held open after ``[DONE]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import httpx
import pytest

from reasonix.errors import AuthenticationError, MalformedChunkError, StreamCutError
from reasonix.messages import (
    ModelRequest,
    StreamEvent,
    StreamFinished,
    StreamRetry,
    UserMessage,
)
from reasonix.providers.openai_compat import OpenAICompatProvider
from tests.support.sleep import no_sleep

REQUEST = ModelRequest(messages=(UserMessage("hi"),))


def chunk(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\n\n"


ANSWER = (
    chunk({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    + chunk({"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}]})
    + chunk(
        {
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
        }
    )
    + b"data: [DONE]\n\n"
)


async def collect(provider: OpenAICompatProvider) -> list[StreamEvent]:
    return [event async for event in provider.stream(REQUEST)]


def finished(events: list[StreamEvent]) -> StreamFinished:
    last = events[-1]
    assert isinstance(last, StreamFinished)
    return last


class KeepAliveServer:
    """Answers each request on a persistent HTTP/1.1 connection with the next scripted SSE body
    (chunked, terminating chunk written separately, as over a real network); ``cut=True`` closes
    the connection after the body's first chunk instead. Counts the connections it accepted."""

    def __init__(self, *script: tuple[bytes, bool]) -> None:
        self.script = list(script)
        self.connections = 0
        self._handlers: list[asyncio.Task[None]] = []
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aenter__(self) -> KeepAliveServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        # the client closed its connections before this: every handler sees EOF and returns
        await asyncio.gather(*self._handlers)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.append(task)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                body, cut = self.script.pop(0)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                writer.write(b"%x\r\n%s\r\n" % (len(body), body))
                await writer.drain()
                if cut:
                    return
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def test_connection_is_reused_across_requests() -> None:
    script = [(ANSWER, False)] * 3
    # (the provider closes first, so the server's handlers see EOF and end)
    async with (
        KeepAliveServer(*script) as srv,
        OpenAICompatProvider(base_url=srv.base_url, model="m", api_key="k") as p,
    ):
        for _ in range(3):
            assert finished(await collect(p)).message.content == "Hello"
    assert srv.connections == 1


async def test_a_cut_connection_is_replaced_and_the_new_one_reused() -> None:
    role_only = ANSWER.split(b"\n\n")[0] + b"\n\n"
    script = [(role_only, True), (ANSWER, False), (ANSWER, False)]
    async with (
        KeepAliveServer(*script) as srv,
        OpenAICompatProvider(base_url=srv.base_url, model="m", api_key="k", sleep=no_sleep) as p,
    ):
        first = await collect(p)
        second = await collect(p)
    assert [type(e) for e in first if isinstance(e, StreamRetry)] == [StreamRetry]
    assert finished(first).message.content == finished(second).message.content == "Hello"
    assert srv.connections == 2


class OpenAfterDone(httpx.AsyncByteStream):
    """A body that sends a whole answer, then never ends."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield ANSWER
        await asyncio.Event().wait()


async def test_a_body_left_open_after_done_still_finishes() -> None:
    transport = httpx.MockTransport(lambda _r: httpx.Response(200, stream=OpenAfterDone()))
    async with OpenAICompatProvider(
        base_url="http://local", model="m", api_key="k", transport=transport, idle_timeout=0.2
    ) as p:
        events = await collect(p)
    assert finished(events).message.content == "Hello"


async def test_401_without_a_key_variable_does_not_name_a_none_variable() -> None:
    transport = httpx.MockTransport(
        lambda _r: httpx.Response(401, json={"error": {"message": "bad key"}})
    )
    async with OpenAICompatProvider(
        base_url="http://local:8000/v1",
        model="m",
        api_key=None,
        api_key_env=None,
        transport=transport,
        max_retries=0,
    ) as p:
        with pytest.raises(AuthenticationError) as info:
            await collect(p)
    assert "None" not in str(info.value)
    assert "bad key" in str(info.value)


async def test_a_stream_of_only_keepalives_is_not_blamed_on_base_url() -> None:
    # DeepSeek closes a queued stream after ~10 minutes of keep-alives without an answer.
    transport = httpx.MockTransport(
        lambda _r: httpx.Response(
            200, content=b": keep-alive\n\n" * 3, headers={"content-type": "text/event-stream"}
        )
    )
    async with OpenAICompatProvider(
        base_url="https://api.deepseek.com",
        model="deepseek-v4-flash",
        api_key="k",
        transport=transport,
        max_retries=0,
    ) as p:
        with pytest.raises(StreamCutError) as info:
            await collect(p)
    message = str(info.value)
    assert "keep-alive" in message
    assert "OpenAI-compatible endpoint" not in message


async def test_a_malformed_usage_object_surfaces_as_a_provider_error() -> None:
    body = chunk({"choices": [], "usage": {"prompt_tokens": "many"}}) + b"data: [DONE]\n\n"
    transport = httpx.MockTransport(
        lambda _r: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    async with OpenAICompatProvider(
        base_url="http://local", model="m", api_key="k", transport=transport, max_retries=0
    ) as p:
        with pytest.raises(MalformedChunkError):
            await collect(p)
