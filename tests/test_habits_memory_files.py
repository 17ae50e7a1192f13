"""Issue 28, Claude Code's memory files through the real ``reasonix run``: ``CLAUDE.md``,
``CLAUDE.local.md`` and ``~/.claude/CLAUDE.md`` reach the model as AGENTS.md does (the
project's marked as the repository's, the user's as theirs), a link to a secret does not, a
``CLAUDE.md`` that is a link to ``AGENTS.md`` is read once, and ``/status`` names what was read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def system_prompt(project: Project) -> str:
    content = project.ex.requests[0].messages[0]["content"]
    assert isinstance(content, str)
    return content


def run(project: Project, home: Path, *args: str) -> str:
    proc = project.run(*args, env=project.env(HOME=str(home)))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_claude_md_files_reach_the_model(project: Project, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("USER-CLAUDE-MARKER-11\n")
    (project.root / "CLAUDE.md").write_text("Always use pytest. CLAUDE-MARKER-22\n")
    (project.root / "CLAUDE.local.md").write_text("LOCAL-MARKER-33\n")
    project.ex.push(Reply.text("ok"))
    run(project, home, "run", "hello")
    system = system_prompt(project)
    for marker in ("USER-CLAUDE-MARKER-11", "CLAUDE-MARKER-22", "LOCAL-MARKER-33"):
        assert marker in system
    assert f"## Your file: {home / '.claude' / 'CLAUDE.md'}" in system
    assert f"## Project file (from the repository): {project.root / 'CLAUDE.md'}" in system


def test_a_claude_md_link_to_a_secret_is_not_read(project: Project, tmp_path: Path) -> None:
    (project.root / ".env").write_text("API_TOKEN=SECRET-VALUE-44\n")
    os.symlink(".env", project.root / "CLAUDE.md")
    outside = tmp_path / "outside.md"
    outside.write_text("OUTSIDE-MARKER-55\n")
    os.symlink(outside, project.root / "CLAUDE.local.md")
    project.ex.push(Reply.text("ok"))
    run(project, tmp_path / "home", "run", "hello")
    system = system_prompt(project)
    assert "SECRET-VALUE-44" not in system
    assert "OUTSIDE-MARKER-55" not in system


def test_claude_md_linked_to_agents_md_is_read_once(project: Project, tmp_path: Path) -> None:
    (project.root / "AGENTS.md").write_text("SHARED-MARKER-66\n")
    os.symlink("AGENTS.md", project.root / "CLAUDE.md")
    project.ex.push(Reply.text("ok"))
    run(project, tmp_path / "home", "run", "hello")
    assert system_prompt(project).count("SHARED-MARKER-66") == 1


def test_status_names_the_memory_files_read(project: Project, tmp_path: Path) -> None:
    (project.root / "CLAUDE.md").write_text("notes\n")
    out = run(project, tmp_path / "home", "run", "/status")
    assert "memory files read:" in out
    assert str(project.root / "CLAUDE.md") in out
    assert "executor: deepseek-flash" in out
    assert project.ex.requests == []  # a command, not a paid turn
