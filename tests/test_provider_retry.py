"""Retry as a provider wrapper: any single-attempt provider gets the same retries, backoff and
retraction as the HTTP client, and httpx failures become our errors in one place."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from reasonix.errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    InsufficientBalanceError,
    InvalidParametersError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    StreamCutError,
    StreamIdleTimeout,
)
from reasonix.messages import (
    ModelRequest,
    StreamEvent,
    StreamFinished,
    StreamRetry,
    TextDelta,
    UserMessage,
)
from reasonix.providers.http_errors import http_failure, status_error
from reasonix.providers.models import ModelInfo
from reasonix.providers.retry import RetryingProvider, RetryPolicy
from reasonix.testing import Reply, ScriptedProvider
from reasonix.testing.providers import stream_reply
from tests.support.sleep import SleepLog

REQUEST = ModelRequest(messages=(UserMessage("hi"),))


async def collect(provider: RetryingProvider) -> list[StreamEvent]:
    return [event async for event in provider.stream(REQUEST)]


async def test_a_wrapped_provider_is_retried_until_it_answers() -> None:
    sleeps = SleepLog()
    inner = ScriptedProvider(
        [ServerError("busy", status=503), ServerError("busy", status=503), Reply.text("hello")]
    )
    provider = RetryingProvider(inner, RetryPolicy(max_retries=3, sleep=sleeps))
    events = await collect(provider)
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [r.attempt for r in retries] == [1, 2]
    assert not any(r.retract for r in retries)
    assert sleeps == [r.delay for r in retries]
    assert isinstance(events[-1], StreamFinished)
    assert events[-1].message.content == "hello"
    assert len(inner.requests) == 3
    assert provider.model == inner.model


async def test_what_may_not_be_retried_is_raised_at_once() -> None:
    inner = ScriptedProvider([AuthenticationError("bad key", status=401), Reply.text("never")])
    provider = RetryingProvider(inner, RetryPolicy(sleep=SleepLog()))
    with pytest.raises(AuthenticationError):
        await collect(provider)
    assert len(inner.requests) == 1


async def test_the_last_failure_is_raised_when_retries_run_out() -> None:
    sleeps = SleepLog()
    inner = ScriptedProvider([ServerError(f"busy {i}", status=503) for i in range(3)])
    provider = RetryingProvider(inner, RetryPolicy(max_retries=2, sleep=sleeps))
    with pytest.raises(ServerError, match="busy 2"):
        await collect(provider)
    assert len(sleeps) == 2


class BreaksOnceMidAnswer:
    """Streams part of an answer, then breaks; answers whole the second time."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def model(self) -> str:
        return "m"

    @property
    def info(self) -> ModelInfo:
        return ModelInfo("m")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls == 1:
            yield TextDelta("Hel")
            raise StreamCutError("cut")
        async for event in stream_reply(request, Reply.text("Hello")):
            yield event


async def test_a_break_after_output_tells_the_caller_to_retract_it() -> None:
    provider = RetryingProvider(BreaksOnceMidAnswer(), RetryPolicy(sleep=SleepLog()))
    events = await collect(provider)
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert retry.retract
    assert retry.partial_chars == 3
    assert "StreamCutError" in retry.reason
    assert events[-1].message.content == "Hello"  # type: ignore[union-attr]


def test_backoff_is_jittered_within_its_ceiling_and_honours_a_hint() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=4.0)
    for attempt in range(1, 8):
        ceiling = min(4.0, 0.5 * 2 ** (attempt - 1))
        assert 0.0 <= policy.delay(attempt) <= ceiling
    assert policy.delay(1, hint=3.0) >= 3.0
    assert policy.delay(1, hint=60.0) <= 4.0  # a hint never waits past backoff_max
    assert RetryPolicy(max_retries=-1).max_retries == 0


URL = "https://api.example.test/chat/completions"


@pytest.mark.parametrize(
    ("exc", "phase", "detail", "kind", "says"),
    [
        (httpx.ConnectError("refused"), "send", "", ProviderConnectionError, "could not reach"),
        (httpx.ConnectTimeout("slow"), "send", "", ProviderConnectionError, "timed out connecting"),
        (httpx.ReadTimeout("quiet"), "send", "", StreamIdleTimeout, "no response from"),
        (httpx.ReadError("reset"), "error_body", "503", ProviderConnectionError, "HTTP 503"),
        (httpx.ReadTimeout("quiet"), "body", "", StreamIdleTimeout, "went silent for 30s"),
        (httpx.ReadError("reset"), "body", "", StreamCutError, "broke: reset"),
        (TimeoutError(), "stream", "3 chunk(s)", StreamIdleTimeout, "after 3 chunk(s)"),
        (httpx.RemoteProtocolError("eof"), "stream", "3 chunk(s)", StreamCutError, "after 3"),
    ],
)
def test_http_failures_map_in_one_place(
    exc: BaseException, phase: str, detail: str, kind: type[Exception], says: str
) -> None:
    error = http_failure(exc, phase, url=URL, idle_timeout=30, detail=detail)  # type: ignore[arg-type]
    assert type(error) is kind
    assert says in str(error)
    assert URL in str(error)
    assert error.retryable


@pytest.mark.parametrize(
    ("status", "kind", "retryable", "says"),
    [
        (400, BadRequestError, False, "Bad request"),
        (401, AuthenticationError, False, "Check the key in $THE_KEY"),
        (402, InsufficientBalanceError, False, "platform.deepseek.com/top_up"),
        (404, APIStatusError, False, "Check base_url and the model name"),
        (422, InvalidParametersError, False, "Invalid parameters"),
        (429, RateLimitError, True, "Rate limited"),
        (500, ServerError, True, "Server error"),
        (501, ServerError, False, "Server error"),
        (503, ServerError, True, "Server error"),
    ],
)
def test_error_statuses_map_in_one_place(
    status: int, kind: type[Exception], retryable: bool, says: str
) -> None:
    response = httpx.Response(
        status,
        json={"error": {"message": "the server's words", "code": "some_code"}},
        headers={"retry-after": "7"},
    )
    error = status_error(
        response, base_url="https://api.deepseek.com", model="deepseek-flash", key_source="$THE_KEY"
    )
    assert type(error) is kind
    assert error.retryable is retryable  # by exact status, not by class
    assert error.retry_after == 7.0
    assert error.status == status
    assert error.code == "some_code"
    assert says in str(error)
    assert "the server's words" in str(error)


def test_an_unreadable_error_body_is_shown_raw_and_a_date_hint_is_ignored() -> None:
    response = httpx.Response(502, text="<html>bad gateway</html>", headers={"retry-after": "Wed"})
    error = status_error(response, base_url="http://127.0.0.1:9", model="m", key_source="k")
    assert isinstance(error, ServerError)
    assert "<html>bad gateway</html>" in str(error)
    assert "127.0.0.1" in str(error)
    assert error.retry_after is None
