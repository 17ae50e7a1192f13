"""Stand-ins for the providers' ``sleep`` seam, so a retry does not wait out its backoff."""

from __future__ import annotations

import asyncio


async def no_sleep(delay: float) -> None:
    """Yield to the event loop once instead of sleeping ``delay`` seconds."""
    await asyncio.sleep(0)


class SleepLog(list[float]):
    """A ``sleep`` that records each delay it was asked to wait, and does not wait."""

    async def __call__(self, delay: float) -> None:
        self.append(delay)
        await asyncio.sleep(0)
