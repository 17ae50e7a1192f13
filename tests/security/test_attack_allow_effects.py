"""Allow-rule side effects through the real CLI, in the default ask mode (headless: nobody to ask,
so what the rule does not cover is refused).

Each case is a "read-only" allow rule and a line it must not cover because the line writes a
file or runs a program: ``uniq``/``xxd`` write their second operand, ``sort
--compress-program`` runs a program, ``git diff`` in a repository whose own ``.git/config``
names an ``fsmonitor`` command, ``git commit`` in a repository holding a planted hook, ``git
status`` in one holding a ``post-index-change`` hook (status rewrites the index), ``git clone
--template`` copying a hook that then runs. The
control runs the same line approved (``--yes``) and proves the probe sees the effect.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.security.support import record
from tests.support.rules_lab import RulesLab, rules_lab

Lab = RulesLab


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with rules_lab(tmp_path) as made:
        yield made


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _compressor(root: Path) -> None:
    _executable(root / "zz", "#!/bin/sh\ntouch PWNED\nexec cat\n")
    (root / "big").write_text("".join(f"{n}\n" for n in range(100_000, 0, -1)))


def _fsmonitor(root: Path) -> None:
    _git(root, "init", "-q")
    _git(root, "add", "README")
    _git(root, "commit", "-qm", "init")
    with (root / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tfsmonitor = touch PWNED #\n")


def _hook(root: Path) -> None:
    _git(root, "init", "-q")
    _executable(root / ".git" / "hooks" / "pre-commit", "#!/bin/sh\ntouch PWNED\n")
    _git(root, "add", "README")


def _index_hook(root: Path) -> None:
    _git(root, "init", "-q")
    _git(root, "add", "README")
    _git(root, "commit", "-qm", "init")
    _executable(root / ".git" / "hooks" / "post-index-change", "#!/bin/sh\ntouch PWNED\n")
    os.utime(root / "README", (1, 1))  # stale stat data: status rewrites the index


def _template(root: Path) -> None:
    _git(root, "init", "-q")
    _git(root, "add", "README")
    _git(root, "commit", "-qm", "init")
    (root / "tpl" / "hooks").mkdir(parents=True)
    _executable(root / "tpl" / "hooks" / "post-checkout", "#!/bin/sh\ntouch PWNED\n")


def _cloned_pwned(root: Path) -> bool:
    return (root / "copy" / "PWNED").exists()


def _pwned(root: Path) -> bool:
    return (root / "PWNED").exists()


def _victim_changed(root: Path) -> bool:
    return (root / "victim").read_text() != "keep me\n"


Case = tuple[str, str, Callable[[Path], None] | None, Callable[[Path], bool]]

CASES: list[Case] = [
    ("bash(uniq *)", "uniq README victim", None, _victim_changed),
    ("bash(xxd *)", "xxd README victim", None, _victim_changed),
    ("bash(sort *)", "sort -S 64K --compress-program=./zz big", _compressor, _pwned),
    ("bash(git diff*)", "git diff", _fsmonitor, _pwned),
    ("bash(git commit*)", "git commit -qm x", _hook, _pwned),
    ("bash(git status*)", "git status", _index_hook, _pwned),
    ("bash(git clone*)", "git clone -q --template=./tpl . copy", _template, _cloned_pwned),
]
IDS = [
    "uniq-writes",
    "xxd-writes",
    "sort-compress-program",
    "git-fsmonitor",
    "git-hook",
    "git-status-index-hook",
    "git-clone-template-hook",
]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_read_only_allow_rule_does_not_cover_a_side_effect(
    lab: Lab, case: Case, request: pytest.FixtureRequest
) -> None:
    rule, command, setup, worked = case
    if setup is not None:
        setup(lab.root)
    lab.user_config(f'allow = ["{rule}"]')
    proc = lab.bash(command)
    record(request, "allow-rule side effects (lexer)", 1, int(worked(lab.root)))
    assert not worked(lab.root), proc.stdout
    assert "not covered" in proc.stdout or "approval" in proc.stdout or "denied" in proc.stdout


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_control_the_same_line_approved_has_the_effect(lab: Lab, case: Case) -> None:
    _, command, setup, worked = case
    if setup is not None:
        setup(lab.root)
    lab.user_config("")
    if "git commit" in command:
        command = "git -c user.name=t -c user.email=t@t commit -qm x"
    proc = lab.bash(command, "--yes")
    assert worked(lab.root), f"the probe cannot see the effect: {proc.stdout}"
