"""Approving "for this session" in the real interactive app (a pseudo-terminal, read off an emulated
screen) never allows more than the rule it shows. Approving ``git diff --stat`` for the session
proposes ``bash(git diff)`` and ``bash(git diff *)``; the rules engine still asks before
``git diff --output=FILE`` (the rule's text covers it, but it writes a file), while a plain
``git diff HEAD`` runs unasked. A wrapper (``nice``) gets only its exact command, so approving
``nice -n 5 ls`` does not approve ``nice touch ...``. The control answers yes to the same two
commands and sees the files they write, so the probes can see a break."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reasonix.testing import Reply
from tests.security.support import record
from tests.support.project import Project, project
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]

WRITES_VIA_GIT = "git diff --output=pwned-diff.txt"
WRITES_VIA_NICE = "nice touch pwned-nice"


def git_repo(project: Project) -> None:
    root = project.root

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    (root / "seed.txt").write_text("seed\n")
    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "seed")
    (root / "seed.txt").write_text("seed\nchanged\n")


def approval_for(term: Terminal, command: str) -> str:
    """Wait for the approval question about ``command``; the screen then."""
    shown = f"bash: {command}"
    return term.wait(lambda s: shown in s and "Allow?" in s.split(shown, 1)[1])


def test_a_session_rule_never_allows_more_than_it_says(
    project: Project, request: pytest.FixtureRequest
) -> None:
    git_repo(project)
    project.ex.push(
        Reply.call("bash", {"command": "git diff --stat"}),
        Reply.call("bash", {"command": WRITES_VIA_GIT}),
        Reply.call("bash", {"command": "git diff HEAD"}),
        Reply.call("bash", {"command": "nice -n 5 ls"}),
        Reply.call("bash", {"command": WRITES_VIA_NICE}),
        Reply.text("All checked."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("look at the diff")
        screen = approval_for(term, "git diff --stat")
        assert "bash(git diff), bash(git diff *)" in screen
        term.sendline("a")
        # The rule's text covers it, but it writes a file: asked again, and refused here.
        approval_for(term, WRITES_VIA_GIT)
        term.sendline("n")
        # `git diff HEAD` runs under the rule without a question; the next one is about nice.
        screen = approval_for(term, "nice -n 5 ls")
        assert "bash(nice -n 5 ls)" in screen and "bash(nice *)" not in screen
        term.sendline("a")
        approval_for(term, WRITES_VIA_NICE)
        term.sendline("n")
        term.wait("All checked.")
    finally:
        term.close()
    assert "bash: git diff HEAD" not in term.log
    assert not (project.root / "pwned-diff.txt").exists()
    assert not (project.root / "pwned-nice").exists()
    results = [r.messages[-1] for r in project.ex.requests[1:]]
    assert all(m["role"] == "tool" for m in results)
    assert "changed" in results[2]["content"]  # git diff HEAD ran and showed the change
    assert "declined" in results[1]["content"] and "declined" in results[4]["content"]
    record(request, "session allow rules", 2, 0)


def test_control_the_same_commands_approved_write_their_files(project: Project) -> None:
    git_repo(project)
    project.ex.push(
        Reply.call("bash", {"command": WRITES_VIA_GIT}),
        Reply.call("bash", {"command": WRITES_VIA_NICE}),
        Reply.text("Written."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("write them")
        approval_for(term, WRITES_VIA_GIT)
        term.sendline("y")
        approval_for(term, WRITES_VIA_NICE)
        term.sendline("y")
        term.wait("Written.")
    finally:
        term.close()
    assert "changed" in (project.root / "pwned-diff.txt").read_text()
    assert (project.root / "pwned-nice").exists()
