"""The file tools on a real temp workspace, and the escapes and hangs they refuse: a .git file,
deny patterns in another case, symlinks planted at a temporary name or swapped in mid-call (also
when a rewind restores), and FIFOs that would block a read."""

from __future__ import annotations

import hashlib
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
from reasonix.tools.builtin.files import READ_LINE_CHARS
from reasonix.tools.builtin.search import walk_files
from reasonix.tools.registry import ToolContext, ToolRegistry, ToolResult


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


def sha16(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def test_flags_and_categories(ws: Path) -> None:
    tools = {t.name: t for t in default_tools(ws)}
    assert {n for n, t in tools.items() if t.read_only} == {"read_file", "ls", "glob", "grep"}
    assert {n for n, t in tools.items() if t.destructive} == {"bash", "delete_file"}
    assert {t.category for t in tools.values()} == {"read", "edit", "bash", "web"}
    assert tools["write_file"].category == tools["multi_edit"].category == "edit"
    for t in tools.values():
        assert "\n" not in t.description and len(t.description) < 260


async def test_read_file_numbers_lines_and_reports_effect(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    result = await call(ws, "read_file", path="a.txt")
    assert result.content == "1\tone\n2\ttwo\n3\tthree"  # numbered, no padding
    assert result.effects[0].kind == "read"
    assert result.effects[0].target.startswith("a.txt:1+")
    assert result.effects[0].digest == sha16(b"one\ntwo\nthree\n")
    part = await call(ws, "read_file", path="a.txt", offset=2, limit=1)
    # another part of the same file is a different read (new progress for the ledger)
    assert part.effects[0].target == "a.txt:2+1"
    assert part.content.startswith("2\ttwo\n[showing lines 2-2 of 3; call read_file with offset=3")
    past = await call(ws, "read_file", path="a.txt", offset=9)
    assert past.is_error and "3 lines" in past.content


async def test_read_file_caps_long_files_and_lines(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i} " + "x" * 80 + "\n" for i in range(5000)))
    result = await call(ws, "read_file", path="big.txt")
    assert len(result.content) < 31_000
    assert "call read_file with offset=" in result.content and "of 5000" in result.content
    (ws / "wide.txt").write_text("y" * (READ_LINE_CHARS + 500) + "\n")
    wide = await call(ws, "read_file", path="wide.txt")
    assert "500 chars cut" in wide.content and "long line(s) were cut" in wide.content


async def test_read_file_describes_binary_empty_and_missing(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    binary = await call(ws, "read_file", path="img.png")
    assert not binary.is_error and "binary file (PNG image" in binary.content
    assert "\x00" not in binary.content
    (ws / "empty.txt").write_text("")
    assert "empty file" in (await call(ws, "read_file", path="empty.txt")).content
    (ws / "config.yaml").write_text("a: 1\n")
    missing = await call(ws, "read_file", path="config.yml")
    assert missing.is_error and "config.yaml" in missing.content
    folder = await call(ws, "read_file", path=".")
    assert folder.is_error and "folder" in folder.content


async def test_read_file_handles_other_encodings(ws: Path) -> None:
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = await call(ws, "read_file", path="latin.txt")
    assert "café" in result.content and "latin-1" in result.content
    (ws / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    assert (await call(ws, "read_file", path="crlf.txt")).content == "1\ta\n2\tb"


async def test_write_file_creates_parents_and_reports_changes(ws: Path) -> None:
    created = await call(ws, "write_file", path="deep/er/new.py", content="x = 1\n")
    assert not created.is_error and created.content.startswith("Created deep/er/new.py")
    assert (ws / "deep/er/new.py").read_text() == "x = 1\n"
    assert created.effects[0].kind == "write"
    assert created.effects[0].digest == sha16(b"x = 1\n")
    updated = await call(ws, "write_file", path="deep/er/new.py", content="x = 2\n")
    assert (
        "+1 -1" in updated.content and "-x = 1" in updated.content and "+x = 2" in updated.content
    )
    same = await call(ws, "write_file", path="deep/er/new.py", content="x = 2\n")
    assert "nothing changed" in same.content


async def test_write_file_keeps_line_endings_and_mode(ws: Path) -> None:
    target = ws / "run.sh"
    target.write_bytes(b"#!/bin/sh\r\necho a\r\n")
    target.chmod(0o755)
    await call(ws, "write_file", path="run.sh", content="#!/bin/sh\necho b\n")
    assert target.read_bytes() == b"#!/bin/sh\r\necho b\r\n"
    assert target.stat().st_mode & 0o777 == 0o755


async def test_edit_exact_unique(ws: Path) -> None:
    (ws / "m.py").write_text("def a():\n    return 1\n\ndef b():\n    return 2\n")
    result = await call(ws, "edit_file", path="m.py", old_string="return 2", new_string="return 3")
    assert not result.is_error
    assert (ws / "m.py").read_text().endswith("    return 3\n")
    assert "1 replacement at line 5" in result.content
    assert "-    return 2\n+    return 3" in result.content
    assert result.effects[0].digest == sha16((ws / "m.py").read_bytes())


async def test_edit_ambiguous_is_refused_with_line_numbers(ws: Path) -> None:
    text = "x = 0\nif a:\n    x = 1\nif b:\n    x = 1\n"
    (ws / "m.py").write_text(text)
    result = await call(ws, "edit_file", path="m.py", old_string="x = 1", new_string="x = 2")
    assert result.is_error and "2 times (lines 3, 5)" in result.content
    loose = await call(ws, "edit_file", path="m.py", old_string="  x = 1\n", new_string="x = 2\n")
    assert loose.is_error and "lines 3, 5" in loose.content
    assert (ws / "m.py").read_text() == text
    every = await call(
        ws, "edit_file", path="m.py", old_string="x = 1", new_string="x = 2", replace_all=True
    )
    assert "2 replacements" in every.content
    assert (ws / "m.py").read_text().count("x = 2") == 2


async def test_edit_miss_shows_closest_lines(ws: Path) -> None:
    (ws / "m.py").write_text("def handler(request):\n    return respond(request)\n")
    result = await call(
        ws, "edit_file", path="m.py", old_string="return respond(req)", new_string="pass"
    )
    assert result.is_error and "not found" in result.content
    assert "     2\t    return respond(request)" in result.content


async def test_edit_tolerates_whitespace_drift_and_reindents(ws: Path) -> None:
    (ws / "t.py").write_text("class A:\n\tdef f(self):\n\t\tif x:\n\t\t\treturn 1\n")
    result = await call(
        ws,
        "edit_file",
        path="t.py",
        old_string="if x:  \n    return 1",
        new_string="if x:\n    log()\n    return 2",
    )
    assert not result.is_error and "whitespace-tolerant" in result.content
    assert (ws / "t.py").read_text() == (
        "class A:\n\tdef f(self):\n\t\tif x:\n\t\t\tlog()\n\t\t\treturn 2\n"
    )


async def test_edit_preserves_crlf_encoding_bom_and_final_newline(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"\xef\xbb\xbfalpha\r\nbeta\r\ngamma")
    await call(
        ws, "edit_file", path="w.txt", old_string="beta\ngamma\n", new_string="BETA\ngamma\n"
    )
    assert (ws / "w.txt").read_bytes() == b"\xef\xbb\xbfalpha\r\nBETA\r\ngamma"
    (ws / "l.txt").write_bytes("naïve\nend\n".encode("latin-1"))
    await call(ws, "edit_file", path="l.txt", old_string="end", new_string="fin é")
    assert (ws / "l.txt").read_bytes() == "naïve\nfin é\n".encode("latin-1")
    refused = await call(ws, "edit_file", path="l.txt", old_string="fin", new_string="€")
    assert refused.is_error and "latin-1" in refused.content
    (ws / "n.txt").write_text("a\nb\n")
    await call(ws, "edit_file", path="n.txt", old_string="b\n", new_string="c")
    assert (ws / "n.txt").read_text() == "a\nc\n"


async def test_edit_refusals(ws: Path) -> None:
    (ws / "m.txt").write_text("abc\n")
    same = await call(ws, "edit_file", path="m.txt", old_string="abc", new_string="abc")
    assert same.is_error and "identical" in same.content
    empty = await call(ws, "edit_file", path="m.txt", old_string="", new_string="x")
    assert empty.is_error and "empty" in empty.content
    missing = await call(ws, "edit_file", path="nope.txt", old_string="a", new_string="b")
    assert missing.is_error and "not found" in missing.content
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02")
    binary = await call(ws, "edit_file", path="bin.dat", old_string="a", new_string="b")
    assert binary.is_error and "binary" in binary.content
    created = await call(ws, "edit_file", path="fresh.txt", old_string="", new_string="hi\n")
    assert not created.is_error and (ws / "fresh.txt").read_text() == "hi\n"


async def test_multi_edit_is_all_or_nothing(ws: Path) -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    (ws / "m.py").write_text(text)
    failed = await call(
        ws,
        "multi_edit",
        path="m.py",
        edits=[
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "zzz", "new_string": "y"},
        ],
    )
    assert failed.is_error and "Edit 2 of 2 failed, so none were applied" in failed.content
    assert (ws / "m.py").read_text() == text
    ok = await call(
        ws,
        "multi_edit",
        path="m.py",
        edits=[
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "a = 10\nb = 2", "new_string": "a = 10\nb = 20"},
            {"old_string": "3", "new_string": "30", "replace_all": True},
        ],
    )
    assert not ok.is_error, ok.content
    assert (ws / "m.py").read_text() == "a = 10\nb = 20\nc = 30\n"
    empty = await call(ws, "multi_edit", path="m.py", edits=[])
    assert empty.is_error


async def test_delete_file(ws: Path) -> None:
    (ws / "gone.txt").write_text("bye\n")
    result = await call(ws, "delete_file", path="gone.txt")
    assert not result.is_error and not (ws / "gone.txt").exists()
    assert result.effects[0].kind == "write"
    (ws / "folder").mkdir()
    folder = await call(ws, "delete_file", path="folder")
    assert folder.is_error and (ws / "folder").is_dir()


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
        super().__init__(workspace, data_dir=workspace.parent / "data")
        self.folder = folder
        self.target = target

    def before_write(self, ctx: Any, path: Path, tool: str = "edit") -> Any:
        step = super().before_write(ctx, path, tool)
        if self.folder.is_dir() and not self.folder.is_symlink():
            (self.folder / "inner.txt").unlink(missing_ok=True)
            self.folder.rmdir()
        if not self.folder.is_symlink():
            os.symlink(self.target, self.folder)
        return step


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
    manager = CheckpointManager(ws, data_dir=ws.parent / "data")
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
    manager.after_turn(1)  # the turn ends: the files as the agent's steps left them
    result = manager.rewind(1)
    assert (outside / "victim.txt").read_text() == "untouched\n"
    assert (outside / "new.txt").read_text() == "outside file\n"
    # The symlink is what the command made; the folder that was there comes back instead.
    assert not (ws / "d").is_symlink()
    assert (ws / "d" / "victim.txt").read_text() == "inside before\n"
    assert not (ws / "d" / "new.txt").exists()
    assert "d/victim.txt" in result.recreated


async def test_rewind_ignores_a_symlink_planted_at_the_restore_name(
    world: tuple[Path, Path],
) -> None:
    ws, outside = world
    manager = CheckpointManager(ws, data_dir=ws.parent / "data")
    assert not (
        await call(ws, "write_file", manager=manager, path="a.txt", content="changed\n")
    ).is_error
    os.symlink(outside / "victim.txt", ws / ".a.txt.reasonix-restore")
    manager.after_turn(1)
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
