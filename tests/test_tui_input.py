"""Input in the interactive app, read off an emulated screen: type-ahead during a turn, Tab
completion of commands and paths, ``@path`` mentions, expanding tool results, rendered tables
and headings, and the recap shown on resume."""

from __future__ import annotations

import sys

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.tui import Terminal, slow

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def yolo(project: Project) -> None:
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text() + '\n[permissions]\nmode = "yolo"\n')


def user_texts(project: Project) -> list[str]:
    """What the user sent in each request (without the environment facts of the first)."""
    return [
        m["content"].split("\n\nEnvironment (at the start")[0]
        for r in project.ex.requests
        for m in r.messages[-1:]
        if m["role"] == "user"
    ]


def test_keys_typed_during_a_turn_are_queued_and_sent_next(project: Project) -> None:
    project.ex.push(slow(Reply.text("First answer."), 5.0), Reply.text("Second answer."))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("first question")
        term.wait("esc to interrupt")
        term.sendline("second question")
        term.send("a draft")
        screen = term.wait(r"› a draft")
        assert "queued (1): second question" in screen
        term.wait("First answer.")
        # The queued line goes next, by itself; the unfinished line waits at the prompt.
        term.wait("Second answer.")
        term.wait(lambda s: "› a draft" in s and "queued" not in s)
        assert user_texts(project) == ["first question", "second question"]
        term.sendline("")  # Enter sends the draft that was kept
        project.ex.push(Reply.text("Third answer."))
        term.wait("Third answer.")
        assert user_texts(project)[-1] == "a draft"
    finally:
        term.close()


def test_tab_completes_commands_and_paths_and_mentions_attach_files(project: Project) -> None:
    (project.root / "calc.py").write_text("def add(a, b):\n    return a + b  # MARKER\n")
    (project.root / "pkg").mkdir()
    (project.root / "pkg" / "mod.py").write_text("x = 1\n")
    project.ex.push(Reply.text("It adds."), Reply.text("A package."))
    term = Terminal(project)
    try:
        term.ready()
        term.send("/expa\t")  # /exp is also /export
        term.wait(r"› /expand")
        term.send("\x15")  # Ctrl-U: clear the line
        term.wait(lambda screen: "/expand" not in screen)
        term.send("what does @ca")
        term.wait("› what does @ca")
        term.send("\t")
        term.wait(r"› what does @calc\.py")
        term.send(" do?\r")
        term.wait("attached @calc.py")
        term.wait("It adds.")
        sent = project.ex.requests[-1].messages[-1]["content"]
        assert sent.startswith("what does @calc.py do?")  # the words as typed come first
        assert "return a + b  # MARKER" in sent  # the file rides at the tail of the turn
        term.send("and @pk")
        term.wait("› and @pk")
        term.send("\t")
        term.wait(r"› and @pkg/")
        term.send("\r")
        term.wait("A package.")
        sent = project.ex.requests[-1].messages[-1]["content"]
        assert "folder pkg/" in sent and "mod.py" in sent
        # The system prompt did not change: the attachments are in the user turns only.
        first, last = project.ex.requests[0].messages[0], project.ex.requests[-1].messages[0]
        assert first == last and "MARKER" not in first["content"]
    finally:
        term.close()


def test_tool_results_expand_by_number_and_with_ctrl_o(project: Project) -> None:
    yolo(project)
    project.ex.push(
        # A folded command result shows its output's last line: what only /expand and
        # Ctrl-O show comes before it.
        Reply.call("bash", {"command": "echo hidden-$((6*7)); seq 1 3"}),
        Reply.call("bash", {"command": "echo tail-$((5*5)); seq 1 2"}),
        Reply.text("Ran both."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("run them")
        screen = term.wait("Ran both.")
        assert "hidden-42" not in screen and "tail-25" not in screen
        assert "/expand 1" in screen and "/expand 2" in screen
        term.sendline("/expand 1")
        term.wait("hidden-42")
        term.send("\x0f")  # Ctrl-O: the last result
        term.wait("tail-25")
        term.sendline("/expand 9")
        term.wait(r"There is no tool result #9 \(1 to 2\)")
    finally:
        term.close()


def test_tables_render_and_headings_stay_left(project: Project) -> None:
    answer = (
        "# Results\n\nHere they are:\n\n| name | score |\n|------|-------|\n"
        "| alpha | 10 |\n| beta | 20 |\n\nThat is all.\n"
    )
    project.ex.push(Reply.text(answer))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("show results")
        screen = term.wait("That is all.")
        rows = screen.splitlines()
        heading = next(r for r in rows if "Results" in r)
        assert heading.startswith("Results")  # left-aligned, not centred
        assert "|------|" not in screen  # no raw pipes left
        header = next(i for i, r in enumerate(rows) if "name" in r and "score" in r)
        assert set(rows[header + 1].strip()) == {"─"}  # a rule under the header
        alpha, beta = rows[header + 2], rows[header + 3]
        # Columns lined up as a table, not pipes as typed.
        assert alpha.index("10") == beta.index("20") == rows[header].index("score")
    finally:
        term.close()


def test_resume_shows_a_recap_of_the_last_turns(project: Project) -> None:
    project.ex.push(Reply.text("Paris is the capital."), Reply.text("Berlin, that one."))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("capital of France?")
        term.wait("Paris is the capital.")
        term.sendline("and of Germany?")
        term.wait("Berlin, that one.")
        term.sendline("/exit")
        term.wait("saved")
    finally:
        term.close()
    term = Terminal(project, "-c")
    try:
        screen = term.wait("recap")
        screen = term.wait("Berlin, that one.")
        rows = screen.splitlines()
        start = next(i for i, r in enumerate(rows) if "recap" in r)
        recap = rows[start:]
        assert recap[1] == "› capital of France?"
        assert recap[2].strip() == "Paris is the capital."
        assert recap[3] == "› and of Germany?"
    finally:
        term.close()
