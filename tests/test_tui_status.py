"""The live status line while a turn runs, and the idle toolbar, read off an emulated screen."""

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


def test_status_line_during_a_slow_turn(project: Project) -> None:
    project.ex.push(
        Reply.call("bash", {"command": "echo hi"}),
        slow(Reply.text("All done after a slow think.")),
    )
    (project.root / "reasonix.toml").write_text(
        (project.root / "reasonix.toml").read_text() + '\n[permissions]\nmode = "yolo"\n'
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("run echo")
        # While the slow request is pending the status line says who works, the clock, the
        # turn's tokens and cost, and how to interrupt.
        term.wait("● bash\\(echo hi\\)")
        screen = term.wait(r"executor · [1-9]\d*s · [\d.]+k? tok · \$0\.\d{4} · esc to interrupt")
        assert "0 tok" not in screen  # the first request's tokens are counted
        term.wait(r"executor · ([2-9]|[1-9]\d+)s")  # the clock moves while nothing else does
        screen = term.wait("All done after a slow think.")
        term.wait(r"── done")
        screen = term.wait(r"session \$0\.\d{4}")
        assert "esc to interrupt" not in screen  # the status line is gone with the turn
        # The idle toolbar: the mode and the session's cost, not a stale "idle".
        assert "yolo" in screen and "session $" in screen
    finally:
        term.close()


def test_status_line_and_toolbar_fit_80_columns(project: Project) -> None:
    project.ex.push(slow(Reply.text("Short answer."), 3.0))
    term = Terminal(project, rows=30, cols=140)
    try:
        term.ready()
        term.resize(30, 80)
        term.sendline("hello")
        term.wait("esc to interrupt")
        for row in term.rows():
            assert len(row) <= 80
        status = next(r for r in term.rows() if "esc to interrupt" in r)
        assert status.endswith("esc to interrupt")
        term.wait("Short answer.")
        screen = term.wait("session \\$")
        toolbar = next(r for r in screen.splitlines() if "session $" in r)
        assert len(toolbar) <= 80 and "executor" in toolbar
    finally:
        term.close()
