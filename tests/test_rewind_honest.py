"""Undo takes back what changed, and never what it did not make, through the real CLI.

``/undo`` after "edit calc.py, then run the tests" restores the edit in one step (the test run
changed nothing, so it is not the step undone); ``reasonix rewind`` after the user edited and
created files leaves the user's work alone and says so. The control runs the same rewind with
the protection switched off inside the test and sees the user's work destroyed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

ORIGINAL = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


@dataclass
class Project:
    root: Path
    data: Path
    config: Path
    ex: FakeDeepSeekServer

    def env(self) -> dict[str, str]:
        return cli_env(self.data, self.config, drop=("GIT_",))

    def reasonix(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(args, cwd=self.root, env=self.env())


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "work"
    root.mkdir()
    (root / "calc.py").write_text(ORIGINAL)
    (root / "notes.md").write_text("my notes\n")
    with FakeDeepSeekServer() as ex:
        p = Project(root, tmp_path / "data", tmp_path / "config", ex)
        p.config.mkdir()
        toml = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=12)
        (p.config / "config.toml").write_text(toml)
        yield p


def push_edit_then_test(ex: FakeDeepSeekServer) -> None:
    ex.push(
        Reply.call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        Reply.call("bash", {"command": "python3 -c 'import calc; assert calc.add(1, 2) == 3'"}),
        Reply.text("Fixed add and ran the check."),
    )


@pytest.mark.slow
def test_undo_after_edit_then_test_restores_the_edit_in_one_step(project: Project) -> None:
    import pexpect

    push_edit_then_test(project.ex)
    env = {**project.env(), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "--mode", "yolo", "--no-planner"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 160),
    )
    try:
        child.expect("›")
        child.sendline("fix add in calc.py, then run the check")
        child.expect("Fixed add and ran the check.")
        child.expect("›")
        assert (project.root / "calc.py").read_text() == FIXED
        child.sendline("/undo")
        child.expect(r"before step 1 \(edit: calc.py\)")
        child.expect("Restored calc.py.")
        child.expect("›")
        assert (project.root / "calc.py").read_text() == ORIGINAL
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


@pytest.mark.slow
def test_rewind_steps_counts_steps_that_changed_files(project: Project) -> None:
    push_edit_then_test(project.ex)
    proc = project.reasonix("run", "--yes", "--no-planner", "fix add, then run the check")
    assert proc.returncode == 0, proc.stderr
    assert (project.root / "calc.py").read_text() == FIXED
    proc = project.reasonix("rewind", "--steps", "1")
    assert proc.returncode == 0, proc.stderr
    assert "Restored calc.py." in proc.stdout
    assert "No file differed" not in proc.stdout
    assert (project.root / "calc.py").read_text() == ORIGINAL
    # Nothing else changed files: a second undo has nothing to take back.
    again = project.reasonix("rewind", "--steps", "1")
    assert "Nothing to undo" in again.stdout, again.stdout


#: ``reasonix rewind`` with the protection switched off: every difference counts as the agent's.
UNPROTECTED = (
    "import sys\n"
    "from reasonix.safety import checkpoints\n"
    "checkpoints.CheckpointManager._foreign = lambda self, agent, current: set()\n"
    "from reasonix.cli.main import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("protected", [True, False], ids=["protected", "control"])
def test_rewind_after_a_user_edit_keeps_the_users_edit(project: Project, protected: bool) -> None:
    (project.root / "util.py").write_text("X = 1\n")
    project.ex.push(
        Reply.call("write_file", {"path": "calc.py", "content": FIXED}),
        Reply.call("write_file", {"path": "util.py", "content": "X = 2\n"}),
        Reply.call("write_file", {"path": "agent.txt", "content": "made by the agent\n"}),
        Reply.text("Done."),
    )
    proc = project.reasonix("run", "--yes", "--no-planner", "change things")
    assert proc.returncode == 0, proc.stderr
    # After the session, the user works on: edits a file the agent changed, one it never
    # touched, and creates a file of their own.
    (project.root / "util.py").write_text("X = 'mine'\n")
    (project.root / "notes.md").write_text("my notes, edited after the session\n")
    (project.root / "mine.txt").write_text("the user's own file\n")

    if protected:
        proc = project.reasonix("rewind")
    else:
        proc = subprocess.run(
            [sys.executable, "-c", UNPROTECTED, "rewind"],
            cwd=project.root,
            env=project.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    # The agent's own work is taken back either way.
    assert (project.root / "calc.py").read_text() == ORIGINAL
    assert not (project.root / "agent.txt").exists()
    users = {
        "util.py": "X = 'mine'\n",
        "notes.md": "my notes, edited after the session\n",
        "mine.txt": "the user's own file\n",
    }
    kept = {
        name: (project.root / name).read_text() if (project.root / name).exists() else None
        for name in users
    }
    if protected:
        assert kept == users
        assert "Left alone" in proc.stdout
        for name in users:
            assert name in proc.stdout
    else:
        # The probe sees the break: without the protection the user's work is gone.
        assert kept == {"util.py": "X = 1\n", "notes.md": "my notes\n", "mine.txt": None}
