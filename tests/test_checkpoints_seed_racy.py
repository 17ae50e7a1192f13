"""A first snapshot seeded from a user's index that was written right after the files (a fresh
clone or checkout, ``git add`` of what was just saved): git's stat comparison cannot vouch for
those files, so they are hashed now (:func:`reasonix.safety.snapshot_seed.vouch`); a file whose
bytes are its entry's keeps the entry and no blob is written for it (writing one per file was
most of the first snapshot's time), a file whose bytes differ is stored as it is now, and a
change right after that snapshot, in the same second, same size, old modification time put
back, is still caught by the next look."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from reasonix.safety.checkpoints import CheckpointManager
from tests.support.checkpoints import state
from tests.support.git_env import ISOLATED_GIT

GIT_ENV = ISOLATED_GIT
FILES = 40


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout


def _fresh_clone_like(root: Path) -> None:
    """Files and the index written in the same second or so: every file is in git's racy
    window, which the seeded look must hash."""
    root.mkdir()
    (root / "pkg").mkdir()
    for i in range(FILES):
        (root / "pkg" / f"m{i:02}.py").write_text(f"x = {i:02}\n")
    (root / "odd.cfg").write_text("mode 600\n")
    (root / "odd.cfg").chmod(0o600)
    for path in [*(root / "pkg").iterdir(), root / "odd.cfg"]:
        # An old modification time, so that git's own racy check (by mtime) leaves them to
        # its stat comparison: only their inode time is recent, as after a ``chmod``.
        os.utime(path, ns=(10**18, 10**18))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    now = time.time_ns()
    os.utime(root / ".git" / "index", ns=(now, now))


def _blobs_in_store(manager: CheckpointManager) -> set[str]:
    env = {"GIT_DIR": str(manager.store_dir / "git"), "PATH": os.environ["PATH"]}
    out = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("blob ")}


def _manager(tmp_path: Path, ws: Path) -> CheckpointManager:
    manager = CheckpointManager(ws, data_dir=tmp_path / "data", session_id="s")
    manager._copy_in_background = lambda: None  # type: ignore[method-assign]
    return manager


def test_racy_files_whose_bytes_are_their_entrys_are_not_stored_again(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _fresh_clone_like(ws)
    changed = ws / "pkg" / "m07.py"
    st = changed.stat()
    changed.write_text("x = 77\n")  # same size, old times put back: git's stat says "clean"
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns))
    before = state(ws)
    manager = _manager(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "make") is not None, manager.last_error
    assert manager._store.seeded
    stored = _blobs_in_store(manager)
    committed = _git(ws, "rev-parse", "HEAD:pkg/m00.py").strip()
    assert committed not in stored  # borrowed from the user's objects, not written
    assert len(stored) == 1  # only the one whose bytes differ from its entry
    for path in (ws / "pkg").iterdir():
        path.write_text("broken\n")
    (ws / "odd.cfg").chmod(0o644)
    manager.after_turn(1)
    manager.rewind(1)
    assert state(ws) == before  # m07's bytes now, odd.cfg's 0600, every other file


def test_a_change_right_after_the_seeded_snapshot_in_the_same_second_is_caught(
    tmp_path: Path,
) -> None:
    """The vouched files keep the user's entries (their stat in whole seconds): a change in
    the same second as the file's last one, same size and modification time, passes git's
    comparison; the look after checks those files itself."""
    for attempt in range(20):
        ws = tmp_path / f"ws{attempt}"
        _fresh_clone_like(ws)
        target = ws / "pkg" / "m03.py"
        manager = _manager(tmp_path / f"d{attempt}", ws)
        assert manager.before_step(1, "c1", "bash", "x") is not None, manager.last_error
        recorded = os.stat(target)
        target.write_text("x = 33\n")  # the step's work: the same size
        os.utime(target, ns=(recorded.st_atime_ns, recorded.st_mtime_ns))
        if os.stat(target).st_ctime_ns // 10**9 == recorded.st_ctime_ns // 10**9:
            break
    else:
        pytest.fail("no attempt kept the change in the same second as the file's last one")
    assert manager.before_step(1, "c2", "bash", "y") is not None, manager.last_error
    target.write_text("broken\n")
    manager.after_turn(1)
    manager.undo(1)
    assert target.read_text() == "x = 33\n"
