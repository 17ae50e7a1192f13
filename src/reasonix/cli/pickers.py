"""The app's pickers over the session's history: Esc Esc lists this session's turns to rewind
to, ``/resume`` with no id lists the folder's other sessions. Each is a list in the terminal
(:func:`reasonix.cli.picker.choose`: arrows, Enter, a number key, Esc to leave); what is picked
goes to the session's ``history`` part, as ``/rewind N`` and ``/resume ID`` would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reasonix.terminal_text import printable
from reasonix.tools.ask import Option, Question

if TYPE_CHECKING:
    from reasonix.cli.interactive import App

__all__ = ["resume_picker", "rewind_picker"]

#: the most entries a picker lists (the most recent ones)
MAX_ENTRIES = 15


def _one_line(text: str, width: int) -> str:
    line = " ".join(printable(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


async def rewind_picker(app: App) -> None:
    """Esc Esc: pick a turn; the files and both conversations go back to before it."""
    from reasonix.cli.picker import choose

    rt = app.runtime
    assert rt is not None
    marks = [m for m in rt.history.marks if m.rewindable][-MAX_ENTRIES:][::-1]
    if not marks:
        app.renderer.line("Nothing to rewind: no turn has run in this session.", "dim")
        return
    width = max(app.console.width - 12, 20)
    options = [Option(f"turn {m.turn}: {_one_line(m.text, width)}", "") for m in marks]
    question = Question("Rewind to before which turn? (files and conversation)", "rewind", options)
    picked = await choose(question, other=False)
    if not picked:
        app.renderer.line("Nothing was rewound.", "dim")
        return
    app.renderer.line(rt.history.rewind(marks[picked[0]].turn))


async def resume_picker(app: App) -> str | None:
    """``/resume`` with no id: pick one of this folder's other sessions; its id (None when
    there is none or the user left the list, said)."""
    from reasonix.app.commands import session_line
    from reasonix.cli.picker import choose

    rt = app.runtime
    assert rt is not None
    infos = [i for i in rt.history.sessions(limit=MAX_ENTRIES + 1) if i.id != rt.session_id]
    infos = infos[:MAX_ENTRIES]
    if not infos:
        app.renderer.line("No other session in this folder to resume.", "dim")
        return None
    width = max(app.console.width - 8, 20)
    options = [Option(_one_line(session_line(info), width), "") for info in infos]
    picked = await choose(Question("Resume which session?", "resume", options), other=False)
    if not picked:
        app.renderer.line("No session was resumed.", "dim")
        return None
    return infos[picked[0]].id
