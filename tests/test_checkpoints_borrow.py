"""The first snapshot of a git repository borrows the blobs of the user's index instead of
copying them while the first step waits (:mod:`reasonix.safety.snapshot_seed`): the copy runs
in the background after it, a step does not wait for it, and once it is done a ``git gc`` in
the user's repository that drops those blobs takes nothing from a snapshot. The quick look of
later snapshots (git's stat comparison against our index) still catches a change made in the
same second as the last snapshot, of the same size, with the old modification time put back."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasonix.safety import snapshot_seed
from reasonix.safety.checkpoints import CheckpointManager
from tests.support.checkpoints import state
from tests.support.git_env import ISOLATED_GIT

GIT_ENV = ISOLATED_GIT
SECRET = b"the only copy of this work is in the first snapshot\n"


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=root,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=check,
    )


def _repository(root: Path) -> None:
    root.mkdir()
    (root / "pkg").mkdir()
    for i in range(20):
        (root / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    (root / "work.txt").write_bytes(SECRET)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    # The index written well after the files (a checkout of many files): git's stat data, not
    # a new read of every file, vouches for them, so the first snapshot borrows their blobs.
    later = os.stat(root / ".git" / "index").st_mtime_ns + 10 * 10**9
    os.utime(root / ".git" / "index", ns=(later, later))


def _manager(tmp_path: Path, ws: Path) -> CheckpointManager:
    return CheckpointManager(ws, data_dir=tmp_path / "data", session_id="s")


def _held_copy(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make the background copy wait at its start until ``release`` is set (``started`` says it
    got there): a first snapshot whose copy is as slow as the test wants."""
    started, release = threading.Event(), threading.Event()
    real: Callable[..., Any] = snapshot_seed._pack_into

    def held(*args: Any, **kwargs: Any) -> Any:
        started.set()
        release.wait(timeout=120)
        return real(*args, **kwargs)

    monkeypatch.setattr(snapshot_seed, "_pack_into", held)
    return started, release


def _user_drops_work_txt(ws: Path) -> str:
    """Rewrite the user's history without ``work.txt`` and prune: its blob leaves the user's
    repository for good. Returns the blob's name."""
    blob = _git(ws, "rev-parse", "HEAD:work.txt").stdout.strip()
    _git(ws, "rm", "-q", "--cached", "work.txt")
    _git(ws, "commit", "-q", "--amend", "-m", "start, without work.txt")
    _git(ws, "reflog", "expire", "--expire=now", "--all")
    _git(ws, "gc", "-q", "--prune=now")
    assert _git(ws, "cat-file", "-e", blob, check=False).returncode != 0  # really gone
    return blob


def test_the_first_step_does_not_wait_for_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    before = state(ws)
    started, release = _held_copy(monkeypatch)
    manager = _manager(tmp_path, ws)
    manager.prepare_in_background()  # the session opens: its first snapshot
    assert started.wait(timeout=60), manager.last_error
    # The copy is held; the first step's snapshot comes back all the same.
    result: list[object] = []
    step = threading.Thread(target=lambda: result.append(manager.before_step(1, "c1", "bash", "x")))
    step.start()
    step.join(timeout=60)
    try:
        assert not step.is_alive(), "the first step waited for the copy"
        assert result and result[0] is not None, manager.last_error
        assert snapshot_seed.borrowing(manager._store)  # the copy has not run yet
        (ws / "work.txt").unlink()
        (ws / "pkg" / "m1.py").write_text("broken\n")
    finally:
        release.set()
    manager.wait()
    assert not snapshot_seed.borrowing(manager._store)
    manager.after_turn(1)
    manager.rewind(1)
    assert state(ws) == before


def test_after_the_copy_a_gc_in_the_users_repository_takes_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    manager = _manager(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "rm work.txt") is not None, manager.last_error
    assert manager._store.seeded
    (ws / "work.txt").unlink()
    manager.after_turn(1)
    manager.wait()  # the copy is done
    assert not snapshot_seed.borrowing(manager._store)
    _user_drops_work_txt(ws)
    result = manager.rewind(1)
    assert (ws / "work.txt").read_bytes() == SECRET, result.text


