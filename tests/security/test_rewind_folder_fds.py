"""attacker5 B9, without a race: the rewind (on the host, unconfined) writes, removes and
changes permissions relative to folder descriptors opened from the workspace root down with
``O_NOFOLLOW``, so a folder swapped for a symlink after it was opened is never resolved again.

A hook wraps the function that opens a file's folder chain: right after each opening it moves
the real ``src`` aside (to ``held``, still inside the workspace) and puts a symlink to a folder
outside in its place; before the next opening it puts the real folder back. That is exactly the
moment the attacker's background job wins (``test_attack5_rewind_race.py``). Nothing may land
in, be removed from or be changed in the outside folder. Control: the same hook with the write
made by path, as the restorer did before, lands the user's file outside.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reasonix.safety import snapshot_restore as sr
from reasonix.safety.checkpoints import CheckpointManager
from tests.support.checkpoints import Steps, manager_for


def _swapping(ws: Path, outside: Path, real: Callable[..., int]) -> Callable[..., int]:
    """``_open_folder`` that swaps ``src`` for a symlink to ``outside`` once it has opened it."""
    src, held = ws / "src", ws / "held"

    def hook(workspace: Path, name: str, **kw: bool) -> int:
        if src.is_symlink():  # the previous swap: the real folder comes back for the check
            src.unlink()
            held.rename(src)
        fd = real(workspace, name, **kw)
        if name.startswith("src/"):
            src.rename(held)
            src.symlink_to(outside, target_is_directory=True)
        return fd

    return hook


def _outside(outside: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.lstat().st_mode, p.read_bytes()) for p in outside.iterdir()}


@pytest.fixture
def setting(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "src").mkdir(parents=True)
    outside.mkdir()
    (ws / "src" / "f.py").write_bytes(b"# the user's\n")
    (ws / "src" / "tool.sh").write_bytes(b"#!/bin/sh\n")
    (ws / "src" / "tool.sh").chmod(0o644)
    # Victims of the same names outside: a removal or chmod by path would reach them.
    (outside / "new.py").write_bytes(b"outside's own\n")
    (outside / "tool.sh").write_bytes(b"outside's tool\n")
    (outside / "tool.sh").chmod(0o755)
    return ws, outside


async def _agent_turn(tmp_path: Path, ws: Path) -> CheckpointManager:
    manager = manager_for(tmp_path, ws)
    cmd = "echo '# the agent' > src/f.py && echo new > src/new.py && chmod 755 src/tool.sh"
    await Steps(ws, manager)(1, "bash", command=cmd)
    return manager


async def test_a_folder_swapped_after_it_was_opened_is_never_written_through(
    tmp_path: Path, setting: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, outside = setting
    manager = await _agent_turn(tmp_path, ws)
    before = _outside(outside)
    monkeypatch.setattr(sr, "_open_folder", _swapping(ws, outside, sr._open_folder))
    result = manager.rewind(1)
    assert _outside(outside) == before, result.text
    # Every change went to the real folder the rewind opened (now ``held``, in the workspace).
    held = ws / "held"
    assert (held / "f.py").read_bytes() == b"# the user's\n", result.text
    assert not (held / "new.py").exists(), result.text
    assert (held / "tool.sh").stat().st_mode & 0o777 == 0o644, result.text
    assert not list(held.glob("*.reasonix-restore"))


async def test_control_the_same_swap_with_a_write_by_path_lands_outside(
    tmp_path: Path, setting: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, outside = setting
    manager = await _agent_turn(tmp_path, ws)
    monkeypatch.setattr(sr, "_open_folder", _swapping(ws, outside, sr._open_folder))

    def by_path(folder: int, base: str, data: bytes, is_link: bool, perms: int) -> None:
        (ws / "src" / base).write_bytes(data)  # the folder resolved again by its path

    monkeypatch.setattr(sr, "_place", by_path)
    manager.rewind(1)
    assert (outside / "f.py").read_bytes() == b"# the user's\n"
