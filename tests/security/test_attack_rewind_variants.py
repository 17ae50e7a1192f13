"""Variants against "rewind never destroys work it did not make" (issue 24's class 7), through
the real CLI.

The fix compares each file with how the agent left it at the end of the *last* turn, and leaves
alone what differs. A rewind over two turns goes further back than that record: the user edits
``f.txt`` between turn 1 (where the agent wrote it) and turn 2 (where the agent touched another
file); at the end of turn 2 the file is as the user left it, so it matches the record, counts as
the agent's, and ``reasonix rewind --turn 1`` put turn 1's snapshot back over the user's edit —
"Restored f.txt.", no note that the version it replaced was the user's.

Worked on main when written (recorded as a strict xfail); fixed: a rewind also leaves alone
what differs between a turn's end-of-turn record and the next turn's first snapshot (someone
else changed it between the turns), and says so. Control: the user's edit made after
the last turn is left alone by the same rewind (the fix this goes around), so the probe tells
the two apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

pytestmark = pytest.mark.slow

USERS = "the user's edit\n"


@dataclass
class Work:
    root: Path
    env: dict[str, str]
    ex: FakeDeepSeekServer

    def reasonix(self, *args: str) -> str:
        proc = run_cli(args, cwd=self.root, env=self.env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Work]:
    root = tmp_path / "work"
    root.mkdir()
    (root / "f.txt").write_text("original\n")
    (root / "g.txt").write_text("g0\n")
    config = tmp_path / "cfg"
    config.mkdir()
    with FakeDeepSeekServer() as ex:
        toml = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=12)
        (config / "config.toml").write_text(toml)
        yield Work(root, cli_env(tmp_path / "data", config, drop=("GIT_",)), ex)


def _two_turns(work: Work, *, edit_between: bool) -> None:
    work.ex.push(
        Reply.call("write_file", {"path": "f.txt", "content": "agent v1\n"}), Reply.text("1")
    )
    work.reasonix("run", "--yes", "--no-planner", "turn one")
    if edit_between:
        (work.root / "f.txt").write_text(USERS)
    work.ex.push(
        Reply.call("write_file", {"path": "g.txt", "content": "g agent\n"}), Reply.text("2")
    )
    work.reasonix("run", "--yes", "--no-planner", "--continue", "turn two")
    if not edit_between:
        (work.root / "f.txt").write_text(USERS)


def test_a_rewind_over_two_turns_keeps_an_edit_made_between_them(work: Work) -> None:
    _two_turns(work, edit_between=True)
    said = work.reasonix("rewind", "--turn", "1")
    assert (work.root / "f.txt").read_text() == USERS, said
    assert "Left alone" in said and "f.txt" in said
    assert (work.root / "g.txt").read_text() == "g0\n"


def test_control_an_edit_after_the_last_turn_is_left_alone(work: Work) -> None:
    _two_turns(work, edit_between=False)
    said = work.reasonix("rewind", "--turn", "1")
    assert (work.root / "f.txt").read_text() == USERS, said
    assert "Left alone" in said and "f.txt" in said
    assert (work.root / "g.txt").read_text() == "g0\n"
