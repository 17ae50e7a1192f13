"""Permission-rule attacks through the real CLI that worked once and are now stopped.

- Allow rules covering side effects: ``bash(tar -tf *)`` (list an archive) must not run a
  command via ``--checkpoint-action=exec=``; ``bash(git status*)`` must not run the
  ``core.fsmonitor`` command of a planted ``.git/config`` (a repository from an archive).
- Deny rules: ``bash(rm *)`` stops ``tar --checkpoint-action=exec='rm ...'`` and bash's
  ``mapfile -C 'rm ...'`` callback.

Each test's control runs the same command approved (``--yes``, no deny rule) and sees the effect,
so the probe can see a success.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.rules_lab import RulesLab, rules_lab

TAR_EXEC = "tar -tf a.tar --checkpoint=1 --checkpoint-action=exec='touch PWNED'"
TAR_RM = "tar -cf /dev/null README --checkpoint=1 --checkpoint-action=exec='rm victim'"
MAPFILE_RM = "mapfile -C 'rm victim' -c 1 < README"
Lab = RulesLab


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with rules_lab(tmp_path) as made:
        root = made.root
        subprocess.run(["tar", "-cf", str(root / "a.tar"), "-C", str(root), "README"], check=True)
        yield made


def _plant_fsmonitor(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with (root / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tfsmonitor = touch PWNED #\n")


def test_tar_list_allow_rule_does_not_cover_checkpoint_exec(lab: Lab) -> None:
    lab.user_config('allow = ["bash(tar -tf *)"]')
    lab.bash(TAR_EXEC)
    assert not (lab.root / "PWNED").exists()


def test_git_status_allow_rule_does_not_run_a_planted_fsmonitor(lab: Lab) -> None:
    _plant_fsmonitor(lab.root)
    lab.user_config('allow = ["bash(git status*)"]')
    lab.bash("git status")
    assert not (lab.root / "PWNED").exists()


@pytest.mark.parametrize("command", [TAR_EXEC, "git status"])
def test_control_the_same_commands_approved_do_run(lab: Lab, command: str) -> None:
    if command.startswith("git"):
        _plant_fsmonitor(lab.root)
    lab.user_config("")
    proc = lab.bash(command, "--yes")
    assert proc.returncode == 0, proc.stderr
    assert (lab.root / "PWNED").exists(), "the probe cannot see the command run"


@pytest.mark.parametrize("command", [TAR_RM, MAPFILE_RM])
def test_rm_deny_rule_is_not_bypassed(lab: Lab, command: str) -> None:
    lab.user_config('deny = ["bash(rm *)"]')
    lab.bash(command, "--yes")
    assert (lab.root / "victim").exists()


@pytest.mark.parametrize("command", [TAR_RM, MAPFILE_RM])
def test_control_without_the_deny_rule_the_file_goes(lab: Lab, command: str) -> None:
    lab.user_config("")
    proc = lab.bash(command, "--yes")
    assert proc.returncode == 0, proc.stderr
    assert not (lab.root / "victim").exists(), "the probe cannot see the rm run"
