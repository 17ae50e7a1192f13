"""The app's inline habits from Claude Code: a line starting with ``!`` runs a shell command
(through the session's ``shell`` part: the permission engine, the hooks and the sandbox, as
the model's ``bash`` calls; its output joins the next message), a one-line ``#note`` is kept
in the project's memory file. Neither sends a request to the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

from rich.text import Text

from reasonix.errors import ReasonixError
from reasonix.terminal_text import printable

if TYPE_CHECKING:
    from reasonix.app.shell import ShellCommand
    from reasonix.cli.interactive import App

__all__ = ["handle", "is_note", "is_shell"]

#: how many lines of a command's output the app shows (the model gets it all, capped as a
#: tool result is)
SHOWN_LINES = 40


def is_shell(text: str) -> bool:
    from reasonix.app.shell import shell_command

    return shell_command(text) is not None


def is_note(text: str) -> bool:
    """``#note`` on one line; a pasted markdown text of several lines is a message."""
    return text.startswith("#") and "\n" not in text


async def handle(app: App, text: str) -> bool:
    """Answer ``text`` if it is an inline habit (True), else leave it for the model (False)."""
    if is_shell(text):
        await shell(app, text[1:])
        return True
    if is_note(text):
        note(app, text[1:])
        return True
    return False


async def shell(app: App, command: str) -> None:
    """``!command``: run it (``session.shell``), show its output, say that it joins the next
    message. Ctrl-C stops it."""
    rt = app.runtime
    assert rt is not None
    try:
        running = rt.shell.start(command)
    except (ValueError, ReasonixError) as exc:
        app.renderer.line(str(exc), "red")
        return
    app.shell_task = running
    app.arm_interrupt()
    try:
        run = await running.result()
    except ReasonixError as exc:
        app.renderer.line(str(exc), "red")
        return
    finally:
        app.shell_task = None
        app.arm_interrupt()
    if run.interrupted:
        app.renderer.line("Stopped; nothing joins the next message.", "yellow")
        return
    lines = printable(run.output, keep_layout=True).splitlines() or [""]
    shown = Text("$ " + printable(run.command), style="bold")
    app.renderer.line(shown)
    for line in lines[:SHOWN_LINES]:
        app.renderer.line(Text(line, style="red" if run.refused else ""))
    if len(lines) > SHOWN_LINES:
        app.renderer.line(f"… {len(lines) - SHOWN_LINES} more lines", "dim")
    if run.queued:
        app.renderer.line("(the output joins your next message; no request was sent)", "dim")


def note(app: App, text: str) -> None:
    """``#note``: keep it in the project's memory file."""
    rt = app.runtime
    assert rt is not None
    try:
        path = rt.remember(text)
    except (ValueError, OSError) as exc:
        message = str(exc) if isinstance(exc, ValueError) else f"Could not save the note: {exc}"
        app.renderer.line(message, "red")
        return
    app.renderer.line(
        f"Remembered in {path}: the model reads it with your next message, and every new "
        "session in its instructions (no request was sent).",
        "dim",
    )


def cancel_on_interrupt(running: ShellCommand) -> None:
    """Route SIGINT to ``running`` (a ``!command``): Ctrl-C stops it."""
    with contextlib.suppress(NotImplementedError, RuntimeError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, running.interrupt)
