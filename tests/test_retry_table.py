"""The retry policy as tables: the exact backoff schedule (the ceiling doubles from
``backoff_base`` up to ``backoff_max``; full jitter draws below it), the server's hint as a floor
that never passes ``backoff_max``, the retry budget, and what each retry event carries."""

from __future__ import annotations

import random

import pytest

from reasonix.errors import ServerError, StreamCutError, TransientFinishError
from reasonix.messages import ModelRequest, StreamRetry, TextDelta, Usage, UserMessage
from reasonix.providers.retry import RetryingProvider, RetryPolicy, with_retries
from reasonix.testing import Reply, ScriptedProvider
from tests.support.sleep import SleepLog

REQUEST = ModelRequest(messages=(UserMessage("hi"),))


class Top(random.Random):
    """Jitter that always draws its upper bound (the schedule's ceiling)."""

    def uniform(self, a: float, b: float) -> float:
        return b


class Bottom(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return a


@pytest.mark.parametrize(
    ("base", "cap", "ceilings"),
    [
        (0.5, 20.0, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]),
        (1.0, 5.0, [1.0, 2.0, 4.0, 5.0, 5.0]),
        (0.25, 100.0, [0.25, 0.5, 1.0, 2.0]),
    ],
)
def test_the_backoff_ceiling_doubles_up_to_the_cap(
    base: float, cap: float, ceilings: list[float]
) -> None:
    policy = RetryPolicy(backoff_base=base, backoff_max=cap, rng=Top())
    assert [policy.delay(n) for n in range(1, len(ceilings) + 1)] == ceilings
    low = RetryPolicy(backoff_base=base, backoff_max=cap, rng=Bottom())
    assert [low.delay(n) for n in range(1, len(ceilings) + 1)] == [0.0] * len(ceilings)


@pytest.mark.parametrize(
    ("drawn", "hint", "expected"),
    [
        ("low", None, 0.0),
        ("low", 3.0, 3.0),  # the hint is a floor
        ("top", 0.1, 0.5),  # a shorter hint does not shorten the backoff
        ("low", 60.0, 20.0),  # but never past backoff_max
        ("top", 20.0, 20.0),
    ],
)
def test_the_servers_hint_is_a_floor_within_the_cap(
    drawn: str, hint: float | None, expected: float
) -> None:
    rng = Top() if drawn == "top" else Bottom()
    policy = RetryPolicy(backoff_base=0.5, backoff_max=20.0, rng=rng)
    assert policy.delay(1, hint) == expected


@pytest.mark.parametrize(("given", "kept"), [(-3, 0), (0, 0), (1, 1), (4, 4)])
def test_the_retry_budget_is_never_negative(given: int, kept: int) -> None:
    assert RetryPolicy(max_retries=given).max_retries == kept


def test_the_defaults() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.backoff_base, policy.backoff_max) == (4, 0.5, 20.0)


@pytest.mark.parametrize("budget", [0, 1, 3])
async def test_exactly_the_budget_is_spent_then_the_last_failure_raised(budget: int) -> None:
    sleeps = SleepLog()
    failures = [ServerError(f"busy {i}", status=503) for i in range(budget + 1)]
    inner = ScriptedProvider([*failures, Reply.text("too late")])
    provider = RetryingProvider(inner, RetryPolicy(max_retries=budget, sleep=sleeps, rng=Top()))
    events: list[object] = []

    async def drain() -> None:
        async for event in provider.stream(REQUEST):
            events.append(event)

    with pytest.raises(ServerError, match=f"busy {budget}"):
        await drain()
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [r.attempt for r in retries] == list(range(1, budget + 1))
    assert [r.delay for r in retries] == [0.5 * 2**i for i in range(budget)]
    assert sleeps == [r.delay for r in retries]
    assert len(inner.requests) == budget + 1
    assert inner.remaining == 1


async def test_a_retry_before_any_output_retracts_nothing_and_bills_what_was_reported() -> None:
    usage = Usage(prompt_tokens=10, cache_miss_tokens=10, completion_tokens=2)
    inner = ScriptedProvider(
        [TransientFinishError("busy", finish_reason="aborted", usage=usage), Reply.text("ok")]
    )
    events = [
        e async for e in RetryingProvider(inner, RetryPolicy(sleep=SleepLog())).stream(REQUEST)
    ]
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert retry.retract is False and retry.partial_chars == 0
    assert retry.billed == usage
    assert retry.reason.startswith("TransientFinishError: ")


async def test_output_before_a_break_is_counted_and_retracted() -> None:
    calls = 0

    async def attempt():  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 1:
            yield TextDelta("abc")
            yield TextDelta("de")
            raise StreamCutError("cut")
        yield TextDelta("whole")

    events = [e async for e in with_retries(attempt, RetryPolicy(sleep=SleepLog()))]
    (retry,) = [e for e in events if isinstance(e, StreamRetry)]
    assert retry.retract is True and retry.partial_chars == 5 and retry.billed is None
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["abc", "de", "whole"]


async def test_a_wrapper_closes_what_it_wraps_and_passes_its_identity() -> None:
    closed: list[bool] = []

    class Closable(ScriptedProvider):
        async def aclose(self) -> None:
            closed.append(True)

    inner = Closable([], model="m1")
    provider = RetryingProvider(inner)
    assert provider.model == "m1" and provider.info is inner.info
    assert isinstance(provider.policy, RetryPolicy)
    await provider.aclose()
    assert closed == [True]
    await RetryingProvider(ScriptedProvider([])).aclose()  # nothing to close: no error
