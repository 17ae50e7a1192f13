"""Rewind over two turns and the files nobody had when the first began (after 211ff29, which keeps
an edit made between two turns to a file the agent had written), through the real CLI.

- the agent creates ``new.txt`` in turn 1, the user rewrites it before turn 2 (which touches
  another file): ``reasonix rewind --turn 1`` must not delete the user's version;
- the user creates ``mine.txt`` between the turns: the rewind must not delete it.

Control: without the user's change the same rewind deletes the agent's ``new.txt`` (so the
probe sees a rewind remove a file).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.security.support import record
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

pytestmark = pytest.mark.slow

USERS = "the user's own text\n"


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
    (root / "g.txt").write_text("g0\n")
    config = tmp_path / "cfg"
    config.mkdir()
    with FakeDeepSeekServer() as ex:
        toml = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=12)
        (config / "config.toml").write_text(toml)
        yield Work(root, cli_env(tmp_path / "data", config, drop=("GIT_",)), ex)


def _two_turns(work: Work, between: str) -> str:
    work.ex.push(
        Reply.call("write_file", {"path": "new.txt", "content": "agent v1\n"}), Reply.text("1")
    )
    work.reasonix("run", "--yes", "--no-planner", "turn one")
    if between == "edit":
        (work.root / "new.txt").write_text(USERS)
    elif between == "create":
        (work.root / "mine.txt").write_text(USERS)
    work.ex.push(
        Reply.call("write_file", {"path": "g.txt", "content": "g agent\n"}), Reply.text("2")
    )
    work.reasonix("run", "--yes", "--no-planner", "--continue", "turn two")
    return work.reasonix("rewind", "--turn", "1")


def test_a_rewind_keeps_the_users_version_of_a_file_the_agent_created(
    work: Work, request: pytest.FixtureRequest
) -> None:
    said = _two_turns(work, "edit")
    kept = (work.root / "new.txt").exists() and (work.root / "new.txt").read_text() == USERS
    record(request, "rewind", 1, int(not kept))
    assert kept, said


def test_a_rewind_keeps_a_file_the_user_created_between_the_turns(
    work: Work, request: pytest.FixtureRequest
) -> None:
    said = _two_turns(work, "create")
    kept = (work.root / "mine.txt").exists()
    record(request, "rewind", 1, int(not kept))
    assert kept, said


def test_control_the_rewind_deletes_the_agents_new_file(work: Work) -> None:
    said = _two_turns(work, "")
    assert not (work.root / "new.txt").exists(), said
    assert (work.root / "g.txt").read_text() == "g0\n", said
