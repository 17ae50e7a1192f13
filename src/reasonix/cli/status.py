"""The live status line of the terminal app, drawn below the output while a turn runs.

It says who is working (executor, planner, compaction), a spinner, the elapsed time, the tokens
and cost of the turn so far, the tool that is running and how to interrupt; under it, what the
user has typed ahead. Output keeps streaming above it: the console writes through
:class:`StatusFile`, which takes the status rows away before any output and puts them back after
each flush, so only those one or two rows are ever redrawn (never the screen).

The rows are drawn with cursor save/restore below the cursor's own row, which is made to exist
first (index down, reverse index up, both keeping the column), so the output's cursor position
is exact even while a line is half streamed and at the bottom of the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import shutil
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from rich.cells import cell_len

from reasonix.terminal_text import printable

if TYPE_CHECKING:
    from reasonix.events import Event

__all__ = ["LiveStatus", "StatusFile", "fit", "format_tokens"]

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


def format_tokens(n: int) -> str:
    """``950``, ``12.3k``, ``1.2M``."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells, with an ellipsis when cut."""
    if cell_len(text) <= width:
        return text
    out = ""
    for ch in text:
        if cell_len(out + ch) > width - 1:
            break
        out += ch
    return out + "…"


class LiveStatus:
    """What the status line shows, fed by the turn's events; drawn by :meth:`show`."""

    def __init__(self, out: IO[str], width: Callable[[], int] | None = None) -> None:
        self._out = out
        self._width = width or (lambda: shutil.get_terminal_size((80, 24)).columns)
        self.active = False
        self._rows = 0
        self._frame = 0
        self._task: asyncio.Task[None] | None = None
        self.reset()
        #: the line being typed ahead (drawn under the status) and the lines queued with Enter
        self.typed = ""
        self.queued: list[str] = []

    def reset(self) -> None:
        self.role = "executor"
        self.started = time.monotonic()
        self.tokens = 0
        self.cost = 0.0
        self.streamed_chars = 0
        self.tool = ""
        self._tools: dict[str, str] = {}

    # -- what it says ----------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        """Update from one event of the running turn."""
        # The event types load with the session (after the prompt is drawn), not with this
        # module, which the prompt needs.
        from reasonix.events import (
            CompactionEvent,
            NoticeEvent,
            ReasoningDeltaEvent,
            TextDeltaEvent,
            ToolCallEvent,
            ToolResultEvent,
            TurnStarted,
            UsageEvent,
        )

        role = event.role
        if isinstance(event, TurnStarted | ReasoningDeltaEvent | TextDeltaEvent) and role in (
            "executor",
            "planner",
        ):
            self.role = role
        if isinstance(event, ReasoningDeltaEvent | TextDeltaEvent):
            self.streamed_chars += len(event.text)
        elif isinstance(event, UsageEvent):
            self.tokens += event.usage.prompt_tokens + event.usage.completion_tokens
            self.cost += event.cost
            self.streamed_chars = 0
        elif isinstance(event, ToolCallEvent):
            from reasonix.cli.render import summarize_call

            self._tools[event.call.id] = summarize_call(event, width=40)
            self.tool = self._tools[event.call.id]
        elif isinstance(event, ToolResultEvent):
            self._tools.pop(event.call_id, None)
            self.tool = next(reversed(self._tools.values()), "")
        elif isinstance(event, NoticeEvent) and event.code == "compaction_started":
            self.role = "compaction"
        elif isinstance(event, CompactionEvent):
            self.role = "executor"

    def lines(self, width: int) -> list[str]:
        """The rows to draw, each fitted to ``width`` cells."""
        spin = _SPINNER[self._frame % len(_SPINNER)]
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 60}m{elapsed % 60:02d}s" if elapsed >= 60 else f"{elapsed}s"
        tokens = format_tokens(self.tokens + self.streamed_chars // 4)
        parts = [f"{spin} {self.role}", clock, f"{tokens} tok", f"${self.cost:.4f}"]
        if self.tool:
            parts.append(self.tool)
        hint = "esc to interrupt"
        line = " · ".join(parts)
        # The hint is what a waiting user needs most after the role: drop the tool first.
        while cell_len(f"{line} · {hint}") > width - 1 and len(parts) > 4:
            parts.pop()
            line = " · ".join(parts)
        rows = [fit(f"{line} · {hint}", width - 1)]
        if self.queued:
            rows.append(
                fit(f"queued ({len(self.queued)}): {printable(self.queued[-1])}", width - 1)
            )
        if self.typed or self.queued:
            rows.append(fit(f"› {printable(self.typed)}▏", width - 1))
        return rows

    def set_role(self, role: str) -> None:
        self.role = role
        self.redraw()

    # -- drawing ---------------------------------------------------------------------------------

    def hide(self) -> None:
        """Take the status rows away (the cursor is on the output's row)."""
        if self._rows:
            self._out.write("\x1b7" + "\x1bD\r\x1b[2K" * self._rows + "\x1b8")
            self._rows = 0

    def show(self) -> None:
        """Draw the status rows below the cursor's row and put the cursor back."""
        if not self.active:
            return
        self.hide()
        rows = self.lines(max(self._width(), 20))
        n = len(rows)
        seq = ["\x1bD" * n, "\x1bM" * n, "\x1b7"]
        for row in rows:
            seq.append(f"\x1bD\r\x1b[2K{_DIM}{row}{_RESET}")
        seq.append("\x1b8")
        self._out.write("".join(seq))
        self._out.flush()
        self._rows = n

    def redraw(self) -> None:
        if self.active:
            self.show()

    def start(self) -> None:
        """Begin a turn: draw now and keep the clock and spinner moving."""
        self.reset()
        self.active = True
        self.show()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._tick())

    def pause(self) -> None:
        """Hide while something else owns the terminal (an approval question)."""
        self.hide()
        self.active = False
        self._out.flush()

    def resume(self) -> None:
        self.active = True
        self.show()

    def stop(self) -> None:
        """End of the turn: take the rows away for good."""
        self.pause()
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _tick(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(0.125)
                self._frame += 1
                self.redraw()


class StatusFile(io.TextIOBase):
    """The console's file: output goes to ``out`` with the status rows lifted out of its way."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self.status = LiveStatus(out)

    def write(self, s: str) -> int:
        self.status.hide()
        return self._out.write(s)

    def flush(self) -> None:
        self.status.show()
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()

    def fileno(self) -> int:
        return self._out.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._out, "encoding", "utf-8") or "utf-8"
