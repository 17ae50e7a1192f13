"""Slash commands in the interactive app, read off an emulated screen: /model switches a role's
model for the next turns after saying what it costs, /rewind with a bad argument says what to
type, and the idle toolbar is reset by /clear."""

from __future__ import annotations

import re
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


def toolbar(screen: str) -> str:
    return next(r for r in screen.splitlines() if "session $" in r)


def test_model_switch_says_what_it_costs_and_applies_next_turn(project: Project) -> None:
    project.ex.push(Reply.text("On flash."), Reply.text("On pro now."))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("first")
        term.wait("On flash.")
        term.sendline("/model executor deepseek-v4-pro")
        screen = term.wait("later requests are cached again")
        assert "now runs on deepseek-v4-pro (was deepseek-flash)" in screen
        assert re.search(r"about \d+ prompt tokens uncached \(about \$\d", screen)
        term.sendline("second")
        screen = term.wait("On pro now.")
        assert "cache miss" not in screen  # a planned break, not a surprise
        term.sendline("/model")
        term.wait("executor: deepseek-v4-pro")
        term.sendline("/model executor no-such-model")
        term.wait("Unknown model 'no-such-model'")
    finally:
        term.close()
    first, second = project.ex.requests
    assert first.body["model"] == "deepseek-flash"
    assert second.body["model"] == "deepseek-v4-pro"
    assert second.messages[: len(first.messages)] == first.messages  # the history is kept


def test_rewind_with_a_word_says_what_to_type(project: Project) -> None:
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("/rewind abc")
        screen = term.wait(r"Usage: /rewind \[TURN\]")
        assert "invalid literal" not in screen
    finally:
        term.close()


def test_the_toolbar_is_current_after_clear(project: Project) -> None:
    project.ex.push(Reply.text("Some answer that costs a little."))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("spend")
        term.wait("costs a little")
        screen = term.wait(r"session \$0\.0*[1-9]")
        assert re.search(r"executor \S+ ctx [1-9]", toolbar(screen)) or "ctx 0%" in toolbar(screen)
        term.sendline("/clear")
        term.wait("New session")
        screen = term.wait(lambda s: "session $0.0000" in s)
        assert "ctx 0%" in toolbar(screen) and "hit –" in toolbar(screen)
    finally:
        term.close()


def executor_ctx(screen: str) -> float:
    found = re.search(r"executor \S+ ctx ([\d.]+)%", toolbar(screen))
    assert found, toolbar(screen)
    return float(found.group(1))


def test_the_toolbar_is_current_after_rewind_and_compact(project: Project) -> None:
    long = "A long answer to fill the context. " * 300
    project.ex.push(
        Reply.text(long + "END-ONE"),
        Reply.text(long + "END-TWO"),
        Reply.text(long + "END-THREE"),
        Reply.text("Summary: three long answers were given."),
    )
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text() + "\n[compaction]\nkeep_recent_turns = 1\n")
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("first")
        term.wait(r"END-ONE\n(.*\n)*.*session \$0\.0*[1-9]")
        term.sendline("second")
        two = executor_ctx(term.wait(r"END-TWO\n(.*\n)*.*session \$0\.0*[1-9]"))
        term.sendline("/rewind 2")
        term.wait("Rewound to before turn 2")
        one = executor_ctx(term.wait(lambda s: executor_ctx(s) < two))
        term.sendline("third")
        before = executor_ctx(term.wait(lambda s: "END-THREE" in s and executor_ctx(s) > one))
        term.sendline("/compact")
        screen = term.wait("compacted executor history")
        assert "Compacted the executor's history" not in screen  # said once, not twice
        after = executor_ctx(term.wait(lambda s: executor_ctx(s) < before))
        assert after < before and one < two
    finally:
        term.close()
