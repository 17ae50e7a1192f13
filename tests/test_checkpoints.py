"""Per-turn checkpoints through the real tools, rewound with byte-identical results.

Deletions are tracked through the ``delete_file`` tool (checkpointed like any write); what
``bash`` changes is covered only by the git snapshot, tested separately."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reasonix.safety.checkpoints import GIT_REF_PREFIX, CheckpointManager
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import ToolContext, ToolRegistry

State = tuple[dict[str, bytes], set[str]]


def state(ws: Path) -> State:
    files = {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in ws.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(ws).parts
    }
    folders = {
        p.relative_to(ws).as_posix()
        for p in ws.rglob("*")
        if p.is_dir() and ".git" not in p.relative_to(ws).parts
    }
    return files, folders


class Turns:
    def __init__(self, ws: Path, manager: CheckpointManager, *, via_state: bool) -> None:
        self.ws = ws
        self.manager = manager
        tools = default_tools(ws, checkpoints=None if via_state else manager, use_rg=False)
        self.registry = ToolRegistry(tools)
        self.via_state = via_state

    async def __call__(self, turn: int, name: str, **args: Any) -> None:
        state_map: dict[str, Any] = {"checkpoints": self.manager} if self.via_state else {}
        ctx = ToolContext(workspace=self.ws, turn=turn, state=state_map)
        result = await self.registry.execute(name, json.dumps(args), ctx)
        assert not result.is_error, result.content


def seed(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"alpha\n")
    (ws / "b.py").write_bytes(b"def b():\r\n    return 1\r\n")  # CRLF must come back as CRLF
    (ws / "c.txt").write_bytes(b"gamma, no final newline")
    (ws / "tool.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (ws / "tool.sh").chmod(0o755)


async def three_turns(run: Turns) -> tuple[State, State, State]:
    s0 = state(run.ws)
    await run(1, "edit_file", path="a.txt", old_string="alpha", new_string="alpha one")
    await run(1, "write_file", path="new1.txt", content="created in turn 1\n")
    await run(1, "edit_file", path="tool.sh", old_string="hi", new_string="hello")
    s1 = state(run.ws)
    await run(2, "edit_file", path="a.txt", old_string="alpha one", new_string="alpha two")
    await run(2, "edit_file", path="b.py", old_string="return 1", new_string="return 2")
    await run(2, "write_file", path="deep/er/new2.txt", content="created in turn 2\n")
    await run(2, "delete_file", path="c.txt")
    s2 = state(run.ws)
    await run(3, "edit_file", path="b.py", old_string="return 2", new_string="return 3")
    await run(3, "write_file", path="new1.txt", content="rewritten in turn 3\n")
    await run(3, "delete_file", path="a.txt")
    await run(3, "write_file", path="c.txt", content="c is back, different\n")
    await run(3, "write_file", path="deep/er/new2.txt", content="changed in turn 3\n")
    return s0, s1, s2


@pytest.mark.parametrize("via_state", [True, False])
async def test_rewind_to_turn_two_then_one_is_byte_identical(
    tmp_path: Path, via_state: bool
) -> None:
    seed(tmp_path)
    manager = CheckpointManager(tmp_path)
    run = Turns(tmp_path, manager, via_state=via_state)
    s0, s1, s2 = await three_turns(run)
    assert manager.turns() == [1, 2, 3]

    back2 = manager.rewind(2)
    assert state(tmp_path) == s1
    assert set(back2.restored) == {"a.txt", "b.py", "c.txt", "new1.txt"}
    assert back2.removed == ("deep/er/new2.txt",)
    assert "not tracked file by file" in back2.text
    assert manager.turns() == [1]

    back1 = manager.rewind(1)
    assert state(tmp_path) == s0
    assert (tmp_path / "tool.sh").stat().st_mode & 0o777 == 0o755
    assert "new1.txt" in back1.removed
    assert manager.turns() == []
    assert s2 != s1 != s0


async def test_checkpoints_persist_on_disk(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    seed(ws)
    store = tmp_path / "store"
    run = Turns(ws, CheckpointManager(ws, store_dir=store), via_state=True)
    s0, s1, _ = await three_turns(run)
    reloaded = CheckpointManager(ws, store_dir=store)
    assert reloaded.turns() == [1, 2, 3]
    reloaded.rewind(2)
    assert state(ws) == s1
    assert CheckpointManager(ws, store_dir=store).turns() == [1]
    CheckpointManager(ws, store_dir=store).rewind(1)
    assert state(ws) == s0


def git(ws: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=ws,
        capture_output=True,
        check=True,
        text=True,
    )
    return out.stdout


async def test_git_snapshot_undoes_bash_changes(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    seed(tmp_path)
    (tmp_path / ".gitignore").write_text("ignored.log\n")
    git(tmp_path, "add", "a.txt", "b.py", ".gitignore")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "b.py").write_bytes(b"staged change\n")
    git(tmp_path, "add", "b.py")
    status_before = git(tmp_path, "status", "--porcelain")
    head_before = git(tmp_path, "rev-parse", "HEAD")
    s0 = state(tmp_path)

    manager = CheckpointManager(tmp_path)
    run = Turns(tmp_path, manager, via_state=True)
    await run(1, "edit_file", path="a.txt", old_string="alpha", new_string="ALPHA")
    await run(1, "bash", command="echo bash-was-here >> b.py && rm c.txt && echo x > untracked.new")
    await run(2, "bash", command="echo more >> a.txt && mkdir -p gen && echo g > gen/out.txt")
    assert manager.git_ref(1) == f"{GIT_REF_PREFIX}1"
    assert git(tmp_path, "rev-parse", "--verify", f"{GIT_REF_PREFIX}2").strip()
    # The user's branch, index and stash are untouched by the snapshots.
    assert git(tmp_path, "rev-parse", "HEAD") == head_before
    assert git(tmp_path, "stash", "list") == ""

    first = manager.rewind(2)
    assert "refs/reasonix/checkpoints/2" in first.text and "restore_commands=True" in first.text
    assert (tmp_path / "gen" / "out.txt").exists()  # bash changes are not undone by default

    result = manager.rewind(1, restore_commands=True)
    assert result.git_restored
    assert state(tmp_path) == s0
    assert git(tmp_path, "status", "--porcelain") == status_before


async def test_rewind_without_changes_and_outside_git(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    assert manager.before_command(1) is None  # not a repository: no snapshot, no error
    result = manager.rewind(1)
    assert "No file-tool changes" in result.text and "bash commands ran in turn(s) 1" in result.text
