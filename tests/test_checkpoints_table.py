"""The snapshot store's small decisions as tables, in milliseconds: which shell commands are
plainly read-only (no snapshot needed), how steps and snapshots are written and read back,
what a rewind's summary counts, the store's names for a workspace and a session, and the
permission bits restored. The rewinds themselves are proven on real files in
tests/test_checkpoints.py and tests/test_undo_everything.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.safety import checkpoints as cp
from reasonix.safety import snapshot_restore as sr
from reasonix.safety.checkpoints import RewindResult, Step, command_is_read_only


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat a.txt | head -5",
        "grep -rn foo src && wc -l a b",
        "git status",
        "git log --oneline -3",
        "/usr/bin/ls",
        "git diff HEAD",
        "echo hi; pwd",
    ],
)
def test_read_only_commands(command: str) -> None:
    assert command_is_read_only(command) is True


@pytest.mark.parametrize(
    "command",
    [
        "",  # nothing to judge: a snapshot is taken
        "rm -rf build",
        "echo hi > out.txt",  # a redirection writes
        "cat $(rm x)",  # hidden parts
        "git",  # git without a subcommand
        "git commit -m x",
        "git diff --output=patch.txt",  # a reading command told to write
        "git -c core.pager=sh log",
        "grep -o foo a.txt --exec rm",
        "FOO=1 ls",  # an assignment in front
        "ls; touch new",  # one part writes
        "sed -i s/a/b/ f",
        "python3 -c 'print(1)'",
    ],
)
def test_commands_that_may_change_files(command: str) -> None:
    assert command_is_read_only(command) is False


def test_a_step_is_written_and_read_back_whole() -> None:
    step = Step(3, 2, "call_1", "bash", "make test", "abc123", 1700000000.5, "after")
    assert Step.from_dict(step.to_dict()) == step
    assert step.to_dict()["call"] == "call_1" and step.to_dict()["kind"] == "after"
    old = Step.from_dict({"seq": "4", "commit": "def"})  # an older journal line
    assert (old.seq, old.turn, old.call_id, old.tool, old.kind, old.time) == (
        4,
        0,
        "",
        "",
        "step",
        0.0,
    )


@pytest.mark.parametrize(
    ("detail", "shown"),
    [
        ("", "bash"),
        ("make   test\n", "bash: make test"),
        ("x" * 60, "bash: " + "x" * 60),
        ("x" * 61, "bash: " + "x" * 57 + "..."),
    ],
)
def test_a_step_describes_itself_in_one_short_line(detail: str, shown: str) -> None:
    assert Step(1, 1, "c", "bash", detail, "sha", 0.0).describe() == shown


def test_a_snapshot_message_round_trips_and_survives_damage() -> None:
    snap = cp._Snapshot("tree1", {"b.sh": 0o700, "a": 0o600}, {"big.bin": "too large"})
    message = snap.message()
    assert message.startswith("reasonix snapshot\n\n")
    assert cp._Snapshot.parse("tree1", message) == snap
    assert cp._Snapshot.parse("t", "reasonix snapshot\n\n{not json") == cp._Snapshot("t")
    assert cp._Snapshot.parse("t", "reasonix snapshot") == cp._Snapshot("t")


def test_a_rewind_counts_a_rename_as_two_changes() -> None:
    result = RewindResult(
        1,
        restored=("a",),
        recreated=("b", "c"),
        removed=("d",),
        renamed=(("e", "f"),),
        modes=("g",),
        text="summary",
    )
    assert result.changed == 1 + 2 + 1 + 2 + 1
    assert str(result) == "summary"
    assert RewindResult(0).changed == 0


@pytest.mark.parametrize(
    ("folder", "prefix"),
    [
        ("project", "project-"),
        ("my project!", "my_project_-"),
        ("n" * 50, "n" * 40 + "-"),
    ],
)
def test_the_store_name_of_a_workspace(folder: str, prefix: str) -> None:
    key = cp._workspace_key(Path("/work") / folder)
    assert key.startswith(prefix)
    assert len(key) == len(prefix) + 16
    assert key != cp._workspace_key(Path("/other") / folder)  # the digest tells them apart
    assert cp._workspace_key(Path("/")).startswith("root-")


@pytest.mark.parametrize(
    ("session", "name"),
    [("20261201-ab", "20261201-ab"), ("../x y", ".._x_y"), ("", "session")],
)
def test_the_journal_name_of_a_session(session: str, name: str) -> None:
    assert cp._session_file_name(session) == name


@pytest.mark.parametrize(
    ("mode", "perms"),
    [("100755", 0o755), ("100744", 0o755), ("100644", 0o644), ("100600", 0o644), ("100100", 0o755)],
)
def test_git_modes_map_to_plain_permissions(mode: str, perms: int) -> None:
    assert sr._canonical(mode) == perms


def test_parent_folders_names_and_paths() -> None:
    assert sr._parent_dirs(["a/b/c.txt", "d.txt", "a/e"]) == {"a", "a/b"}
    assert cp._rel(Path("/ws/a/b"), Path("/ws")) == "a/b"
    assert cp._rel(Path("/elsewhere"), Path("/ws")) == "/elsewhere"
    eight = [f"f{i}" for i in range(8)]
    assert cp._names(eight) == ", ".join(eight)
    assert cp._names([*eight, "x", "y"]) == ", ".join(eight) + " and 2 more"
    assert cp._escape_pattern("a*b?[c]!#\\") == "a\\*b\\?\\[c\\]\\!\\#\\\\"
    assert cp._nul(["a", "b"]) == b"a\0b\0"


def test_store_size_of_nothing(tmp_path: Path) -> None:
    assert cp.checkpoint_store_size(tmp_path) == (0, 0)
    (tmp_path / "checkpoints" / "ws-1" / "git").mkdir(parents=True)
    (tmp_path / "checkpoints" / "ws-1" / "git" / "obj").write_bytes(b"x" * 10)
    (tmp_path / "checkpoints" / "stray").mkdir()
    assert cp.checkpoint_store_size(tmp_path) == (10, 1)


def test_snapshots_and_steps_cannot_be_changed_once_made() -> None:
    import dataclasses

    snap = cp._Snapshot("tree")
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.tree = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Step(1, 1, "c", "t", "d", "sha", 0.0).seq = 2  # type: ignore[misc]


@pytest.fixture
def store(tmp_path: Path) -> cp._Store:
    from reasonix.config.schema import CheckpointsConfig

    workspace = tmp_path / "ws"
    workspace.mkdir()
    made = cp._Store(tmp_path / "data" / "checkpoints", workspace, CheckpointsConfig())
    made.ensure()
    return made


def test_the_store_is_the_owners_only(store: cp._Store) -> None:
    import os
    import stat

    folders = [store.dir.parent, store.dir, store.sessions]
    folders += [Path(f) for f, _, _ in os.walk(store.git_dir) if Path(f) != store.git_dir / "info"]
    for folder in folders:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_failing_git_command_is_our_error_with_gits_message(store: cp._Store) -> None:
    with pytest.raises(cp._GitError, match=r"^git cat-file failed: .*(Not a valid|bad)"):
        store.run("cat-file", "-p", "0" * 40)


# -- the manager's answers -------------------------------------------------------------------------


def _manager(tmp_path: Path) -> tuple[cp.CheckpointManager, Path]:
    from reasonix.config import CheckpointsConfig

    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text("alpha\n")
    manager = cp.CheckpointManager(
        ws, data_dir=tmp_path / "data", session_id="s1", settings=CheckpointsConfig()
    )
    return manager, ws


def test_undo_with_nothing_to_undo(tmp_path: Path) -> None:
    manager, _ = _manager(tmp_path)
    result = manager.undo()
    assert (result.turn, result.text) == (0, "No step of this session changed files.")
    assert manager.restore_point(1) is None


def test_a_step_that_changed_nothing_is_not_undone(tmp_path: Path) -> None:
    manager, ws = _manager(tmp_path)
    manager.before_step(1, "call-1", "bash", "python3 -c pass")  # changed nothing
    manager.after_turn(1)
    manager.before_step(2, "call-2", "bash", "echo two > a.txt")
    (ws / "a.txt").write_text("two\n")
    manager.after_turn(2)
    assert [s.detail for s in manager.changing_steps()] == ["echo two > a.txt"]
    rewound = manager.rewind(1)
    assert rewound.text.startswith("Files put back to before turn 1.")
    assert (ws / "a.txt").read_text() == "alpha\n"


def test_a_failed_prune_drops_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, _ = _manager(tmp_path)
    manager.undo()  # prepares the store

    def broken(now: float) -> int:
        raise OSError("disk on fire")

    monkeypatch.setattr(manager, "_prune", broken)
    assert manager.prune() == 0
    assert manager.last_error == "pruning the snapshot store failed: disk on fire"


def test_a_rewind_keeps_what_someone_else_changed_since(tmp_path: Path) -> None:
    """The agent changed a.txt in turn 1; the user then edited b.txt and made c.txt: a rewind
    to before turn 1 puts a.txt back and leaves the user's work alone, naming it."""
    manager, ws = _manager(tmp_path)
    (ws / "b.txt").write_text("bravo\n")
    manager.before_step(1, "call-1", "bash", "echo one > a.txt")
    (ws / "a.txt").write_text("one\n")
    manager.after_turn(1)
    (ws / "b.txt").write_text("the user's edit\n")
    (ws / "c.txt").write_text("the user's new file\n")
    result = manager.rewind(1)
    assert (ws / "a.txt").read_text() == "alpha\n"
    assert (ws / "b.txt").read_text() == "the user's edit\n"
    assert (ws / "c.txt").read_text() == "the user's new file\n"
    assert set(result.kept) == {"b.txt", "c.txt"}


