"""Attack corpus for the workspace sandbox: every case through every path-taking tool, via
``ToolRegistry.execute``, must be refused with a clear message and touch nothing outside."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reasonix.errors import SandboxError
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import ToolContext, ToolRegistry

SECRET = "TOPSECRET-outside"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "src" / "ok.py").write_text("print('inside')\n")
    (ws / ".env").write_text("API_KEY=sk-inside-secret\n")
    (ws / ".env.example").write_text("API_KEY=\n")
    (ws / "certs").mkdir()
    (ws / "certs" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (ws / "id_rsa").write_text("PRIVATE\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    os.symlink(outside, ws / "link_out")
    os.symlink(outside / "secret.txt", ws / "file_link")
    os.symlink(ws / "loop_b", ws / "loop_a")
    os.symlink(ws / "loop_a", ws / "loop_b")
    os.symlink("self_loop", ws / "self_loop")
    os.symlink(outside / "not-yet-there.txt", ws / "dangling_out")
    os.symlink("..", ws / "sub" / "parent_link")
    os.symlink(outside, ws / "sub" / "deep_out")
    os.symlink(ws / "src" / "ok.py", ws / "inside_link.py")
    return {"root": tmp_path, "ws": ws, "outside": outside}


def escape_paths(outside: Path) -> list[str]:
    """Paths that must never reach anything outside the workspace."""
    secret = outside / "secret.txt"
    return [
        "../outside/secret.txt",
        "../../../../../../../../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "./../outside",
        "src/../../outside/secret.txt",
        ".git/../../outside/secret.txt",
        str(secret),
        str(outside),
        str(outside / "new-file.txt"),
        "/",
        "~",
        "~/reasonix-attack-probe.txt",
        "~root/reasonix-attack-probe.txt",
        "link_out/secret.txt",
        "link_out",
        "link_out/new.txt",
        "link_out/../outside/secret.txt",
        "file_link",
        "dangling_out",
        "loop_a",
        "loop_a/x",
        "self_loop",
        "self_loop/deeper/file.txt",
        "sub/parent_link/../outside/secret.txt",
        "sub/deep_out/secret.txt",
        "sub/deep_out/fresh/new.txt",
        f"/proc/self/root{secret}",
        f"/proc/self/root{outside}/new.txt",
        "/proc/self/cwd/reasonix-attack-probe.txt",
        "/proc/self/fd/0",
        "．．/outside/secret.txt",
        "..／outside／secret.txt",
        "\u2025/outside/secret.txt",
        "..\u2215outside\u2215secret.txt",
        "\ufe52\ufe52/outside/secret.txt",
        "a/" * 3000 + "x",
        "x" * 300,
        "secret.txt\x00.py",
        "\x00",
        "",
        "   ",
    ]


PROTECTED = [".env", "sub/.env", "certs/server.pem", "id_rsa", "src/../.env"]


def tool_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "PWNED\n"}),
        ("edit_file", {"path": path, "old_string": SECRET, "new_string": "PWNED"}),
        ("multi_edit", {"path": path, "edits": [{"old_string": SECRET, "new_string": "PWNED"}]}),
        ("delete_file", {"path": path}),
        ("ls", {"path": path}),
        ("glob", {"pattern": "**/*", "path": path}),
        ("grep", {"pattern": "TOPSECRET|PRIVATE|sk-inside", "path": path}),
    ]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def probes() -> tuple[Path, Path]:
    """Where a write through ``~`` or ``/proc/self/cwd`` would land if it escaped."""
    name = "reasonix-attack-probe.txt"
    return Path("~").expanduser() / name, Path.cwd() / name


def registry(ws: Path) -> ToolRegistry:
    return ToolRegistry(default_tools(ws, use_rg=False))


def assert_clear_refusal(name: str, content: str, is_error: bool) -> None:
    assert is_error, f"{name} was not refused: {content[:200]}"
    assert content.strip(), f"{name}: empty refusal"
    assert "Traceback" not in content
    # The registry's catch-all ("<tool> failed: SomeError") means a tool crashed.
    assert not content.startswith(f"{name} failed:"), content
    assert SECRET not in content and "sk-inside" not in content and "PRIVATE" not in content


async def test_attack_corpus_has_enough_cases(world: dict[str, Path]) -> None:
    assert len(escape_paths(world["outside"])) >= 30


async def test_no_escape_for_any_tool(world: dict[str, Path]) -> None:
    ws, outside = world["ws"], world["outside"]
    reg = registry(ws)
    ctx = ToolContext(workspace=ws)
    before_outside = snapshot(outside)
    before_ws = snapshot(ws)
    home_probe, cwd_probe = probes()
    refusals = 0
    for path in escape_paths(outside):
        for name, args in tool_calls(path):
            result = await reg.execute(name, json.dumps(args), ctx)
            assert_clear_refusal(name, result.content, result.is_error)
            refusals += 1
    assert snapshot(outside) == before_outside
    assert snapshot(ws) == before_ws, "an attack changed a file inside the workspace"
    assert not home_probe.exists() and not cwd_probe.exists()
    assert not (outside / "new.txt").exists() and not (outside / "not-yet-there.txt").exists()
    assert refusals >= 30 * 8


async def test_protected_files_are_refused_by_every_tool(world: dict[str, Path]) -> None:
    ws = world["ws"]
    (ws / "sub" / ".env").write_text("API_KEY=sk-inside-secret\n")
    reg = registry(ws)
    ctx = ToolContext(workspace=ws)
    before = snapshot(ws)
    for path in PROTECTED:
        for name, args in tool_calls(path):
            result = await reg.execute(name, json.dumps(args), ctx)
            assert_clear_refusal(name, result.content, result.is_error)
            assert "protected" in result.content
    assert snapshot(ws) == before


async def test_glob_patterns_cannot_climb_out(world: dict[str, Path]) -> None:
    reg = registry(world["ws"])
    ctx = ToolContext(workspace=world["ws"])
    for pattern in ["../*", "../outside/*", "/etc/*", "**/../../outside/*", "~/*"]:
        result = await reg.execute("glob", json.dumps({"pattern": pattern}), ctx)
        assert result.is_error and "relative" in result.content


async def test_walks_skip_symlinks_out_and_secrets(world: dict[str, Path]) -> None:
    reg = registry(world["ws"])
    ctx = ToolContext(workspace=world["ws"])
    found = await reg.execute("grep", json.dumps({"pattern": "TOPSECRET|sk-inside|inside"}), ctx)
    assert not found.is_error
    assert SECRET not in found.content and "sk-inside" not in found.content
    assert "src/ok.py:1:print('inside')" in found.content
    assert "inside_link.py:1:" in found.content  # a symlink that stays inside is followed
    names = await reg.execute("glob", json.dumps({"pattern": "**/*"}), ctx)
    assert "secret.txt" not in names.content and "link_out" not in names.content


async def test_what_is_allowed_still_works(world: dict[str, Path], tmp_path: Path) -> None:
    ws = world["ws"]
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "notes.md").write_text("extra root\n")
    reg = ToolRegistry(default_tools(ws, sandbox=Sandbox([ws, extra]), use_rg=False))
    ctx = ToolContext(workspace=ws)
    for name, args in [
        ("read_file", {"path": "inside_link.py"}),
        ("read_file", {"path": ".env.example"}),
        ("read_file", {"path": ".git/config"}),
        ("read_file", {"path": str(extra / "notes.md")}),
        ("read_file", {"path": "sub/parent_link/src/ok.py"}),
        ("write_file", {"path": str(extra / "new.md"), "content": "x\n"}),
    ]:
        result = await reg.execute(name, json.dumps(args), ctx)
        assert not result.is_error, (name, args, result.content)
    denied = await reg.execute(
        "write_file", json.dumps({"path": ".git/config", "content": "x"}), ctx
    )
    assert denied.is_error and "read-only" in denied.content
    assert (ws / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("../x", "outside the workspace"),
        ("a\x00b", "NUL"),
        ("a/" * 3000, "too long"),
        ("n" * 256, "longer than 255"),
        ("．．/x", "look-alike"),
        ("a\u2215b", "look-alike"),
        ("loop_a", "symlink loop"),
        (".env", "protected"),
        ("", "empty"),
    ],
)
def test_refusal_messages_say_why(world: dict[str, Path], path: str, fragment: str) -> None:
    box = Sandbox([world["ws"]])
    with pytest.raises(SandboxError, match=fragment):
        box.resolve(path)


def test_resolve_returns_real_paths_inside(world: dict[str, Path]) -> None:
    box = Sandbox([world["ws"]])
    ws = box.workspace
    assert box.resolve("src/../src/ok.py") == ws / "src" / "ok.py"
    assert box.resolve("inside_link.py") == ws / "src" / "ok.py"
    assert box.resolve(str(ws)) == ws
    assert box.resolve("new/folder/file.txt") == ws / "new" / "folder" / "file.txt"
    assert box.display(ws / "src" / "ok.py") == "src/ok.py"
    with pytest.raises(SandboxError, match="read-only"):
        box.resolve(".git/config", write=True)
    custom = Sandbox([world["ws"]], read_deny=["*.py"], write_deny=[])
    with pytest.raises(SandboxError, match="protected"):
        custom.resolve("src/ok.py")
    assert custom.resolve(".env") == ws / ".env"
