from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from reasonix.tools.builtin import default_tools
from reasonix.tools.builtin.files import READ_LINE_CHARS
from reasonix.tools.registry import ToolContext, ToolRegistry, ToolResult


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


async def call(ws: Path, name: str, **args: Any) -> ToolResult:
    reg = ToolRegistry(default_tools(ws, use_rg=False))
    return await reg.execute(name, json.dumps(args), ToolContext(workspace=ws))


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
    assert result.content == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.effects[0].kind == "read"
    assert result.effects[0].target.startswith("a.txt:1+")
    assert result.effects[0].digest == sha16(b"one\ntwo\nthree\n")
    part = await call(ws, "read_file", path="a.txt", offset=2, limit=1)
    # another part of the same file is a different read (new progress for the ledger)
    assert part.effects[0].target == "a.txt:2+1"
    assert part.content.startswith(
        "     2\ttwo\n[showing lines 2-2 of 3; call read_file with offset=3"
    )
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
    assert (await call(ws, "read_file", path="crlf.txt")).content == "     1\ta\n     2\tb"


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
