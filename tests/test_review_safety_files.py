"""Review findings in the sandbox, the file and search tools and checkpoints: each test is an
escape or a hang that used to get through."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from reasonix.errors import SandboxError
from reasonix.safety.checkpoints import CheckpointManager
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin import default_tools
from reasonix.tools.builtin.search import walk_files
from reasonix.tools.registry import ToolContext, ToolRegistry, ToolResult


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("untouched\n")
    (ws / "a.txt").write_text("alpha\n")
    return ws, outside


async def call(
    ws: Path, name: str, *, manager: CheckpointManager | None = None, turn: int = 1, **args: Any
) -> ToolResult:
    reg = ToolRegistry(default_tools(ws, use_rg=False))
    state: dict[str, Any] = {"checkpoints": manager} if manager is not None else {}
    ctx = ToolContext(workspace=ws, turn=turn, state=state)
    return await reg.execute(name, json.dumps(args), ctx)


def test_a_git_file_is_write_protected_like_a_git_folder(world: tuple[Path, Path]) -> None:
    # A ".git" file ("gitdir: elsewhere") points git at a folder whose hooks and config run.
    box = Sandbox([world[0]])
    for path in [".git", "sub/.git"]:
        with pytest.raises(SandboxError, match="read-only"):
            box.resolve(path, write=True)
    assert box.resolve(".gitignore", write=True) == box.workspace / ".gitignore"
    assert box.resolve(".github/workflows/ci.yml", write=True)


def test_deny_patterns_ignore_case(world: tuple[Path, Path]) -> None:
    # On a case-insensitive file system (macOS, Windows) these open .env, id_rsa and .git.
    box = Sandbox([world[0]])
    for path in [".ENV", "sub/.Env", "ID_RSA", "certs/server.PEM", ".Env.Local"]:
        with pytest.raises(SandboxError, match="protected"):
            box.resolve(path)
    with pytest.raises(SandboxError, match="read-only"):
        box.resolve(".GIT/config", write=True)
    assert box.resolve(".ENV.example") == box.workspace / ".ENV.example"


async def test_write_ignores_a_symlink_planted_at_the_temporary_name(
    world: tuple[Path, Path],
) -> None:
    # The old temporary name was predictable (".<name>.reasonix-<pid>.tmp"; a command learns the
    # pid from $PPID), and writing it followed a symlink planted there.
    ws, outside = world
    os.symlink(outside / "victim.txt", ws / f".a.txt.reasonix-{os.getpid()}.tmp")
    result = await call(ws, "write_file", path="a.txt", content="new\n")
    assert not result.is_error, result.content
    assert (ws / "a.txt").read_text() == "new\n" and not (ws / "a.txt").is_symlink()
    assert (outside / "victim.txt").read_text() == "untouched\n"
    created = await call(ws, "write_file", path="b.txt", content="b\n")
    assert not created.is_error
    assert (ws / "b.txt").stat().st_mode & 0o777 == 0o666 & ~current_umask()


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class SwappingCheckpoints(CheckpointManager):
    """Turns a folder into a symlink to ``target`` right after the sandbox check, as a process
    racing the tool would."""

    def __init__(self, workspace: Path, folder: Path, target: Path) -> None:
        super().__init__(workspace, git=False)
        self.folder = folder
        self.target = target

    def record(self, turn: int, path: Path) -> None:
        super().record(turn, path)
        if self.folder.is_dir() and not self.folder.is_symlink():
            (self.folder / "inner.txt").unlink(missing_ok=True)
            self.folder.rmdir()
        if not self.folder.is_symlink():
            os.symlink(self.target, self.folder)


async def test_a_folder_swapped_for_a_symlink_mid_call_is_refused(
    world: tuple[Path, Path],
) -> None:
    ws, outside = world
    manager = SwappingCheckpoints(ws, ws / "newdir", outside)
    result = await call(ws, "write_file", manager=manager, path="newdir/sub/x.txt", content="x")
    assert result.is_error and "symlink" in result.content
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]

    (ws / "old").mkdir()
    (ws / "old" / "inner.txt").write_text("in\n")
    (outside / "inner.txt").write_text("outside inner\n")
    manager = SwappingCheckpoints(ws, ws / "old", outside)
    deleted = await call(ws, "delete_file", manager=manager, path="old/inner.txt")
    assert deleted.is_error and "symlink" in deleted.content
    assert (outside / "inner.txt").read_text() == "outside inner\n"


async def test_rewind_never_writes_through_a_folder_that_became_a_symlink(
    world: tuple[Path, Path],
) -> None:
    ws, outside = world
    manager = CheckpointManager(ws, git=False)
    (ws / "d").mkdir()
    (ws / "d" / "victim.txt").write_text("inside before\n")
    assert not (
        await call(ws, "write_file", manager=manager, path="d/victim.txt", content="x")
    ).is_error
    assert not (
        await call(ws, "write_file", manager=manager, path="d/new.txt", content="n")
    ).is_error
    # A command then replaces the folder with a symlink out of the workspace.
    (ws / "d" / "victim.txt").unlink()
    (ws / "d" / "new.txt").unlink()
    (ws / "d").rmdir()
    os.symlink(outside, ws / "d")
    (outside / "new.txt").write_text("outside file\n")
    result = manager.rewind(1)
    assert (outside / "victim.txt").read_text() == "untouched\n"
    assert (outside / "new.txt").read_text() == "outside file\n"
    assert "Not restored" in result.text and "d/victim.txt" in result.text


async def test_rewind_ignores_a_symlink_planted_at_the_restore_name(
    world: tuple[Path, Path],
) -> None:
    ws, outside = world
    manager = CheckpointManager(ws, git=False)
    assert not (
        await call(ws, "write_file", manager=manager, path="a.txt", content="changed\n")
    ).is_error
    os.symlink(outside / "victim.txt", ws / ".a.txt.reasonix-restore")
    manager.rewind(1)
    assert (ws / "a.txt").read_text() == "alpha\n"
    assert (outside / "victim.txt").read_text() == "untouched\n"


def test_walks_skip_fifos(world: tuple[Path, Path]) -> None:
    ws = world[0]
    os.mkfifo(ws / "pipe")
    names = [e.rel for e in walk_files(Sandbox([ws]), ws)]
    assert names == ["a.txt"]


class FifoWriter:
    """Writes one line into a FIFO once someone opens it for reading. If no one does (the
    tool refused it), :meth:`finish` opens it itself so the thread ends."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with open(self.fifo, "wb") as out:  # blocks until a reader opens the FIFO
            out.write(b"from the fifo\n")

    def finish(self) -> None:
        fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self.thread.join()
        finally:
            os.close(fd)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", {"path": "pipe"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("edit_file", {"path": "pipe", "old_string": "from", "new_string": "to"}),
        ("grep", {"pattern": "fifo", "path": "pipe"}),
    ],
)
async def test_file_tools_refuse_a_fifo_instead_of_blocking_on_it(
    world: tuple[Path, Path], name: str, args: dict[str, Any]
) -> None:
    ws = world[0]
    os.mkfifo(ws / "pipe")
    writer = FifoWriter(ws / "pipe")
    try:
        result = await call(ws, name, **args)
    finally:
        writer.finish()
    assert result.is_error and "not a regular file" in result.content, result.content
