"""Environment facts reach the model at the tail of the first user turn, never the system
prompt: a resumed session does not get them again, and the prompt bytes stay the same."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest

from reasonix.agent.prompts import EXECUTOR_SYSTEM_PROMPT, PLANNER_SYSTEM_PROMPT
from reasonix.app.environment import environment_facts
from reasonix.testing import Reply
from tests.support.project import Project, project

__all__ = ["project"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_facts_name_os_shell_folder_date_and_git_state(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.py").write_text("x = 1\n")
    facts = environment_facts(
        tmp_path, now=dt.datetime(2026, 12, 1, 9, 0), environ={"SHELL": "/usr/bin/zsh"}
    )
    assert "- shell: zsh" in facts
    assert f"- folder: {tmp_path}" in facts
    assert "- date: 2026-12-01 Tuesday" in facts
    assert "- git: branch trunk, 1 untracked file(s): a.py" in facts
    plain = environment_facts(tmp_path / "..", environ={})
    assert "- git: not a git repository" in plain or "- git: branch" in plain


def _commit(root: Path, name: str = "a.py") -> None:
    (root / name).write_text("x = 1\n")
    git(root, "add", name)
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")


def test_branch_read_off_status_ahead_of_its_upstream_and_detached(tmp_path: Path) -> None:
    upstream, clone = tmp_path / "up", tmp_path / "clone"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    _commit(upstream)
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    _commit(clone, "b.py")  # main...origin/main [ahead 1]
    (clone / "a.py").write_text("x = 2\n")
    facts = environment_facts(clone, environ={})
    assert "- git: branch main, 1 changed file(s): a.py" in facts, facts
    git(clone, "checkout", "-q", "--detach")
    assert "- git: branch (detached HEAD), 1 changed" in environment_facts(clone, environ={})
    git(clone, "checkout", "-q", "-b", "feature/x.y")
    git(clone, "checkout", "-q", "--", "a.py")
    assert "- git: branch feature/x.y, clean" in environment_facts(clone, environ={})


def test_facts_read_a_repository_in_two_gits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch opens many sessions at once and each git is a process start: the branch and the
    status come from one ``git status --branch`` after the filter drivers are read."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    _commit(repo)
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    bin_dir, log = tmp_path / "bin", tmp_path / "git.log"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(
        f'#!/bin/sh\necho "$*" >> {log}\nexec {real.stdout.strip()} "$@"\n'
    )
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert "- git: branch main, clean" in environment_facts(repo, environ={})
    calls = log.read_text().splitlines()
    assert len(calls) == 2, calls
    log.unlink()
    assert "- git: not a git repository" in environment_facts(tmp_path, environ={})


@pytest.mark.slow
def test_facts_ride_at_the_tail_of_the_first_user_turn_only(project: Project) -> None:
    git(project.root, "init", "-q", "-b", "main")
    project.ex.push(Reply.text("One."), Reply.text("Two."))
    first = project.run("run", "hello there")
    assert first.returncode == 0, first.stderr
    again = project.run("run", "-c", "and again")
    assert again.returncode == 0, again.stderr
    one, two = project.ex.requests
    system = one.messages[0]["content"]
    assert system == two.messages[0]["content"]  # byte-identical across runs
    assert "Environment" not in system and "2026" not in system
    opening = one.messages[1]["content"]
    assert opening.startswith("hello there\n\nEnvironment (at the start of this session):")
    assert "- git: branch main" in opening
    assert two.messages[-1]["content"] == "and again"  # not told again on resume
    assert two.messages[: len(one.messages)] == one.messages  # the prefix held


def test_prompts_stay_lean() -> None:
    # Every token is paid on every request: keep each prompt under about 2k tokens.
    assert len(EXECUTOR_SYSTEM_PROMPT) < 8000 and len(PLANNER_SYSTEM_PROMPT) < 8000
