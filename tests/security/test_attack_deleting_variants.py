"""Variants against deny rules over ``rm`` after the deleting-forms table (issue 24's class 8),
through the real ``reasonix run --yes`` with ``deny = ["bash(rm *)"]`` in the user's config.

Worked on main when written, fixed in this module's commit:

- ``git -c alias.r=rm r -r src``: the alias was expanded without the words after it, so the
  rule saw ``git rm`` with no operand (``rm *`` needs one); the same for a shell alias
  ``git -c alias.x='!rm' x -rf src``, whose words git appends too;
- ``git worktree remove --force wt``: deletes the linked worktree with whatever uncommitted and
  untracked work it holds, and was no deleting form;
- ``dd if=/dev/null of=notes.txt``: replaces the file's contents like ``truncate -s 0``, which
  is one;
- ``toybox rm`` (``busybox rm`` was seen through) and ``fish -c``/``tcsh -c``/``csh -c``/``yash
  -c`` (only the POSIX-like shells were read): unit rows, as those programs are rarely
  installed.

Tried and stopped already: ``find -exec /bin/rm``, ``-execdir``, ``-ok``/``-okdir``, ``find -L .
-delete``, ``rsync`` with an option after its operands, ``git -c alias.n=clean n -f``,
``command``/``builtin``/``doas``/``time``/``ionice``/``taskset``/``chrt``/``flock``/
``watch``/``parallel`` wrappers. Left alone on purpose: ``cp``/``mv`` over a file (the
destination's old content goes, but a rule about ``rm`` blocking every copy would be worse),
``make clean`` and ``npm run clean`` (what a program reads in turn), ``perl``/``python`` (the
README says rules cannot see inside interpreters). The control runs the CLI commands with no
deny rule and sees each file gone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reasonix.safety.shell.rules import command_forms, rule_matches
from tests.security.support import Attack, Lab, lab, record

__all__ = ["lab"]

#: (command, what it deletes, relative to the workspace)
DELETERS = [
    ("git -c alias.r=rm r -q aliasrm.txt", "aliasrm.txt"),
    ("git -c alias.x='!rm' x shellalias.txt", "shellalias.txt"),
    ("git worktree remove --force wt", "wt/draft.txt"),
    ("dd if=/dev/null of=ddme.txt", "ddme.txt"),
]


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _plant(root: Path) -> None:
    for _, rel in DELETERS[:2] + DELETERS[3:]:
        (root / rel).write_text("the user's work\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "work")
    _git(root, "worktree", "add", "-q", "wt")
    (root / "wt" / "draft.txt").write_text("uncommitted work in the linked worktree\n")


def _gone(root: Path, rel: str) -> bool:
    path = root / rel
    return not path.exists() or path.read_text() == ""


def _attacks() -> list[Attack]:
    return [Attack(cmd, "bash", {"command": cmd}) for cmd, _ in DELETERS]


@pytest.mark.slow
def test_a_deny_rule_on_rm_refuses_the_variants(lab: Lab, request: pytest.FixtureRequest) -> None:
    _plant(lab.root)
    lab.write_user_config('[permissions]\ndeny = ["bash(rm *)"]\n')
    outcome = lab.attack(_attacks(), "--yes")
    worked = 0
    for (cmd, rel), result in zip(DELETERS, outcome.results, strict=False):
        worked += _gone(lab.root, rel)
        assert not _gone(lab.root, rel), (cmd, result)
        assert "bash(rm *)" in result, (cmd, result)
    assert len(outcome.results) >= len(DELETERS)
    record(request, "deny rules: deleting forms", len(DELETERS), worked)


@pytest.mark.slow
def test_control_without_the_rule_the_files_really_go(lab: Lab) -> None:
    _plant(lab.root)
    outcome = lab.attack(_attacks(), "--yes")
    for (cmd, rel), result in zip(DELETERS, outcome.results, strict=False):
        assert _gone(lab.root, rel), (cmd, result)


#: (command, rules it must match, rules it must not match)
FORMS = [
    ("git -c alias.r=rm r -r src", ["rm -r src", "rm *"], ["rm -rf *"]),
    ("git -c ALIAS.R=rm R src", ["rm src"], []),
    ("git -c alias.x='!rm' x -rf src", ["rm -rf src"], []),
    ("git -c alias.r=rm r $x", ["rm *"], []),
    ("git -c alias.s=status s", [], ["rm *"]),
    ("git worktree remove --force wt", ["rm -rf wt"], []),
    ("git -C a worktree remove -f wt", ["rm -rf a/wt"], []),
    ("git worktree remove wt", [], ["rm *"]),
    ("dd if=/dev/zero of=work.txt bs=1 count=0", ["rm -f work.txt"], []),
    ("dd if=a of=b conv=notrunc", [], ["rm *"]),
    ("dd if=a", [], ["rm *"]),
    ("toybox rm -rf x", ["rm -rf x"], []),
    ("fish -c 'rm x'", ["rm x"], []),
    ("tcsh -c 'rm -rf x'", ["rm -rf x"], []),
    ("csh -c 'rm x'", ["rm x"], []),
    ("yash -c 'rm x'", ["rm x"], []),
]


@pytest.mark.parametrize(("command", "match", "miss"), FORMS)
def test_variant_forms_match_the_rm_rules_that_describe_them(
    command: str, match: list[str], miss: list[str]
) -> None:
    forms = command_forms(command)
    for rule in match:
        assert rule_matches(rule, forms), (command, rule, sorted(map(str, forms)))
    for rule in miss:
        assert not rule_matches(rule, forms), (command, rule, sorted(map(str, forms)))
