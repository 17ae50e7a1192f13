"""attacker5 B7: a git repository the agent makes in a subfolder (``git init lib`` plus a
``core.fsmonitor`` program) survives ``/rewind``, and the rewind does not name it.

The snapshot store's exclusions hold ``.git`` (any folder of that name) and its look at the work
tree treats ``lib/`` as "a repository of its own" once ``lib/.git`` exists; the rewind's list of
what it left (``_Store.uncovered``: ``ls-files -o -i --directory``) never descends into that
repository, so ``lib/.git`` is neither removed nor named ("A rewind leaves those as they are and
names them", checkpoints.py). The user's editor runs git in nested repositories on its own (VS
Code's repository detection): the planted program runs there, unconfined. Control: a plain file
the agent creates in the same folder is removed by the same rewind.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

PLANT = 'git init -q lib && git -C lib config core.fsmonitor "touch $PWD/PWNED; false"'


@dataclass
class Work:
    root: Path
    env: dict[str, str]
    ex: FakeDeepSeekServer


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Work]:
    root, cfg = tmp_path / "w", tmp_path / "cfg"
    (root / "lib").mkdir(parents=True)
    cfg.mkdir()
    (root / "lib" / "util.py").write_text("def util():\n    return 1\n")
    with FakeDeepSeekServer() as ex:
        text = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=5)
        (cfg / "config.toml").write_text(text)
        yield Work(root, cli_env(tmp_path / "data", cfg), ex)


def _turn_then_rewind(w: Work, command: str) -> str:
    w.ex.push(Reply.call("bash", {"command": command}), Reply.text("done"))
    argv = ["run", "--no-planner", "--mode", "yolo", "--input-format", "stream-json"]
    argv += ["--output-format", "stream-json"]
    lines = [{"text": "tidy lib"}, {"text": "/rewind"}]
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", *argv],
        cwd=w.root,
        env=w.env,
        input="".join(json.dumps(x) + "\n" for x in lines),
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"type": "result"')]
    assert len(results) == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    answer: str = results[-1]["result"]
    assert "Files put back" in answer, answer
    return answer


def test_break_a_rewind_removes_or_names_the_agents_nested_repository(work: Work) -> None:
    answer = _turn_then_rewind(work, PLANT)
    left = (work.root / "lib" / ".git").exists()
    assert not left or "lib/.git" in answer, f"lib/.git is left and the rewind said: {answer}"


def test_control_a_plain_file_the_agent_made_there_is_removed(work: Work) -> None:
    answer = _turn_then_rewind(work, "printf 'touch PWNED\\n' > lib/evil.sh")
    assert not (work.root / "lib" / "evil.sh").exists(), answer
    assert "lib/evil.sh" in answer, answer
