"""Issue 28, the slash commands people bring from Claude Code and Codex, in the real app on a
pseudo-terminal against the fake servers, as a newcomer would type them in one session:
``/init`` has the model write AGENTS.md, shown for approval; ``/diff`` shows what the session
changed; ``/permissions`` names the rule just allowed for the session; ``/context`` splits the
window; ``/agents`` lists the built-in subagent types; ``/export`` writes the transcript. Only
``/init``'s turn costs requests."""

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

AGENTS = "# AGENTS.md\n\nTests: `pytest -q`.\n"


def test_the_commands_a_claude_code_user_types_first(project: Project) -> None:
    (project.root / "app.py").write_text("print('hi')\n")
    project.ex.push(
        Reply.call("write_file", {"path": "AGENTS.md", "content": AGENTS}),
        Reply.text("Wrote AGENTS.md."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("/init")
        screen = term.wait(r"Allow\? \[y/a/n\]")
        assert "Creates AGENTS.md" in screen
        term.sendline("a")  # allow for the session: /permissions will name the rule
        term.wait("AGENTS.md written: ")
        term.sendline("/diff")
        screen = term.wait(r"1 file changed, 3 insertions\(\+\), 0 deletions\(-\)")
        term.wait(r"\+Tests: `pytest -q`\.")
        assert "+++ b/AGENTS.md" in term.text()
        term.sendline("/permissions")
        screen = term.wait("allowed for this session")
        assert "Permission mode: ask" in screen
        term.sendline("/context")
        screen = term.wait(r"tool results \(1\)")
        assert "executor (deepseek-flash, window" in screen
        term.sendline("/agents")
        term.wait(r"Explore \(read-only\) — built in")
        term.sendline("/export")
        term.wait("Exported the transcript to")
    finally:
        term.close()
    assert (project.root / "AGENTS.md").read_text() == AGENTS
    (exported,) = project.root.glob("reasonix-*.md")
    text = exported.read_text()
    assert "Study this repository" in text and "Wrote AGENTS.md." in text
    assert len(project.ex.requests) == 2  # /init's two steps; the other commands cost nothing
