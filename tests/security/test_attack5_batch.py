"""attacker5 B4: ``reasonix batch`` on a repository that is a linked worktree (``git worktree
add``; a submodule's checkout is the same: its ``.git`` is a file) writes the user's original
repository.

The copy is made from a shared clone only where the source's ``.git`` is a folder
(batch/workspace.py baseline_for); otherwise the folder is copied whole, and its ``.git`` FILE
(``gitdir: <the user's repository>/.git/worktrees/NAME``) comes along. The batch's own diff then
runs ``git add -A --intent-to-add`` in the copy on the host, which updates the index of the
USER'S worktree: what the model deleted in its copy is staged as deleted there, what it created is
added as intent-to-add. The user's next commit in that worktree deletes the file. Control: the
same task on the main checkout (a ``.git`` folder) leaves the user's status as it was.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.security.support import Lab, lab

__all__ = ["lab"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

MODEL = "rm b.txt; echo planted > new.txt; echo edited > a.txt"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@x", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _user_repository(lab: Lab) -> tuple[Path, Path]:
    main = lab.tmp / "main"
    main.mkdir()
    _git(main, "init", "-q")
    (main / "a.txt").write_text("a\n")
    (main / "b.txt").write_text("b\n")
    _git(main, "add", ".")
    _git(main, "commit", "-qm", "init")
    worktree = lab.tmp / "feature"
    _git(main, "worktree", "add", "-q", str(worktree))
    return main, worktree


def _batch_on(lab: Lab, repo: Path) -> tuple[str, str]:
    """The user's ``git status`` of ``repo`` before and after a batch task ran on it."""
    before = _git(repo, "status", "--porcelain")
    lab.ex.push(Reply.call("bash", {"command": MODEL}), Reply.text("done"))
    task_file = lab.tmp / "tasks.jsonl"
    task = {"id": "t1", "repo": str(repo), "task": "tidy", "planner": False}
    task_file.write_text(json.dumps(task) + "\n")
    out = lab.tmp / "out"
    proc = lab.cli("batch", str(task_file), "--out", str(out), "--yes", "--concurrency", "1")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert row["error"] is None and row["diff_bytes"] > 0, row  # the model's change was made
    assert (repo / "b.txt").exists() and (repo / "a.txt").read_text() == "a\n"
    return before, _git(repo, "status", "--porcelain")


def test_break_a_batch_on_a_worktree_leaves_the_users_repository_alone(lab: Lab) -> None:
    _, worktree = _user_repository(lab)
    before, after = _batch_on(lab, worktree)
    assert after == before, f"the user's worktree status was {before!r}, is now {after!r}"


def test_control_a_batch_on_the_main_checkout_leaves_it_alone(lab: Lab) -> None:
    main, _ = _user_repository(lab)
    before, after = _batch_on(lab, main)
    assert after == before == "", (before, after)
