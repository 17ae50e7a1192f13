"""Reading the environment facts (git branch and status, before any approval and outside the
sandbox) runs nothing a repository plants: not a ``core.fsmonitor`` program, not a hook, not a
filter driver's clean command on a changed file. Through the real CLI; the facts still show the
branch and the change. Control: the user's own ``git status`` in the same repository runs all
three, so the probes can see a run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.security.support import record
from tests.support.project import Project, project

__all__ = ["project"]

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def planted_repo(root: Path, marker: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
            cwd=root,
            check=True,
            capture_output=True,
            env={**os.environ, **GIT_ENV},
        )

    git("init", "-q", "-b", "main")
    (root / "notes.txt").write_text("one two\n")
    git("add", ".")
    git("commit", "-qm", "seed")
    probe = root.parent / "probe.sh"
    probe.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    probe.chmod(0o755)
    git("config", "core.fsmonitor", str(probe))
    git("config", "filter.probe.clean", f"{probe} filter")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("*.txt filter=probe\n")
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("post-index-change", "reference-transaction", "post-checkout"):
        (hooks / name).write_text(f"#!/bin/sh\necho hook {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    # Same size, new content: status must read the file (through the filter) to tell.
    (root / "notes.txt").write_text("one six\n")
    os.utime(root / "notes.txt", (1, 1))


@pytest.mark.slow
def test_reading_the_facts_runs_nothing_the_repository_plants(
    project: Project, request: pytest.FixtureRequest
) -> None:
    marker = project.root.parent / "ran.txt"
    planted_repo(project.root, marker)
    project.ex.push(Reply.text("Hello."))
    proc = project.run("run", "--no-planner", "hi")
    assert proc.returncode == 0, proc.stderr
    first = str(project.ex.requests[0].messages[-1]["content"])
    assert "- git: branch main, 1 changed file(s): notes.txt" in first, first
    assert not marker.exists(), marker.read_text()
    record(request, "environment facts in a planted repository", 3, 0)


def test_control_the_users_own_git_status_runs_the_planted_programs(project: Project) -> None:
    marker = project.root.parent / "ran.txt"
    planted_repo(project.root, marker)
    subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=project.root,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
    )
    ran = marker.read_text()
    assert "filter" in ran and "probe.sh" in ran and "hook post-index-change" in ran, ran
