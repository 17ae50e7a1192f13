"""A running user turn as frontends see it: an async stream of events, then an outcome.

::

    turn = session.start_turn("fix the failing test")
    async for event in turn:          # every event of this turn, in order, as it happens
        render(event)
    outcome = await turn.result()     # TurnOutcome: the Controller's TurnResult and more

Iterating is optional (the session's sink sees the same events); a turn that is never iterated
still runs to its end. :meth:`Turn.interrupt` (or ``session.interrupt()``) cancels the turn: the
agent closes its conversation at a valid boundary, and :meth:`Turn.result` returns an outcome
whose ``interrupted`` is true instead of raising.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from reasonix.control import Route, TurnResult
from reasonix.events import Event, GateDecided, NullSink, Sink, ToolResultEvent, UsageEvent
from reasonix.safety.permissions import PermissionRecord

__all__ = ["Running", "SessionEvents", "Turn", "TurnOutcome"]

R = TypeVar("R")


@dataclass(frozen=True)
class TurnOutcome:
    """A turn's result plus what the permission layer refused during it.

    ``refused`` is True when a tool call was denied and never performed later in the turn, or
    a plan was declined: the work that was asked for was (at least partly) not done.
    ``interrupted`` is True when the turn was cancelled (its ``result.stop_reason`` is then
    ``"cancelled"``).
    """

    result: TurnResult
    denials: tuple[PermissionRecord, ...] = ()
    refused: bool = False
    duration_ms: int = 0
    requests: int = 0
    interrupted: bool = False
    #: what the slash command that started the turn says once it has ended (``/init``:
    #: "AGENTS.md written: PATH"; ``/goal``: where the goal stands), computed once by the core
    #: (:meth:`Turn.close_with`) for every frontend to show; empty for a plain turn
    closing: str = ""

    @property
    def is_error(self) -> bool:
        return self.result.stop_reason == "error"

    @property
    def session_status(self) -> str:
        """The stored session's status after this turn (see ``SESSION_STATUSES``)."""
        from reasonix.app.outcomes import ending

        if self.interrupted:
            return "interrupted"
        return ending(self.result.stop_reason).status

    @classmethod
    def judge(
        cls,
        result: TurnResult,
        records: Sequence[PermissionRecord],
        duration_ms: int,
        requests: int,
    ) -> TurnOutcome:
        """The outcome of a finished turn from its permission decisions (oldest first): a
        denial counts as refused work unless the same call was allowed later in the turn."""
        refused = result.stop_reason in ("plan_declined", "prompt_blocked")
        for i, rec in enumerate(records):
            if rec.allowed:
                continue
            later = records[i + 1 :]
            if not any(r.allowed and (r.tool, r.subject) == (rec.tool, rec.subject) for r in later):
                refused = True
        denials = tuple(r for r in records if not r.allowed)
        return cls(result, denials, refused, duration_ms, requests)


class _End:
    """Marks the end of a turn's event stream."""


_END = _End()


class Running(Generic[R]):
    """Work the session runs in its own task, one at a time: a user turn (:class:`Turn`) or
    the user's own shell command (:class:`~reasonix.app.shell.ShellCommand`). An async stream
    of the events it causes (approval questions among them), then :meth:`result`.

    Built by the session façade, not by frontends. ``work`` is the work itself;
    ``interrupted`` builds the result of work cut short by :meth:`interrupt`.
    """

    def __init__(
        self, name: str, work: Coroutine[Any, Any, R], interrupted: Callable[[], R]
    ) -> None:
        self._events: asyncio.Queue[Event | _End] = asyncio.Queue()
        self._interrupted = interrupted
        self._interrupt_requested = False
        self._task: asyncio.Task[R] = asyncio.get_running_loop().create_task(
            self._run(work), name=name
        )
        self._task.add_done_callback(lambda _: self._events.put_nowait(_END))

    async def _run(self, work: Coroutine[Any, Any, R]) -> R:
        try:
            result = await work
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self._interrupt_requested or task is None:
                raise
            # Our own interrupt: the session is valid again (the agent closed its
            # conversation), so the work ends with a result rather than an exception.
            task.uncancel()
            result = self._interrupted()
        return self._finished(result)

    def _finished(self, result: R) -> R:
        """The result as :meth:`result` gives it (a subclass adds to it)."""
        return result

    def emit(self, event: Event) -> None:
        """Add an event to this stream (the session routes its events here)."""
        if not self._task.done():
            self._events.put_nowait(event)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[Event]:
        while True:
            item = await self._events.get()
            if isinstance(item, _End):
                # Let another reader (or a second loop) see the end too.
                self._events.put_nowait(item)
                return
            yield item

    async def result(self) -> R:
        """Wait for the end. Interrupted work returns (its result says so); an error the core
        did not turn into a result (a closed store, a bug) is raised."""
        return await self._task

    def interrupt(self) -> None:
        """Cancel the work; the session stays valid for the next."""
        if not self._task.done():
            self._interrupt_requested = True
            self._task.cancel()

    def done(self) -> bool:
        return self._task.done()


class Turn(Running[TurnOutcome]):
    """One user turn running in its own task; see the module docstring.

    Built by the session façade (``session.start_turn``), not by frontends. ``work`` is the
    turn itself; ``interrupted`` builds the outcome of a turn cut short by :meth:`interrupt`.
    """

    def __init__(
        self,
        number: int,
        work: Coroutine[Any, Any, TurnOutcome],
        interrupted: Callable[[], TurnOutcome],
    ) -> None:
        self.number = number
        self._closing: Callable[[], str] | None = None
        super().__init__(f"reasonix-turn-{number}", work, interrupted)

    def _finished(self, result: TurnOutcome) -> TurnOutcome:
        if self._closing is not None:
            return dataclasses.replace(result, closing=self._closing())
        return result

    def close_with(self, closing: Callable[[], str]) -> None:
        """Once the turn has ended (done or interrupted), ``closing()`` is what the command
        that started it says: the outcome's :attr:`TurnOutcome.closing`. The command table
        sets it (:meth:`reasonix.app.command_types.Answer.closed`); frontends only show the
        outcome's."""
        self._closing = closing


class SessionEvents:
    """The session's one sink: every event goes to the store, the status tracker, the
    frontend's sink and the running turn's stream, in that order."""

    def __init__(self, user: Sink) -> None:
        self.user = user
        self.record: Sink = NullSink()
        #: what runs now (a turn, or the user's shell command): its stream gets the events
        self.turn: Running[Any] | None = None
        self.last_prompt: dict[str, int] = {}
        self.requests = 0
        self.route = Route.EXECUTOR_ONLY
        #: called when a tool call's result is out (before the next model request)
        self.after_tool: Callable[[], None] | None = None

    def emit(self, event: Event) -> None:
        self.record.emit(event)
        if isinstance(event, UsageEvent):
            self.last_prompt[str(event.source)] = event.usage.prompt_tokens
            self.requests += 1
        elif isinstance(event, GateDecided):
            self.route = Route(event.route)
        elif isinstance(event, ToolResultEvent) and self.after_tool is not None:
            self.after_tool()
        self.tell(event)

    def tell(self, event: Event) -> None:
        """To the frontend only (not recorded): notices about the session itself."""
        self.user.emit(event)
        if self.turn is not None:
            self.turn.emit(event)
