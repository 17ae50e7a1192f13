"""Long text in an 80-column terminal, read off an emulated screen: a tool's error and a long
answer are wrapped at spaces, shown whole and shown once (never cut mid-word, never repeated)."""

from __future__ import annotations

import sys

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]

ANSWER = " ".join(
    f"Sentence{n} explains one more consideration about the configuration, the permission rules "
    f"and the sandbox, number{n}."
    for n in range(1, 5)
)


def words_between(screen: str, first: str, last: str) -> list[str]:
    """The words on screen from the row holding ``first`` to the row holding ``last``."""
    rows = screen.splitlines()
    start = next(i for i, r in enumerate(rows) if first in r)
    end = next(i for i in range(start, len(rows)) if last in rows[i])
    return " ".join(rows[start : end + 1]).split()


def test_a_long_error_and_a_long_answer_wrap_at_words_and_show_once(project: Project) -> None:
    (project.root / "notes.txt").write_text("alpha\n")
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text() + '\n[permissions]\nmode = "yolo"\n')
    missing = "this exact text is nowhere in the file " * 3
    project.ex.push(
        Reply.call("edit_file", {"path": "notes.txt", "old_string": missing, "new_string": "x"}),
        Reply.text(ANSWER),
    )
    term = Terminal(project, rows=45, cols=80)
    try:
        term.ready()
        term.sendline("edit the notes")
        screen = term.wait("number4\\.")
    finally:
        term.close()
    error = str(project.ex.requests[1].messages[-1]["content"])
    first_line = error.splitlines()[0]
    assert len(first_line) > 80  # it has to wrap to fit
    head, tail = first_line.split()[0], first_line.split()[-1]
    shown = words_between(screen, f"⎿ {head}", tail)[1:]  # without the ⎿
    assert shown == first_line.split(), screen  # whole, in order, no word cut
    flat = " ".join(screen.split())
    assert flat.count(" ".join(first_line.split())) == 1, screen  # not repeated
    answer = words_between(screen, "Sentence1", "number4.")
    assert answer == ANSWER.split(), screen
    assert screen.count("Sentence1 ") == 1
