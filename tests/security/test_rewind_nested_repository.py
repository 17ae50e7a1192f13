"""attacker5 B7's fix: a rewind removes the ``.git`` of a repository the agent made since the
snapshot it goes back to (``git init lib`` with a ``core.fsmonitor`` program), and names it; a
repository that was there before, one someone else made, and one that holds commits are left
as they are (the last two named). The end-to-end case through the CLI is
tests/security/test_attack5_rewind.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reasonix.safety.snapshot_restore import _Restorer
from tests.support.checkpoints import Steps, manager_for

PLANT = 'git init -q lib && git -C lib config core.fsmonitor "touch $PWD/PWNED; false"'


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "util.py").write_text("def util():\n    return 1\n")
    (root / "a.txt").write_text("alpha\n")
    return root


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


@pytest.mark.parametrize("protected", [True, False], ids=["fixed", "control-switched-off"])
async def test_the_agents_repository_in_a_covered_folder_goes_with_the_rewind(
    tmp_path: Path, ws: Path, protected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not protected:  # the control: without the removal the probe sees the plant survive
        monkeypatch.setattr(_Restorer, "_remove_created_repositories", lambda self: None)
    manager = manager_for(tmp_path, ws)
    await Steps(ws, manager)(1, "bash", command=PLANT)
    assert (ws / "lib" / ".git" / "config").exists()
    result = manager.rewind(1)
    survived = (ws / "lib" / ".git").exists()
    assert survived is not protected, result.text
    assert ("lib/.git: a repository created since, removed." in result.text) is protected
    assert (ws / "lib" / "util.py").read_text() == "def util():\n    return 1\n"


async def test_a_new_folder_that_is_a_repository_loses_its_git(tmp_path: Path, ws: Path) -> None:
    manager = manager_for(tmp_path, ws)
    await Steps(ws, manager)(1, "bash", command="mkdir fresh && git init -q fresh")
    result = manager.rewind(1)
    assert not (ws / "fresh" / ".git").exists(), result.text
    assert "fresh/.git: a repository created since, removed." in result.text


@pytest.mark.parametrize("folder", ["lib", "vendor"], ids=["covered-folder", "own-folder"])
async def test_a_repository_that_was_there_before_is_never_touched(
    tmp_path: Path, ws: Path, folder: str
) -> None:
    _git("init", "-q", str(ws / folder))
    manager = manager_for(tmp_path, ws)
    await Steps(ws, manager)(1, "bash", command=f"echo y > a.txt && echo z > {folder}/z.txt")
    result = manager.rewind(1)
    assert (ws / folder / ".git" / "HEAD").exists(), result.text
    assert "created since" not in result.text
    assert (ws / "a.txt").read_text() == "alpha\n"


async def test_a_repository_holding_commits_is_named_with_its_programs_and_kept(
    tmp_path: Path, ws: Path
) -> None:
    commit = "git -C lib -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"
    manager = manager_for(tmp_path, ws)
    await Steps(ws, manager)(1, "bash", command=f"{PLANT} && {commit}")
    result = manager.rewind(1)
    assert (ws / "lib" / ".git").exists()
    assert "lib/.git (a repository created since, left as it is: it holds commits" in result.text
    assert "core.fsmonitor" in result.text, result.text


async def test_a_repository_made_outside_the_agents_steps_is_left_and_named(
    tmp_path: Path, ws: Path
) -> None:
    manager = manager_for(tmp_path, ws)
    await Steps(ws, manager)(1, "bash", command="echo y > a.txt")
    _git("init", "-q", str(ws / "lib"))  # the user, after the agent's turn
    result = manager.rewind(1)
    assert (ws / "lib" / ".git" / "HEAD").exists(), result.text
    assert "lib/.git (a repository created since, but not by the agent" in result.text
    assert (ws / "a.txt").read_text() == "alpha\n"
