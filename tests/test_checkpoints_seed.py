"""A folder's first snapshot starts from its own git index (``_Store.seed``): only the files that
changed since the user's last ``git add`` are hashed, and the snapshot is the same, byte for
byte, as one that hashed every file. Where the index could name other bytes than the files'
own (attributes, line-ending conversion, assume-unchanged entries), it is not used."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reasonix.safety.checkpoints import CheckpointManager
from tests.support.checkpoints import state
from tests.support.git_env import ISOLATED_GIT

GIT_ENV = ISOLATED_GIT


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout


def _repository(root: Path) -> None:
    root.mkdir()
    for i in range(30):
        (root / "pkg").mkdir(exist_ok=True)
        (root / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "odd.cfg").write_text("mode 600\n")
    (root / "odd.cfg").chmod(0o600)
    os.symlink("pkg/m1.py", root / "link.py")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("committed but excluded\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    # After the commit: a changed tracked file, a deleted one, an untracked one, a submodule-ish
    # nested repository.
    (root / "pkg" / "m2.py").write_text("x = 'changed after the commit'\n")
    (root / "pkg" / "m3.py").unlink()
    (root / "notes.txt").write_text("untracked\n")


def _tree(manager: CheckpointManager) -> str:
    env = {"GIT_DIR": str(manager.store_dir / "git"), "PATH": os.environ["PATH"]}
    last = (manager.store_dir / "last").read_text().strip()
    out = subprocess.run(
        ["git", "cat-file", "commit", last], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout  # tree and message: the modes and skipped files ride in the message


def _first(tmp_path: Path, ws: Path, name: str) -> CheckpointManager:
    manager = CheckpointManager(ws, data_dir=tmp_path / f"data-{name}", session_id="s")
    assert manager.before_step(1, "c1", "bash", "make") is not None, manager.last_error
    return manager


def _plain_copy(ws: Path, dest: Path) -> Path:
    shutil.copytree(ws, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    for src in ws.rglob("*"):
        if ".git" in src.parts or src.is_symlink():
            continue
        os.chmod(dest / src.relative_to(ws), src.stat().st_mode & 0o7777)
    return dest


def test_the_seeded_first_snapshot_is_the_one_that_hashes_everything(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    seeded = _first(tmp_path, ws, "seeded")
    assert seeded._store.seeded
    plain_ws = _plain_copy(ws, tmp_path / "plain")
    plain = CheckpointManager(plain_ws, data_dir=tmp_path / "data-plain", session_id="s")
    assert plain.before_step(1, "c1", "bash", "make") is not None
    assert not plain._store.seeded  # no repository there: every file hashed
    assert _tree(seeded) == _tree(plain)


def test_a_seeded_snapshot_undoes_byte_exact(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    before = state(ws)
    manager = _first(tmp_path, ws, "seeded")
    assert manager._store.seeded
    (ws / "pkg" / "m2.py").write_text("the step broke it\n")
    (ws / "pkg" / "m4.py").unlink()
    (ws / "run.sh").write_text("rm -rf /\n")
    (ws / "odd.cfg").chmod(0o644)
    manager.after_turn(1)
    manager.rewind(1)
    assert state(ws) == before


def test_a_change_in_the_same_second_as_the_users_index_is_caught(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    target = ws / "pkg" / "m5.py"
    st = target.stat()
    target.write_text("x = 9\n")  # the same size as "x = 5\n"
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    # The index written in that same second: git must look at the content.
    os.utime(ws / ".git" / "index", ns=(st.st_atime_ns, st.st_mtime_ns))
    manager = _first(tmp_path, ws, "seeded")
    assert manager._store.seeded
    target.write_text("broken\n")
    manager.after_turn(1)
    manager.rewind(1)
    assert target.read_text() == "x = 9\n"


@pytest.mark.parametrize(
    "unsafe",
    ["attributes", "info-attributes", "autocrlf", "assume-unchanged"],
)
def test_an_index_that_may_hold_other_bytes_is_not_used(tmp_path: Path, unsafe: str) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    if unsafe == "attributes":
        (ws / ".gitattributes").write_text("*.py filter=lfs\n")
    elif unsafe == "info-attributes":
        (ws / ".git" / "info").mkdir(exist_ok=True)
        (ws / ".git" / "info" / "attributes").write_text("*.py text\n")
    elif unsafe == "autocrlf":
        _git(ws, "config", "core.autocrlf", "input")
    else:
        _git(ws, "update-index", "--assume-unchanged", "pkg/m6.py")
        (ws / "pkg" / "m6.py").write_text("x = 'hidden from git'\n")
    manager = _first(tmp_path, ws, "unsafe")
    assert not manager._store.seeded
    if unsafe == "assume-unchanged":
        (ws / "pkg" / "m6.py").write_text("broken\n")
        manager.after_turn(1)
        manager.rewind(1)
        assert (ws / "pkg" / "m6.py").read_text() == "x = 'hidden from git'\n"


def test_nothing_is_written_to_the_users_repository(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repository(ws)

    def state() -> dict[str, tuple[int, int]]:
        return {
            str(p): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in (ws / ".git").rglob("*")
            if p.is_file()
        }

    before = state()
    manager = _first(tmp_path, ws, "seeded")
    assert manager._store.seeded
    assert state() == before