def test_pruning_by_age_cuts_at_exactly_keep_days(tmp_path: Path) -> None:
    from reasonix.config import CheckpointsConfig

    manager, _ = _manager(tmp_path)
    manager.settings = CheckpointsConfig(keep_days=1)
    step = manager.before_step(1, "call-1", "bash", "echo one > a.txt")
    assert step is not None
    assert manager.prune(now=step.time + 86400 - 0.5) == 0  # half a second short of a day
    assert manager.prune(now=step.time + 86400 + 0.5) == 1  # half a second past it


def test_the_store_lock_is_the_owners_only(store: cp._Store) -> None:
    import stat

    with store.locked():
        pass
    assert stat.S_IMODE((store.dir / "lock").stat().st_mode) == 0o600


def test_a_store_over_max_store_mb_by_a_byte_is_pruned_and_one_at_it_is_not(
    tmp_path: Path,
) -> None:
    """``max_store_mb`` is a cap in MiB: a store one byte over it loses its oldest snapshots,
    a store exactly at it keeps them all."""
    from reasonix.config import CheckpointsConfig

    manager, ws = _manager(tmp_path)
    for turn in (1, 2):
        manager.before_step(turn, f"call-{turn}", "bash", f"echo {turn} > a.txt")
        (ws / "a.txt").write_text(f"{turn}\n" * 500)
        manager.after_turn(turn)
    assert manager.prune() == 0  # the defaults drop nothing; the store is now at rest
    size = manager.store_size()
    assert size > 2048  # big enough that a cap off by a part in a thousand misses it
    manager.settings = CheckpointsConfig(max_store_mb=size / 2**20)
    assert manager.prune() == 0
    manager.settings = CheckpointsConfig(max_store_mb=(size - 1) / 2**20)
    assert manager.prune() >= 1


