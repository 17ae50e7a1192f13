"""Numbered events of one session, for every browser tab watching it.

Each session the dashboard shows has one :class:`EventLog`. It starts with the session's stored
events (what happened before this server saw it) and then receives every live event of the
session as the façade's sink. Every event gets the next id (1, 2, ...), which the event stream
sends as the SSE ``id``: a reconnecting ``EventSource`` sends the last id it saw as
``Last-Event-ID`` and gets exactly the events after it, so nothing is lost or doubled; two tabs
read the same log, so they see the same events.

Live events are kept in a bounded ring (``capacity``); a client that asks for events older than
the ring holds gets a ``resync`` event instead, carrying the session's stored events, and
continues from there.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from reasonix.events import Event

__all__ = ["EventLog"]

#: An id and the JSON-ready event (its ``to_dict()`` form).
Numbered = tuple[int, dict[str, Any]]


class EventLog:
    """See the module docstring. Also a :class:`~reasonix.events.Sink`: pass it as the
    session's ``sink``. ``stored`` reads the session's stored events (for a resync)."""

    def __init__(
        self,
        history: Sequence[dict[str, Any]] = (),
        *,
        capacity: int = 20_000,
        stored: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        from reasonix.web.markdown import MarkdownPass

        shown = MarkdownPass().all([dict(e) for e in history])
        self._history: list[Numbered] = list(enumerate(shown, start=1))
        #: adds the ``markdown`` event when a role's streamed text ends (live events)
        self._markdown = MarkdownPass()
        self._ring: deque[Numbered] = deque(maxlen=capacity)
        self._last = len(self._history)
        self._stored = stored
        self._listeners: set[asyncio.Queue[Numbered]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.get_ident()
        #: how many stored events the log holds (to follow a session written elsewhere)
        self.stored_count = len(history)

    @property
    def last_id(self) -> int:
        return self._last

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Deliver events on ``loop`` (events emitted from another thread are handed over)."""
        self._loop = loop
        self._thread = threading.get_ident()

    def emit(self, event: Event) -> None:
        self.append(event.to_dict())

    def append(self, data: dict[str, Any]) -> None:
        """Number ``data`` and send it to every listener."""
        if self._loop is not None and threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self.append, data)
            return
        for shown in self._markdown.feed(data):
            self._last += 1
            item = (self._last, shown)
            self._ring.append(item)
            for queue in self._listeners:
                queue.put_nowait(item)

    def since(self, last_id: int) -> list[Numbered] | None:
        """The events after ``last_id``; None when some of them are no longer held."""
        if last_id >= self._last:
            return []
        live_start = self._ring[0][0] if self._ring else self._last + 1
        if last_id + 1 >= live_start:
            return [item for item in self._ring if item[0] > last_id]
        if live_start != len(self._history) + 1:
            return None  # live events between the history and the ring were dropped
        return [item for item in self._history if item[0] > last_id] + list(self._ring)

    async def follow(
        self, last_id: int = 0, *, idle: float = 15.0, on_idle: Callable[[], None] | None = None
    ) -> AsyncIterator[Numbered | None]:
        """Every event after ``last_id``, then each new one as it comes (until closed); None
        after each ``idle`` seconds without an event (for a keep-alive), once ``on_idle`` ran
        (it may append events, e.g. ones another process stored)."""
        queue: asyncio.Queue[Numbered] = asyncio.Queue()
        backlog = self.since(last_id)
        # No await between reading the backlog and listening: no event falls in between.
        self._listeners.add(queue)
        try:
            if backlog is None:
                from reasonix.web.markdown import MarkdownPass

                stored = MarkdownPass().all(self._stored() if self._stored is not None else [])
                yield self._last, {"kind": "resync", "events": stored}
                seen = self._last
            else:
                seen = last_id
                for item in backlog:
                    seen = item[0]
                    yield item
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), idle)
                except TimeoutError:
                    if on_idle is not None:
                        on_idle()
                    if queue.empty():
                        yield None
                    continue
                if item[0] > seen:
                    seen = item[0]
                    yield item
        finally:
            self._listeners.discard(queue)

    @property
    def watchers(self) -> int:
        """How many streams follow the log now."""
        return len(self._listeners)
