"""An answer interrupted while it streams is kept, marked as cut, with its reasoning."""

from __future__ import annotations

import sys

import pytest

from reasonix.testing import Fault, Reply
from tests.support.project import Project, project
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def test_an_interrupted_answer_is_kept_as_a_partial_message(project: Project) -> None:
    text = "The first half of a long answer. " * 4 + "The second half never arrives."
    project.ex.push(
        Reply(
            content=text,
            reasoning="Thinking about halves.",
            fault=Fault(stall_in="text", stall_seconds=60, at=0.5),
        ),
        Reply.text("Continuing from what I said."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("tell me a long story")
        term.wait("The first half of a long answer.")
        term.send("\x1b")  # Esc interrupts
        term.wait("Interrupted")
        term.sendline("go on")
        term.wait("Continuing from what I said.")
    finally:
        term.close()
    sent = project.ex.requests[-1].messages
    assert sent[-1] == {"role": "user", "content": "go on"}
    partial = sent[-2]
    assert partial["role"] == "assistant"
    assert partial["content"].startswith("The first half of a long answer.")
    assert "never arrives" not in partial["content"]
    assert partial["content"].endswith("[interrupted by the user]")
    assert partial["reasoning_content"] == "Thinking about halves."