def test_a_rewind_removes_every_folder_the_agent_created(tmp_path: Path) -> None:
    """Files the agent made in new nested folders go on a rewind, and so do the folders,
    the deepest first (a parent is only empty once its child folder is gone)."""
    manager, ws = _manager(tmp_path)
    manager.before_step(1, "call-1", "bash", "mkdir -p new/deep/er")
    (ws / "new" / "deep" / "er").mkdir(parents=True)
    (ws / "new" / "deep" / "er" / "f.txt").write_text("made\n")
    manager.after_turn(1)
    manager.rewind(1)
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]


def test_a_file_with_a_one_letter_name_is_put_back(tmp_path: Path) -> None:
    """A one-character path is a file like any other, whether the store's own stat cache or
    git's index (a new process) looks at it."""
    manager, ws = _manager(tmp_path)
    (ws / "x").write_text("first\n")
    manager.before_step(1, "call-1", "bash", "echo second > x")
    (ws / "x").write_text("second\n")
    manager.after_turn(1)
    from reasonix.config import CheckpointsConfig

    later = cp.CheckpointManager(
        ws, data_dir=tmp_path / "data", session_id="s1", settings=CheckpointsConfig()
    )
    later.before_step(2, "call-2", "bash", "echo third > x")
    (ws / "x").write_text("third\n")
    later.after_turn(2)
    later.rewind(2)
    assert (ws / "x").read_text() == "second\n"
    later.rewind(1)
    assert (ws / "x").read_text() == "first\n"


