"""A step's own snapshot: how many git processes it costs, and that the changes a stat cache or a
dirty set could miss (a write through mmap, a hard-linked replacement, each in the same second
as the last look) are still in the snapshot that a rewind restores."""

from __future__ import annotations

import mmap
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reasonix.safety import checkpoints
from tests.support.checkpoints import manager_for, seed, state


def _git_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the store's git commands by subcommand (the first word after the options)."""
    seen: Counter[str] = Counter()
    real = subprocess.run

    def counting(args: Any, *rest: Any, **kw: Any) -> Any:
        if isinstance(args, list) and args and args[0] == "git":
            words = [a for a in args[1:] if not a.startswith("-") and "=" not in a]
            seen[words[0] if words else "?"] += 1
        return real(args, *rest, **kw)

    monkeypatch.setattr(checkpoints.subprocess, "run", counting)
    return seen


def test_a_step_that_reads_a_file_again_and_adds_one_runs_one_update_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file the last step wrote (its name looks like an option) is read again by the next
    look (too recent for its stat to vouch for it), and this step adds a new file: both go
    through one ``update-index``, and the snapshot holds the bytes each had."""
    ws = tmp_path / "ws"
    ws.mkdir()
    seed(ws)
    manager = manager_for(tmp_path, ws)
    assert manager.before_step(1, "c0", "bash", "x") is not None, manager.last_error
    (ws / "-out0.txt").write_bytes(b"zero\n")
    assert manager.before_step(1, "c1", "bash", "x") is not None, manager.last_error
    seen = _git_calls(monkeypatch)
    (ws / "out1.txt").write_bytes(b"one\n")
    expected = state(ws)
    assert manager.before_step(2, "c2", "bash", "x") is not None, manager.last_error
    assert seen["update-index"] == 1, seen
    (ws / "-out0.txt").write_bytes(b"later\n")
    (ws / "out1.txt").unlink()
    manager.after_turn(2)
    manager.rewind(2)
    assert state(ws) == expected


def test_many_removals_still_go_through_their_own_call(tmp_path: Path) -> None:
    """Past the few that ride on the adding call's command line, removals get a call of their
    own: every removed file leaves the snapshot and every added one is in it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    many = checkpoints._FEW + 5
    for i in range(many):
        (ws / f"-old{i}.txt").write_bytes(b"old %d\n" % i)  # a name that looks like an option
    manager = manager_for(tmp_path, ws)
    assert manager.before_step(1, "c0", "bash", "x") is not None, manager.last_error
    for i in range(many):
        (ws / f"-old{i}.txt").unlink()
    (ws / "-new.txt").write_bytes(b"new\n")
    (ws / "-old0.txt").write_bytes(b"back\n")
    expected = state(ws)
    assert manager.before_step(2, "c1", "bash", "x") is not None, manager.last_error
    (ws / "-new.txt").write_bytes(b"changed\n")
    (ws / "-old1.txt").write_bytes(b"made later\n")
    manager.after_turn(2)
    manager.rewind(2)
    assert state(ws) == expected


def _same_second(change: Any, ws: Path, target: Path) -> None:
    """Looks, then makes ``change`` to ``target`` in the same second as the look (tries again
    until it lands there), then checks that a rewind to the step after it brings it back."""
    manager = manager_for(ws.parent, ws)
    for attempt in range(20):
        assert manager.before_step(1, f"a{attempt}", "bash", "x") is not None, manager.last_error
        looked = os.stat(target)
        change(target)
        if os.stat(target).st_ctime_ns // 10**9 == looked.st_ctime_ns // 10**9:
            break
    else:
        pytest.fail("no attempt made the change in the same second as the look")
    expected = state(ws)
    assert manager.before_step(2, "b", "bash", "y") is not None, manager.last_error
    target.write_bytes(b"overwritten by a later step\n")
    manager.after_turn(2)
    manager.rewind(2)
    assert state(ws) == expected


def test_a_write_through_mmap_in_the_same_second_is_restored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "mapped.bin"
    target.write_bytes(b"0" * 4096)
    counter = iter(range(1, 1000))

    def through_mmap(path: Path) -> None:
        with path.open("r+b") as f, mmap.mmap(f.fileno(), 0) as m:
            m[0:8] = b"%08d" % next(counter)
            m.flush()

    _same_second(through_mmap, ws, target)


def test_a_hard_linked_replacement_in_the_same_second_is_restored(tmp_path: Path) -> None:
    """A file replaced by a rename of a hard link to another file of the same size and times:
    only its inode (and inode time) tell it apart."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "swapped.txt"
    target.write_bytes(b"first\n")
    spare = tmp_path / "spares"
    spare.mkdir()
    counter = iter(range(1, 1000))

    def relinked(path: Path) -> None:
        old = os.stat(path)
        other = spare / f"v{next(counter)}"
        other.write_bytes(b"v%04d\n" % (next(counter) % 10000))
        os.utime(other, ns=(old.st_atime_ns, old.st_mtime_ns))
        os.link(other, ws / ".swap")
        os.replace(ws / ".swap", path)

    _same_second(relinked, ws, target)
