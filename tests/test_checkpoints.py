"""Snapshots before every step, through the real file tools and the real shell, rewound with
byte-identical results; what is not covered is left alone and named; the store is pruned by
age and size. (The end-to-end CLI tests are in ``test_undo_everything.py``.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reasonix.safety.checkpoints import (
    CheckpointManager,
    checkpoint_store_size,
    command_is_read_only,
)
from tests.support.checkpoints import Steps, manager_for, seed, state


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    seed(root)
    return root


async def test_rewind_turns_and_undo_steps_are_byte_identical(tmp_path: Path, ws: Path) -> None:
    manager = manager_for(tmp_path, ws)
    run = Steps(ws, manager)
    s0 = state(ws)
    await run(1, "edit_file", path="a.txt", old_string="alpha", new_string="alpha one")
    await run(1, "write_file", path="new1.txt", content="created in turn 1\n")
    await run(1, "bash", command="chmod 644 tool.sh && chmod 640 private.key")
    s1 = state(ws)
    await run(2, "edit_file", path="b.py", old_string="return 1", new_string="return 2")
    await run(2, "write_file", path="deep/er/new2.txt", content="created in turn 2\n")
    await run(2, "delete_file", path="c.txt")
    await run(2, "bash", command="mv a.txt moved.txt && ln -s moved.txt a-link")
    s2 = state(ws)
    await run(3, "bash", command="rm -rf ./* .gitattributes")
    assert state(ws) == {}
    assert manager.turns() == [1, 2, 3]

    undone = manager.undo()
    assert state(ws) == s2
    assert "Recreated" in undone.text and "deep/er/new2.txt" in undone.text

    back2 = manager.rewind(2)
    assert state(ws) == s1
    assert back2.renamed == (("moved.txt", "a.txt"),)
    assert "c.txt" in back2.recreated and "a-link" in back2.removed
    assert not (ws / "deep").exists()  # folders made since go when emptied
    assert manager.turns() == [1]

    back1 = manager.rewind(1)
    assert state(ws) == s0
    assert set(back1.modes) == {"tool.sh", "private.key"}
    assert "new1.txt" in back1.removed
    assert manager.turns() == []
    assert "No step changed files" in manager.rewind(1).text


async def test_a_new_manager_finds_the_steps_of_its_session(tmp_path: Path, ws: Path) -> None:
    run = Steps(ws, manager_for(tmp_path, ws))
    s0 = state(ws)
    await run(1, "bash", command="echo changed > a.txt")
    other = CheckpointManager(ws, data_dir=tmp_path / "data", session_id="other")
    assert other.steps() == []
    again = manager_for(tmp_path, ws)
    assert [s.detail for s in again.steps()] == ["echo changed > a.txt"]
    again.undo()
    assert state(ws) == s0


async def test_read_only_commands_take_no_snapshot(tmp_path: Path, ws: Path) -> None:
    manager = manager_for(tmp_path, ws)
    run = Steps(ws, manager)
    await run(1, "bash", command="ls -la && cat a.txt | wc -l && git status")
    await run(1, "read_file", path="a.txt")
    assert manager.steps() == []
    await run(1, "bash", command="cat a.txt > copy.txt")
    assert len(manager.steps()) == 1
    for command in ["ls", "grep -n x a.txt", "git log --oneline -3", "head a.txt | tail -1"]:
        assert command_is_read_only(command), command
    for command in [
        "rm a.txt",
        "echo x > a.txt",
        "git diff --output=a.txt",
        "find . -delete",
        "ls $(rm a.txt)",
        "git checkout -- .",
        "sed -i s/a/b/ a.txt",
        "FOO=1 ls",
    ]:
        assert not command_is_read_only(command), command


async def test_what_is_not_covered_is_left_alone_and_named(tmp_path: Path, ws: Path) -> None:
    manager = manager_for(tmp_path, ws, max_file_mb=0.001, exclude=["scratch/"])
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("original\n")
    (ws / "scratch").mkdir()
    (ws / "scratch" / "tmp.txt").write_text("scratch\n")
    (ws / "big.bin").write_bytes(b"x" * 5000)
    run = Steps(ws, manager)
    await run(1, "bash", command="echo changed > node_modules/pkg/index.js && echo y >> big.bin")
    await run(1, "bash", command="echo z > a.txt && echo later > scratch/tmp.txt")
    result = manager.rewind(1)
    assert (ws / "a.txt").read_bytes() == b"alpha\n"
    assert (ws / "node_modules" / "pkg" / "index.js").read_text() == "changed\n"
    assert (ws / "scratch" / "tmp.txt").read_text() == "later\n"
    assert (ws / "big.bin").stat().st_size == 5002  # not rolled back, and not deleted
    assert "Not covered" in result.text
    for name in ("node_modules/", "scratch/", "big.bin (larger than max_file_mb"):
        assert name in result.text, result.text


async def test_a_file_grown_past_the_limit_is_overwritten_only_while_it_is_the_agents(
    tmp_path: Path, ws: Path
) -> None:
    # Still as the agent left it (the stat its last record keeps): the agent's, rewound.
    manager = manager_for(tmp_path, ws, max_file_mb=0.001)
    run = Steps(ws, manager)
    await run(1, "bash", command="head -c 5000 /dev/zero > a.txt")
    await run(1, "bash", command="echo more >> a.txt")
    result = manager.rewind(1)
    assert (ws / "a.txt").read_bytes() == b"alpha\n", result.text
    assert "Restored a.txt" in result.text and "is not kept" in result.text


async def test_a_file_grown_past_the_limit_and_changed_since_is_never_overwritten(
    tmp_path: Path, ws: Path
) -> None:
    manager = manager_for(tmp_path, ws, max_file_mb=0.001)
    run = Steps(ws, manager)
    await run(1, "bash", command="head -c 5000 /dev/zero > a.txt")
    (ws / "a.txt").write_bytes(bytes(5000) + b"mine\n")  # someone else, after the turn
    result = manager.rewind(1)
    assert (ws / "a.txt").stat().st_size == 5005
    assert "a.txt (its current version is not in any snapshot" in result.text
    assert "/rewind --force a.txt" in result.text
    forced = manager.force(["a.txt"])
    assert (ws / "a.txt").read_bytes() == b"alpha\n", forced.text
    assert manager.force(["../outside"]).text.endswith("is not inside the workspace.")


async def test_rewind_replaces_a_folder_turned_symlink_without_writing_through_it(
    tmp_path: Path, ws: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "d").mkdir()
    (ws / "d" / "victim.txt").write_text("inside before\n")
    manager = manager_for(tmp_path, ws)
    run = Steps(ws, manager)
    await run(1, "bash", command=f"rm -rf d && ln -s {outside} d")
    (outside / "victim.txt").write_text("outside, untouched\n")
    result = manager.rewind(1)
    assert (outside / "victim.txt").read_text() == "outside, untouched\n"
    assert not (ws / "d").is_symlink()
    assert (ws / "d" / "victim.txt").read_text() == "inside before\n"
    assert "d/victim.txt" in result.recreated and "d" in result.removed


async def test_disabled_takes_no_snapshot(tmp_path: Path, ws: Path) -> None:
    manager = manager_for(tmp_path, ws, enabled=False)
    await Steps(ws, manager)(1, "bash", command="echo x > a.txt")
    assert manager.steps() == []
    assert not (tmp_path / "data" / "checkpoints").exists()
    assert "Snapshots are off" in manager.rewind(1).text


async def test_nested_repository_is_reported_not_covered(tmp_path: Path, ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws / "vendor")], check=True)  # noqa: ASYNC221
    (ws / "vendor" / "x.txt").write_text("x\n")
    manager = manager_for(tmp_path, ws)
    await Steps(ws, manager)(1, "bash", command="echo y > a.txt")
    result = manager.rewind(1)
    assert "vendor/ (a repository of its own)" in result.text
    assert (ws / "a.txt").read_bytes() == b"alpha\n"


async def test_pruning_by_age_and_by_size(tmp_path: Path, ws: Path) -> None:
    manager = manager_for(tmp_path, ws, keep_days=1)
    run = Steps(ws, manager)
    for i in range(3):
        await run(1, "bash", command=f"echo {i} > a.txt")
    assert len(manager.steps()) == 3
    assert manager.prune() == 0
    dropped = manager.prune(now=manager.steps()[-1].time + 2 * 86400)
    # Each step's snapshot and the record of the files as the agent left them after it.
    assert dropped == 6 and manager.steps() == []
    refs = subprocess.run(  # noqa: ASYNC221
        ["git", f"--git-dir={manager.store_dir / 'git'}", "for-each-ref", "refs/steps"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert refs.stdout == ""

    small = manager_for(tmp_path, ws, max_store_mb=0.0001)
    run = Steps(ws, small)
    for i in range(4):
        (ws / f"f{i}.bin").write_bytes(os.urandom(20000))
        await run(1, "bash", command=f"touch f{i}.bin")
    assert len(small.steps()) == 4
    assert small.prune() >= 1
    assert len(small.steps()) < 4
    size, folders = checkpoint_store_size(tmp_path / "data")
    assert size > 0 and folders == 1


def test_a_project_file_cannot_turn_snapshots_off(tmp_path: Path) -> None:
    from reasonix.config import load_config

    (tmp_path / "reasonix.toml").write_text("[checkpoints]\nenabled = false\nmax_file_mb = 1\n")
    config = load_config(tmp_path, environ={}, user_config=tmp_path / "none.toml")
    assert config.checkpoints.enabled is True
    assert config.checkpoints.max_file_mb == 1  # the other keys follow the trust rules
    user = tmp_path / "user.toml"
    user.write_text("[checkpoints]\nenabled = false\n")
    assert load_config(tmp_path, environ={}, user_config=user).checkpoints.enabled is False
