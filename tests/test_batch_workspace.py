"""A batch task's copy of a local repository starts from the batch's shared shallow clone of its
``HEAD``: the copy holds one commit, not the source's history, yet its files, its ``HEAD`` and
the diff a task leaves are those of a whole-folder copy; nothing in it is a hard link to
something shared, and the source is not written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reasonix.batch.workspace import WorkspaceError, baseline_for, diff, prepare_copy
from tests.support.git_env import ISOLATED_GIT

ENV = {
    **os.environ,
    **ISOLATED_GIT,
}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=ENV, capture_output=True, text=True, check=True
    ).stdout.strip()


def _source(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    for i in range(3):
        (root / "app.py").write_text(f"version = {i}\n")
        (root / f"m{i}.py").write_text(f"m = {i}\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", f"commit {i}")
    (root / "app.py").write_text("version = 'uncommitted'\n")
    (root / "m0.py").unlink()
    (root / "untracked.txt").write_text("new\n")
    (root / "nested").mkdir()
    _git(root / "nested", "init", "-q")
    (root / "nested" / "n.txt").write_text("n\n")
    _git(root / "nested", "add", "-A")
    _git(root / "nested", "commit", "-qm", "nested")
    (root / ".venv").mkdir()
    (root / ".venv" / "big").write_text("skipped\n")
    return root


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        out[rel.as_posix()] = path.read_bytes()
    return out


def _dot_git(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in (root / ".git").rglob("*")
        if p.is_file()
    }


def test_a_task_copy_holds_one_commit_and_the_whole_work_tree(tmp_path: Path) -> None:
    src = _source(tmp_path / "src")
    before = _dot_git(src)
    baseline = baseline_for(str(src), tmp_path / "out" / ".baselines")
    assert baseline is not None
    copy = prepare_copy(str(src), False, tmp_path / "out" / "t1" / "repo", baseline)
    whole = prepare_copy(str(src), False, tmp_path / "out" / "t2" / "repo")  # the old way
    assert _git(src, "rev-list", "--count", "HEAD") == "3"
    assert _git(copy, "rev-list", "--count", "HEAD") == "1"  # no history copied
    assert _git(copy, "rev-parse", "HEAD") == _git(src, "rev-parse", "HEAD")
    assert _files(copy) == _files(whole)
    assert "untracked.txt" in _files(copy) and ".venv/big" not in _files(copy)
    assert (copy / "nested" / ".git").is_dir()
    assert diff(copy) == diff(whole)
    assert "version = 'uncommitted'" in diff(copy) and "deleted file mode" in diff(copy)
    for path in (copy / ".git").rglob("*"):
        if path.is_file():
            assert path.stat().st_nlink == 1, path  # nothing shared with the baseline
    assert _dot_git(src) == before  # the source is only read
    # A second task reuses the same baseline.
    assert baseline_for(str(src), tmp_path / "out" / ".baselines") == baseline


def test_a_folder_that_is_no_repository_is_copied_whole(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    assert baseline_for(str(plain), tmp_path / "cache") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")
    (empty / "b.txt").write_text("b\n")
    assert baseline_for(str(empty), tmp_path / "cache") is None  # no commit yet
    copy = prepare_copy(str(empty), False, tmp_path / "copy", None)
    assert (copy / "b.txt").read_text() == "b\n"


def test_a_linked_worktree_is_copied_from_a_clone_and_its_git_file_stays_behind(
    tmp_path: Path,
) -> None:
    # A linked worktree's .git is a file naming the user's git folder: a copy that kept it
    # would have every git of ours write the user's index (attacker5 B4).
    main = _source(tmp_path / "main")
    worktree = tmp_path / "feature"
    _git(main, "worktree", "add", "-q", str(worktree))
    (worktree / "app.py").write_text("version = 'in the worktree'\n")
    index = main / ".git" / "worktrees" / "feature" / "index"
    before = index.read_bytes()
    for baseline in (baseline_for(str(worktree), tmp_path / "cache"), None):
        copy = prepare_copy(str(worktree), False, tmp_path / f"copy-{baseline is None}", baseline)
        assert (copy / ".git").is_dir()
        (copy / "m1.py").unlink()
        assert "-m = 1" in diff(copy)
    assert baseline_for(str(worktree), tmp_path / "cache") is not None
    assert index.read_bytes() == before


def test_the_diff_refuses_a_copy_whose_git_folder_was_replaced(tmp_path: Path) -> None:
    source = _source(tmp_path / "src")
    copy = prepare_copy(str(source), False, tmp_path / "copy", None)
    shutil.rmtree(copy / ".git")
    (copy / ".git").write_text(f"gitdir: {source / '.git'}\n")
    index = (source / ".git" / "index").read_bytes()
    with pytest.raises(WorkspaceError, match=r"replaced its copy's \.git"):
        diff(copy)
    assert (source / ".git" / "index").read_bytes() == index