@pytest.mark.slow  # 200 real snapshots: seconds, so CI runs it, the fast tier does not
def test_the_store_is_pruned_by_itself_every_200_steps(tmp_path: Path) -> None:
    """A long session never calls ``prune``: the store prunes itself on the 200th step (here
    with ``keep_days = 0``, so everything before that step's moment goes)."""
    from reasonix.config import CheckpointsConfig

    manager, _ = _manager(tmp_path)
    manager.settings = CheckpointsConfig(keep_days=0)
    for n in range(1, 200):
        manager.before_step(1, f"call-{n}", "bash", "true")
    assert len(manager.journal.read_text().splitlines()) == 199
    manager.before_step(1, "call-200", "bash", "true")
    assert not manager.journal.exists() or manager.journal.read_text().strip() == ""


def test_a_file_one_byte_over_max_file_mb_is_not_covered_and_one_at_it_is(
    tmp_path: Path,
) -> None:
    """``max_file_mb`` is in MiB to the byte: a file of exactly that size is snapshotted and
    put back, one a byte larger is left as it is and named with the reason."""
    from reasonix.config import CheckpointsConfig

    ws = tmp_path / "ws"
    ws.mkdir()
    manager = cp.CheckpointManager(
        ws,
        data_dir=tmp_path / "data",
        session_id="s1",
        settings=CheckpointsConfig(max_file_mb=2048 / 2**20),
    )
    (ws / "at.bin").write_bytes(b"a" * 2048)
    (ws / "over.bin").write_bytes(b"o" * 2049)
    manager.before_step(1, "call-1", "bash", "make")
    (ws / "at.bin").write_bytes(b"A" * 2048)
    (ws / "over.bin").write_bytes(b"O" * 2049)
    manager.after_turn(1)
    result = manager.rewind(1)
    assert (ws / "at.bin").read_bytes() == b"a" * 2048
    assert (ws / "over.bin").read_bytes() == b"O" * 2049
    assert dict(result.not_covered) == {"over.bin": "larger than max_file_mb = 0.00195312"}


def test_a_rewind_puts_back_permission_bits_a_later_snapshot_saw_unchanged(
    tmp_path: Path,
) -> None:
    """A private file (0600) the agent opened up in turn 2 is private again after a rewind to
    before turn 2, although turn 1's snapshot found it unchanged (read from the stat cache)."""
    import os
    import stat

    manager, ws = _manager(tmp_path)
    secret = ws / "secret.txt"
    secret.write_text("s\n")
    os.chmod(secret, 0o600)
    manager.before_step(1, "call-1", "bash", "echo one > a.txt")
    (ws / "a.txt").write_text("one\n")
    manager.after_turn(1)
    manager.before_step(2, "call-2", "bash", "chmod 644 secret.txt")
    os.chmod(secret, 0o644)
    manager.after_turn(2)
    manager.rewind(2)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_a_rewind_gives_a_script_back_its_plain_executable_bits(tmp_path: Path) -> None:
    """A script that was 0755 and that the agent made 0700 is 0755 again after a rewind."""
    import os
    import stat

    manager, ws = _manager(tmp_path)
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o755)
    manager.before_step(1, "call-1", "bash", "chmod 700 run.sh")
    os.chmod(script, 0o700)
    manager.after_turn(1)
    result = manager.rewind(1)
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert "run.sh" in result.modes


def test_a_rewind_over_two_turns_keeps_the_users_edit_between_them(tmp_path: Path) -> None:
    """The user edited b.txt between turn 1 and turn 2 (turn 2's snapshot has the edit): a
    rewind to before turn 1 puts the agent's a.txt back and leaves the user's b.txt alone."""
    manager, ws = _manager(tmp_path)
    (ws / "b.txt").write_text("bravo\n")
    manager.before_step(1, "call-1", "bash", "echo one > a.txt")
    (ws / "a.txt").write_text("one\n")
    manager.after_turn(1)
    (ws / "b.txt").write_text("the user's edit\n")
    manager.before_step(2, "call-2", "bash", "echo two > a.txt")
    (ws / "a.txt").write_text("two\n")
    manager.after_turn(2)
    result = manager.rewind(1)
    assert (ws / "a.txt").read_text() == "alpha\n"
    assert (ws / "b.txt").read_text() == "the user's edit\n"
    assert "b.txt" in result.kept


def test_the_step_journal_is_the_owners_only(tmp_path: Path) -> None:
    """The journal holds the commands the agent ran: readable by its owner only."""
    import stat

    manager, _ = _manager(tmp_path)
    manager.before_step(1, "call-1", "bash", "export TOKEN=abc; make")
    assert stat.S_IMODE(manager.journal.stat().st_mode) == 0o600
