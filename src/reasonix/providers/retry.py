"""Retry as a wrapper around one attempt, not a flag inside a client.

:func:`with_retries` runs a single-attempt stream again while its failure says it may be retried
(``ProviderError.retryable``), at most ``RetryPolicy.max_retries`` times, with exponential
backoff and full jitter (and at least the server's ``Retry-After`` hint, within
``backoff_max``). Before each retry it yields a :class:`~reasonix.messages.StreamRetry`; when
output of the failed attempt had already reached the caller, ``retract=True`` tells it to discard
that partial output, since the retry starts the answer afresh. A failure that may not be
retried, or the last one, is raised as it is.

:class:`OpenAICompatProvider <reasonix.providers.openai_compat.OpenAICompatProvider>` uses it
around its own HTTP attempts; :class:`RetryingProvider` puts it around any other
:class:`~reasonix.providers.base.Provider` whose ``stream`` makes one attempt.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from reasonix.errors import ProviderError
from reasonix.messages import ModelRequest, StreamEvent, StreamRetry, Usage
from reasonix.providers.base import Provider
from reasonix.providers.models import ModelInfo
from reasonix.providers.sse import is_output_event, output_chars

__all__ = ["RetryPolicy", "RetryingProvider", "with_retries"]


@dataclass
class RetryPolicy:
    """How often and how long to wait: attempt ``n`` waits a random time up to
    ``min(backoff_max, backoff_base * 2**(n-1))`` seconds (full jitter, so agents that failed
    together do not retry together), or the server's hint when that is longer."""

    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self.max_retries = max(0, self.max_retries)

    def delay(self, attempt: int, hint: float | None = None) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        delay = self.rng.uniform(0.0, ceiling)
        if hint is not None:
            delay = max(delay, min(hint, self.backoff_max))
        return delay


async def with_retries(
    attempt: Callable[[], AsyncIterator[StreamEvent]], policy: RetryPolicy
) -> AsyncIterator[StreamEvent]:
    """The events of ``attempt()``, made again after each retryable failure; see the module
    docstring."""
    tries = 0
    while True:
        started = False
        partial = 0
        try:
            async with aclosing(attempt()) as events:  # type: ignore[type-var]
                async for event in events:
                    if is_output_event(event):
                        started = True
                        partial += output_chars(event)
                    yield event
            return
        except ProviderError as failure:
            # A break after output started is retried like one before it (same backoff, same
            # budget): the retry event tells the caller to retract what it showed.
            if not failure.retryable or tries >= policy.max_retries:
                raise
            tries += 1
            delay = policy.delay(tries, failure.retry_after)
            billed = getattr(failure, "usage", None)
            retry = StreamRetry(
                tries,
                delay,
                f"{type(failure).__name__}: {failure}",
                retract=started,
                partial_chars=partial,
                billed=billed if isinstance(billed, Usage) else None,
            )
        yield retry
        await policy.sleep(delay)


class RetryingProvider:
    """``inner`` with retries: each ``stream`` call is retried under ``policy`` (see the module
    docstring). For providers that make one attempt per call; OpenAICompatProvider retries
    already."""

    def __init__(self, inner: Provider, policy: RetryPolicy | None = None) -> None:
        self.inner = inner
        self.policy = policy or RetryPolicy()

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return with_retries(lambda: self.inner.stream(request), self.policy)

    async def aclose(self) -> None:
        """Close ``inner`` if it holds connections."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
