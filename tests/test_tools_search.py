from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reasonix.errors import SandboxError
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin import default_tools
from reasonix.tools.builtin.search import GLOB_LIMIT, GREP_MATCH_LIMIT, SearchTools, search_tools
from reasonix.tools.registry import ToolContext, ToolRegistry, ToolResult

HAS_RG = shutil.which("rg") is not None


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n/top_only.txt\n",
        "src/app.py": "import os\n\ndef main():\n    print('hello')\n    return 0\n",
        "src/util.py": "def helper():\n    return 'HELLO'\n",
        "src/.gitignore": "generated_*.py\n",
        "src/generated_x.py": "print('hello generated')\n",
        "src/nested/top_only.txt": "hello nested\n",
        "top_only.txt": "hello top\n",
        "build/out.py": "print('hello build')\n",
        "debug.log": "hello log\n",
        "keep.log": "hello kept\n",
        "docs/readme.md": "Say hello.\n",
        ".hidden/config.py": "hello = 1\n",
        ".git/HEAD": "ref: hello\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "blob.bin").write_bytes(b"hello\x00\x01")
    return tmp_path


async def call(ws: Path, name: str, *, use_rg: bool = False, **args: Any) -> ToolResult:
    reg = ToolRegistry(search_tools(Sandbox([ws]), use_rg=use_rg))
    return await reg.execute(name, json.dumps(args), ToolContext(workspace=ws))


async def test_ls_lists_one_folder(ws: Path) -> None:
    result = await call(ws, "ls")
    lines = result.content.splitlines()
    assert "src/" in lines and "build/" in lines and ".git/" in lines
    assert any(line.startswith("keep.log  (") for line in lines)
    sub = await call(ws, "ls", path="src")
    assert "app.py  (" in sub.content and "nested/" in sub.content
    assert result.effects[0].kind == "read"
    file_info = await call(ws, "ls", path="src/app.py")
    assert "is a file" in file_info.content
    missing = await call(ws, "ls", path="nope")
    assert missing.is_error


async def test_glob_respects_gitignore_at_every_level(ws: Path) -> None:
    result = await call(ws, "glob", pattern="**/*")
    found = set(result.content.splitlines())
    assert {"src/app.py", "src/util.py", "keep.log", "docs/readme.md"} <= found
    assert "src/nested/top_only.txt" in found  # "/top_only.txt" is anchored to the root
    assert ".hidden/config.py" in found
    for ignored in ["build/out.py", "debug.log", "top_only.txt", "src/generated_x.py"]:
        assert ignored not in found
    assert not any(f.startswith(".git/") for f in found)
    py = await call(ws, "glob", pattern="*.py", path="src")
    assert py.content.splitlines() == ["src/app.py", "src/util.py"]
    none = await call(ws, "glob", pattern="**/*.rs")
    assert not none.is_error and "No files match" in none.content


async def test_glob_from_a_subfolder_applies_parent_gitignore(ws: Path) -> None:
    (ws / "src" / "debug.log").write_text("x\n")
    result = await call(ws, "glob", pattern="**/*", path="src")
    assert "src/debug.log" not in result.content
    assert "src/generated_x.py" not in result.content


async def test_glob_caps_results(ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(GLOB_LIMIT + 25):
        (many / f"f{i:04}.txt").write_text("")
    result = await call(ws, "glob", pattern="many/*.txt")
    assert len(result.content.splitlines()) == GLOB_LIMIT + 1
    assert "25 more files match" in result.content


async def test_grep_fallback_finds_matches_with_context_and_filters(ws: Path) -> None:
    result = await call(ws, "grep", pattern="hello")
    lines = result.content.splitlines()
    assert "src/app.py:4:    print('hello')" in lines
    assert "docs/readme.md:1:Say hello." in lines
    assert ".hidden/config.py:1:hello = 1" in lines
    assert not any(x in result.content for x in ["build/", "debug.log", "generated", ".git/"])
    assert "blob.bin" not in result.content

    ctx = await call(ws, "grep", pattern="print", path="src", context=1)
    assert ctx.content.splitlines()[:3] == [
        "src/app.py-3-def main():",
        "src/app.py:4:    print('hello')",
        "src/app.py-5-    return 0",
    ]

    case = await call(ws, "grep", pattern="hello", ignore_case=True, glob="*.py", path="src")
    assert "src/util.py:2:    return 'HELLO'" in case.content
    assert "readme" not in case.content

    files = await call(ws, "grep", pattern="def ", files_only=True)
    assert files.content.splitlines() == ["src/app.py", "src/util.py"]

    one = await call(ws, "grep", pattern="return", path="src/util.py")
    assert one.content == "src/util.py:2:    return 'HELLO'"


async def test_grep_errors_and_caps(ws: Path) -> None:
    bad = await call(ws, "grep", pattern="(unclosed")
    assert bad.is_error and "Invalid regular expression" in bad.content
    none = await call(ws, "grep", pattern="zzz_nothing")
    assert not none.is_error and "No matches" in none.content
    (ws / "big.txt").write_text("".join(f"match {i} " + "z" * 500 + "\n" for i in range(500)))
    capped = await call(ws, "grep", pattern="match", path="big.txt")
    lines = capped.content.splitlines()
    assert lines[-1].startswith("[results capped")
    assert len(lines) - 1 <= GREP_MATCH_LIMIT
    assert all(len(line) < 400 for line in lines)


def test_rg_can_be_forced_or_disabled(ws: Path) -> None:
    box = Sandbox([ws])
    assert SearchTools(box, use_rg=False).rg is None
    if not HAS_RG:
        with pytest.raises(SandboxError, match="not installed"):
            SearchTools(box, use_rg=True)


@pytest.mark.skipif(not HAS_RG, reason="ripgrep (rg) is not installed")
async def test_rg_and_fallback_agree(ws: Path) -> None:
    for args in [
        {"pattern": "hello"},
        {"pattern": "print", "path": "src", "context": 1},
        {"pattern": "def ", "files_only": True},
    ]:
        fallback = await call(ws, "grep", use_rg=False, **args)
        fast = await call(ws, "grep", use_rg=True, **args)
        assert sorted(fast.content.splitlines()) == sorted(fallback.content.splitlines())


async def test_listing_survives_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    import os

    os.close(os.open(os.fsencode(tmp_path) + b"/bad\xff.txt", os.O_CREAT | os.O_WRONLY))
    (tmp_path / "good.txt").write_text("x")
    tools = ToolRegistry(default_tools(tmp_path))
    ctx = ToolContext(workspace=tmp_path)
    listed = await tools.execute("ls", "{}", ctx)
    globbed = await tools.execute("glob", '{"pattern": "*.txt"}', ctx)
    for result in (listed, globbed):
        assert not result.is_error, result.content
        assert "bad\ufffd.txt" in result.content
        assert "good.txt" in result.content