def test_control_without_the_copy_the_users_gc_takes_the_snapshots_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control of the test above: with the copy switched off the snapshot still borrows,
    and the same ``git gc`` leaves the rewind nothing to restore."""

    def no_copy(*_args: Any, **_kwargs: Any) -> None:
        raise OSError("copy switched off by the test")

    monkeypatch.setattr(snapshot_seed, "_pack_into", no_copy)
    ws = tmp_path / "ws"
    _repository(ws)
    manager = _manager(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "rm work.txt") is not None, manager.last_error
    (ws / "work.txt").unlink()
    manager.after_turn(1)
    manager.wait()
    assert snapshot_seed.borrowing(manager._store)
    _user_drops_work_txt(ws)
    manager.rewind(1)
    assert not (ws / "work.txt").exists()


def test_borrowing_writes_nothing_to_the_users_repository(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    (ws / "pkg" / "m3.py").write_text("x = 'changed since the commit'\n")

    def files() -> dict[str, tuple[int, int]]:
        return {
            str(p): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in (ws / ".git").rglob("*")
            if p.is_file()
        }

    before = files()
    manager = _manager(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "x") is not None, manager.last_error
    # Steps that write trees and blobs the user's repository also has, while it borrows.
    (ws / "pkg" / "m3.py").write_text("x = 3\n")  # the committed bytes again
    assert manager.before_step(1, "c2", "bash", "y") is not None, manager.last_error
    manager.wait()
    assert manager._store.seeded
    assert files() == before


def test_a_change_in_the_same_second_as_the_last_snapshot_is_caught(tmp_path: Path) -> None:
    """Same size, the old modification time put back, the inode time in the same second as
    the snapshot that recorded the file: git's stat comparison (whole seconds) sees nothing,
    the quick look reads the file again anyway."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "same.txt"
    manager = _manager(tmp_path, ws)
    for attempt in range(20):
        target.write_bytes(b"aaaa\n")
        os.utime(target, ns=(10**18, 10**18))  # an old mtime: not racy by git's own rule
        assert manager.before_step(1, f"a{attempt}", "bash", "x") is not None, manager.last_error
        recorded = os.stat(target)
        target.write_bytes(b"bbbb\n")  # the step's work
        os.utime(target, ns=(recorded.st_atime_ns, recorded.st_mtime_ns))
        if os.stat(target).st_ctime_ns // 10**9 == recorded.st_ctime_ns // 10**9:
            break  # the same second: the case git alone misses
        manager.after_turn(1)
        manager.rewind(1)
    else:
        pytest.fail("no attempt kept the change in the same second as the snapshot")
    assert manager.before_step(1, "b", "bash", "y") is not None, manager.last_error
    target.write_bytes(b"cccc\n")
    manager.after_turn(1)
    manager.undo(1)
    assert target.read_bytes() == b"bbbb\n"


def test_the_stores_pruning_copies_what_is_borrowed_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git gc --prune=now`` in our store while it borrows would be harmless to the user but
    leave our snapshots half-copied; pruning copies the borrowed objects first instead."""
    ws = tmp_path / "ws"
    _repository(ws)
    manager = _manager(tmp_path, ws)
    monkeypatch.setattr(manager, "_copy_in_background", lambda: None)  # no background copy
    assert manager.before_step(1, "c1", "bash", "x") is not None, manager.last_error
    assert snapshot_seed.borrowing(manager._store)
    blob = _git(ws, "rev-parse", "HEAD:work.txt").stdout.strip()
    assert manager.prune(now=10**10) == 1, manager.last_error  # the step is long past keep_days
    assert not snapshot_seed.borrowing(manager._store)
    _user_drops_work_txt(ws)
    env = {"GIT_DIR": str(manager.store_dir / "git"), "PATH": os.environ["PATH"]}
    ours = subprocess.run(["git", "cat-file", "-e", blob], env=env, check=False)
    assert ours.returncode == 0  # the last snapshot's blob is in our store, not only theirs


def test_a_rewind_while_borrowing_reads_the_users_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    before = state(ws)
    manager = _manager(tmp_path, ws)
    monkeypatch.setattr(manager, "_copy_in_background", lambda: None)  # no copy yet
    assert manager.before_step(1, "c1", "bash", "x") is not None, manager.last_error
    (ws / "work.txt").unlink()
    (ws / "pkg" / "m2.py").write_text("broken\n")
    manager.after_turn(1)
    manager.rewind(1)
    assert snapshot_seed.borrowing(manager._store)
    assert state(ws) == before
