"""In-process test providers: no HTTP, no sockets. Use them to test tools, prompts and control
flow quickly; use :class:`reasonix.testing.FakeDeepSeekServer` to test over real HTTP."""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from reasonix.messages import (
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    StreamFinished,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
    Usage,
    UsageReported,
    wire_messages,
)
from reasonix.providers.models import ModelInfo
from reasonix.testing.script import Reply, chunk_text

ReplyFunc = Callable[[ModelRequest], Reply | Awaitable[Reply]]


def estimate_usage(request: ModelRequest, reply: Reply) -> Usage:
    """A deterministic stand-in for server usage: 4 characters per token, no cache."""
    prompt_chars = len(json.dumps(wire_messages(request.messages))) + len(json.dumps(request.tools))
    out_chars = len(reply.content) + sum(len(c.arguments) + len(c.name) for c in reply.tool_calls)
    reasoning = (len(reply.reasoning) + 3) // 4 if reply.reasoning else 0
    prompt = (prompt_chars + 3) // 4
    return Usage(prompt, 0, prompt, (out_chars + 3) // 4 + reasoning, reasoning)


async def stream_reply(request: ModelRequest, reply: Reply) -> AsyncIterator[StreamEvent]:
    """The stream events a provider would yield for ``reply``."""
    if reply.reasoning:
        for piece in chunk_text(reply.reasoning):
            yield ReasoningDelta(piece)
    for piece in chunk_text(reply.content):
        yield TextDelta(piece)
    for index, call in enumerate(reply.tool_calls):
        yield ToolCallStarted(index, call.id, call.name)
        for piece in chunk_text(call.arguments, 16):
            yield ToolCallArgumentsDelta(index, call.id, piece)
    for call in reply.tool_calls:
        yield ToolCallComplete(call)
    usage = reply.usage if isinstance(reply.usage, Usage) else estimate_usage(request, reply)
    yield UsageReported(usage)
    yield StreamFinished(reply.effective_finish_reason, reply.message(), usage)


class _RecordingProvider:
    def __init__(self, model: str, info: ModelInfo | None) -> None:
        self._model = model
        self._info = info or ModelInfo(model)
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return self._model

    @property
    def info(self) -> ModelInfo:
        return self._info

    async def _reply_for(self, request: ModelRequest) -> Reply:
        raise NotImplementedError

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        reply = await self._reply_for(request)
        if reply.fault is not None:
            from reasonix.errors import ServerError

            status = reply.fault.status or 500
            raise ServerError(reply.fault.message or "scripted fault", status=status)
        async for event in stream_reply(request, reply):
            yield event


class ScriptedProvider(_RecordingProvider):
    """Answers each request with the next scripted ``Reply`` (or raises a scripted exception).

    ``assert_exhausted()`` fails if some replies were never used.
    """

    def __init__(
        self,
        replies: Iterable[Reply | BaseException],
        *,
        model: str = "scripted-model",
        info: ModelInfo | None = None,
    ) -> None:
        super().__init__(model, info)
        self._queue: deque[Reply | BaseException] = deque(replies)

    def push(self, *replies: Reply | BaseException) -> None:
        self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def assert_exhausted(self) -> None:
        if self._queue:
            raise AssertionError(f"{len(self._queue)} scripted replies were never requested")

    async def _reply_for(self, request: ModelRequest) -> Reply:
        if not self._queue:
            raise AssertionError(
                f"ScriptedProvider ran out of replies at request #{len(self.requests)}"
            )
        item = self._queue.popleft()
        if isinstance(item, BaseException):
            raise item
        return item


class FunctionProvider(_RecordingProvider):
    """Answers each request with ``func(request)`` (sync or async)."""

    def __init__(
        self, func: ReplyFunc, *, model: str = "function-model", info: ModelInfo | None = None
    ) -> None:
        super().__init__(model, info)
        self._func = func

    async def _reply_for(self, request: ModelRequest) -> Reply:
        out: Any = self._func(request)
        if inspect.isawaitable(out):
            out = await out
        if not isinstance(out, Reply):
            raise TypeError(f"FunctionProvider's function must return a Reply, got {out!r}")
        return out
