"""Snapshots off the critical path: a session snapshots its folder in the background as it
opens; the files a step changed are hashed right after it (while the model answers), so the
next step's own snapshot only checks; the stat cache that makes that check cheap misses no
change (same-size rewrites with the old mtime, permission-only changes, a file turned symlink,
a file deleted and made again), so undo stays byte-exact."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from reasonix.safety.checkpoints import CheckpointManager
from reasonix.store import SessionStore
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import ToolContext, ToolRegistry
from tests.support.checkpoints import manager_for, seed, state
from tests.support.sessions import Servers, open_session


def _stored(manager: CheckpointManager, content: bytes) -> bool:
    """Whether the store holds a blob with exactly ``content``."""
    sha = subprocess.run(
        ["git", "hash-object", "--stdin"], input=content, capture_output=True, check=True
    ).stdout.strip()
    env = {"GIT_DIR": str(manager.store_dir / "git"), "PATH": os.environ["PATH"]}
    probe = subprocess.run(["git", "cat-file", "-e", sha], env=env, capture_output=True)
    return probe.returncode == 0


async def test_a_session_snapshots_its_folder_as_it_opens(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    (tmp_path / "notes.md").write_bytes(b"written before the session\n")
    session = await open_session(tmp_path, servers, store)
    await session.aclose()  # waits for the background snapshot
    manager = CheckpointManager(tmp_path, data_dir=tmp_path / "data", session_id="probe")
    assert _stored(manager, b"written before the session\n")
    assert manager.steps() == []  # not a step: nothing to undo


async def test_a_steps_changes_are_hashed_right_after_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    seed(ws)
    manager = manager_for(tmp_path, ws)
    registry = ToolRegistry(default_tools(ws, use_rg=False))
    ctx = ToolContext(workspace=ws, turn=1, call_id="c1", state={"checkpoints": manager})
    args = {"path": "new.txt", "content": "made by the step\n"}
    result = await registry.execute("write_file", json.dumps(args), ctx)
    assert not result.is_error, result.content
    assert not _stored(manager, b"made by the step\n")  # the step's snapshot came before it
    manager.after_step()  # its result is out: the session calls this
    manager.wait()
    assert _stored(manager, b"made by the step\n")
    assert len(manager.steps()) == 1


@pytest.mark.slow
def test_the_stat_cache_misses_no_change(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    seed(ws)
    (ws / "same.txt").write_bytes(b"aaaa\n")
    (ws / "gone.txt").write_bytes(b"bbbb\n")
    (ws / "link-me.txt").write_bytes(b"cccc\n")
    # Older than the racy window (a file written within 2 s of a snapshot is read again
    # whatever its stat says): here only the stat cache can see the changes below.
    time.sleep(2.2)
    manager = manager_for(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "one") is not None
    # The step's work: changes a stat cache could miss.
    old = os.stat(ws / "same.txt")
    (ws / "same.txt").write_bytes(b"AAAA\n")  # same size, then the old times back
    os.utime(ws / "same.txt", ns=(old.st_atime_ns, old.st_mtime_ns))
    (ws / "private.key").chmod(0o640)  # permissions only
    gone = os.stat(ws / "gone.txt")
    (ws / "gone.txt").unlink()  # deleted and made again: same size and times
    (ws / "gone.txt").write_bytes(b"BBBB\n")
    os.utime(ws / "gone.txt", ns=(gone.st_atime_ns, gone.st_mtime_ns))
    (ws / "link-me.txt").unlink()
    (ws / "link-me.txt").symlink_to("a.txt")
    after_first = state(ws)
    manager.after_step()
    manager.wait()
    assert manager.before_step(2, "c2", "bash", "two") is not None
    (ws / "same.txt").write_bytes(b"later\n")
    (ws / "private.key").chmod(0o600)
    manager.after_turn(2)  # the files as the agent left them, as the session records
    manager.undo(1)
    assert state(ws) == after_first


def test_a_file_changed_before_a_look_is_not_read_again_yet_no_change_is_missed(
    tmp_path: Path,
) -> None:
    """A file changed within git's racy window (whole seconds) of a snapshot, but long enough
    before its look that the file system's inode time tells any later change apart: the next
    look trusts its full stat instead of hashing it again (a look that finds nothing changed
    leaves our index as it was), and still catches a same-size rewrite with the old
    modification time put back in the same second."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "same.txt"
    manager = manager_for(tmp_path, ws)
    index = manager.store_dir / "index"
    for attempt in range(20):
        target.write_bytes(b"aaaa\n")
        time.sleep(0.12)  # older than the look by more than a clock tick
        assert manager.before_step(1, f"a{attempt}", "bash", "x") is not None, manager.last_error
        recorded = os.stat(target)
        written = os.stat(index).st_mtime_ns, os.stat(index).st_ino
        assert manager.before_step(1, f"n{attempt}", "bash", "x") is not None
        assert (os.stat(index).st_mtime_ns, os.stat(index).st_ino) == written  # not hashed again
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


def test_a_step_rewrites_only_the_small_part_of_the_index(tmp_path: Path) -> None:
    """Our index is split: the entries of every file live in a shared part that a step which
    changed a few files does not write again (at 50,000 files it is 4 MB), and the snapshot
    still holds the change."""
    ws = tmp_path / "ws"
    ws.mkdir()
    seed(ws)
    for i in range(40):  # git writes the shared part again once a fifth of it changed
        (ws / f"m{i}.py").write_text(f"x = {i}\n")
    time.sleep(0.12)  # not read again by the next look (see the test above)
    manager = manager_for(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "one") is not None, manager.last_error
    # A shared part is named by its content's hash; git only touches its time when it uses it.
    shared = list((manager.store_dir / "git").glob("sharedindex.*"))
    assert len(shared) == 1
    inode = os.stat(shared[0]).st_ino
    (ws / "a.txt").write_bytes(b"changed by the step\n")
    assert manager.before_step(1, "c2", "bash", "two") is not None, manager.last_error
    assert list((manager.store_dir / "git").glob("sharedindex.*")) == shared
    assert os.stat(shared[0]).st_ino == inode
    assert _stored(manager, b"changed by the step\n")


def test_a_step_runs_few_git_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step's snapshot after our own last one: git's look at the files (two processes side
    by side) and, where something changed, the index update and the tree; the commit and the
    refs are written without a git process. Counted with a ``git`` first on ``PATH`` that
    logs its command and runs the real one."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    shim = bin_dir / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ws = tmp_path / "ws"
    ws.mkdir()
    seed(ws)
    time.sleep(0.12)  # the files are not read again by the next look (see above)
    manager = manager_for(tmp_path, ws)
    assert manager.before_step(1, "c1", "bash", "one") is not None, manager.last_error

    def commands() -> list[str]:
        calls = [line.split() for line in log.read_text().splitlines()]
        log.unlink()  # after each pair "-c NAME=VALUE": the command
        return sorted(next(w for i, w in enumerate(c) if i % 2 == 0 and w != "-c") for c in calls)

    commands()
    assert manager.before_step(1, "c2", "bash", "two") is not None, manager.last_error
    assert commands() == ["diff-files", "ls-files"]  # nothing changed
    (ws / "new.txt").write_bytes(b"made by step two\n")
    assert manager.before_step(1, "c3", "bash", "three") is not None, manager.last_error
    assert commands() == ["diff-files", "ls-files", "update-index", "write-tree"]
    assert _stored(manager, b"made by step two\n")
    manager.after_turn(1)
    manager.undo(1)
    assert not (ws / "new.txt").exists()
