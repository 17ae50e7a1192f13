"""The client reuses DeepSeek's kept-alive connection after a retryable finish: it reads the
stream on to ``[DONE]`` (bounded) before raising ``insufficient_system_resource`` or ``aborted``,
so the retry needs no new TCP (and TLS) handshake, when the server is short of capacity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reasonix.messages import ModelRequest, StreamFinished, StreamRetry, UserMessage
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from tests.support.sleep import SleepLog

REQUEST = ModelRequest(messages=(UserMessage("hi"),))


@pytest.mark.parametrize(
    "failing",
    [
        Reply(content="Half an answer", fault=Fault(insufficient_resource=True)),
        Reply(content="Half an answer", reasoning="hm", finish_reason="aborted"),
    ],
    ids=["insufficient_system_resource", "aborted"],
)
async def test_the_retry_after_a_transient_finish_reuses_the_connection(
    make_provider: Callable[..., Any], failing: Reply
) -> None:
    async with FakeDeepSeekServer([failing, Reply.text("The whole answer.")]) as srv:
        provider = make_provider(srv, max_retries=1, sleep=SleepLog())
        events = [e async for e in provider.stream(REQUEST)]
        srv.assert_exhausted()
    assert any(isinstance(e, StreamRetry) for e in events)
    finished = events[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.message.content == "The whole answer."
    first, retry = srv.requests
    assert first.client_port is not None
    assert retry.client_port == first.client_port  # one connection, kept alive


async def test_without_keep_alive_the_retry_opens_a_new_connection(
    make_provider: Callable[..., Any],
) -> None:
    """The control: the ports differ when the server closes each connection."""
    script = [Reply(fault=Fault(insufficient_resource=True)), Reply.text("ok")]
    async with FakeDeepSeekServer(script, keep_alive=False) as srv:
        provider = make_provider(srv, max_retries=1, sleep=SleepLog())
        [e async for e in provider.stream(REQUEST)]
    first, retry = srv.requests
    assert retry.client_port != first.client_port


async def test_a_transient_finish_without_done_is_still_retried(
    make_provider: Callable[..., Any],
) -> None:
    """The drain is bounded and best effort: a body that ends without ``[DONE]`` after the
    finish chunk does not turn the retryable finish into another failure."""
    finish = (
        b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"deepseek-flash",'
        b'"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":'
        b'"insufficient_system_resource"}]}\n\n'
    )
    script = [Reply(meta={"raw_sse": finish}), Reply.text("ok")]
    async with FakeDeepSeekServer(script) as srv:
        provider = make_provider(srv, max_retries=1, sleep=SleepLog())
        events = [e async for e in provider.stream(REQUEST)]
    assert [type(e).__name__ for e in events if isinstance(e, StreamRetry)] == ["StreamRetry"]
    assert isinstance(events[-1], StreamFinished)
    assert events[-1].message.content == "ok"
