"""A deny rule written over ``rm`` against the programs that delete files themselves, through
the real ``reasonix run --yes`` (the sandbox on: what is deleted is the workspace's own files).

Worked before the fix in this module's commit (``deny = ["bash(rm *)"]`` in the user's config,
and the files really went): ``find DIR -delete``, ``git clean -f``, ``git rm``, ``shred -u``,
``truncate -s 0``, ``unlink``, ``tar --remove-files`` (and ``rsync --delete`` where rsync is
installed). Stopped already: ``find -exec rm``, which runs ``rm`` itself. The control runs the
same commands with no deny rule and sees each file gone.

The unit rows check the same table from both sides: each deleting form matches the ``rm`` rules
that describe it (and not those that do not: ``shred`` is no ``rm -rf``), and irreversible
detection, reading the same forms, says a form is irreversible exactly when what it deletes is
outside the workspace (before, ``git -C /elsewhere clean -f``, ``git -C /elsewhere rm``,
``rsync --remove-source-files /elsewhere/x`` and ``tar --remove-files /elsewhere`` were not).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reasonix.safety.shell.irreversible import irreversible_reason
from reasonix.safety.shell.rules import command_forms, rule_matches
from tests.security.support import Attack, Lab, lab, record

__all__ = ["lab"]

#: (command, what it deletes, relative to the workspace)
DELETERS = [
    ("find finddir -delete", "finddir/a.txt"),
    ("find . -name execrm.txt -exec rm {} ';'", "execrm.txt"),
    ("git clean -f", "untracked.txt"),
    ("git rm -q gitrm.txt", "gitrm.txt"),
    ("shred -u shredme.txt", "shredme.txt"),
    ("truncate -s 0 trunc.txt", "trunc.txt"),
    ("unlink unlinkme.txt", "unlinkme.txt"),
    ("tar -cf out.tar --remove-files tarme", "tarme/file.txt"),
]
if shutil.which("rsync"):
    DELETERS.append(("rsync -a --delete rsrc/ rdst/", "rdst/extra.txt"))


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _plant(root: Path) -> None:
    for _, rel in DELETERS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("the user's work\n")
    (root / "rsrc").mkdir(exist_ok=True)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "reset", "-q", "untracked.txt")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "work")


def _gone(root: Path, rel: str) -> bool:
    path = root / rel
    return not path.exists() or path.read_text() == ""


def _attacks() -> list[Attack]:
    return [Attack(cmd, "bash", {"command": cmd}) for cmd, _ in DELETERS]


@pytest.mark.slow
def test_a_deny_rule_on_rm_refuses_every_deleting_form(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    _plant(lab.root)
    lab.write_user_config('[permissions]\ndeny = ["bash(rm *)"]\n')
    outcome = lab.attack(_attacks(), "--yes")
    worked = 0
    for (cmd, rel), result in zip(DELETERS, outcome.results, strict=False):
        worked += _gone(lab.root, rel)
        assert not _gone(lab.root, rel), (cmd, result)
        assert "Permission denied" in result and "bash(rm *)" in result, (cmd, result)
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
    ("find . -delete", ["rm *", "rm -rf *", "rm -fr ."], []),
    ("find src -name '*.pyc' -delete", ["rm -rf src"], ["rm -rf lib"]),
    ("find . -name x $action", ["rm *", "rm -rf /etc"], []),  # an unknown word may be -delete
    ("find $dir -name x", [], ["rm *"]),  # an unknown start folder deletes nothing
    ("find . -type f -print", [], ["rm *"]),
    ("git clean -fdx", ["rm *", "rm -rf *"], []),
    ("git clean --force -d -- build", ["rm -rf build"], ["rm -rf src"]),
    ("git clean -fn", [], ["rm *"]),
    ("git clean --dry-run", [], ["rm *"]),
    ("git -C sub clean -f", ["rm -rf sub"], []),
    ("git rm -r old", ["rm -r old", "rm *"], ["rm -rf *"]),
    ("git rm --cached x", [], ["rm *"]),
    ("git status", [], ["rm *"]),
    ("rsync -a --delete a/ b/", ["rm -rf b/"], ["rm -rf a/"]),
    ("rsync -av --delete-after --exclude .git a/ b/", ["rm -rf b/"], []),
    ("rsync -a --del a/ b/", ["rm -rf b/"], []),
    ("rsync -a --remove-source-files a/x b/", ["rm a/x"], ["rm -rf *"]),
    ("rsync -a --delay-updates a/ b/", [], ["rm *"]),
    ("shred -u -n 3 key.pem", ["rm -f key.pem", "rm *"], ["rm -rf *", "rm -f 3"]),
    ("shred secrets.db", ["rm *"], []),
    ("truncate -s 0 app.log", ["rm -f app.log"], ["rm -f 0"]),
    ("truncate --size=0 app.log", ["rm -f app.log"], []),
    ("unlink f", ["rm f"], []),
    ("srm -r private", ["rm -rf private"], []),
    ("tar -czf out.tgz --remove-files src", ["rm -rf src"], ["rm -rf out.tgz"]),
    ("tar czf out.tgz src --remove-files", ["rm -rf src"], ["rm -rf out.tgz"]),
    ("tar -czf out.tgz src", [], ["rm *"]),
    ("tar -czf out.tgz --remove src", ["rm -rf src"], []),  # GNU tar takes abbreviations
    ("tar -czf out.tgz --rem src", ["rm -rf src"], []),
    ("tar -czf out.tgz --recursion src", [], ["rm *"]),
    ("git -c alias.c='clean -fdx' c", ["rm -rf *"], []),
    ("find . -name '*.log' -exec shred -u {} +", ["rm -f *"], []),
    ("find . -name x -dele'te'", ["rm -rf ."], []),
    ("git clean -f -e keep.txt", ["rm -rf ."], ["rm -rf keep.txt"]),
    ("sudo -u me find / -delete", ["rm -rf /"], []),
    ("bash -c 'git clean -fd'", ["rm -rf *"], []),
    ("xargs shred -u < list", ["rm -f *"], []),
]


@pytest.mark.parametrize(("command", "match", "miss"), FORMS)
def test_deleting_forms_match_the_rm_rules_that_describe_them(
    command: str, match: list[str], miss: list[str]
) -> None:
    forms = command_forms(command)
    for rule in match:
        assert rule_matches(rule, forms), (command, rule, sorted(map(str, forms)))
    for rule in miss:
        assert not rule_matches(rule, forms), (command, rule, sorted(map(str, forms)))


#: Deleting forms with what they delete outside the workspace (``{out}``) or inside it.
IRREVERSIBLE = [
    "find {where} -delete",
    "git -C {where} clean -fd",
    "shred -u {where}/key",
    "truncate -s 0 {where}/log",
    "unlink {where}/f",
    "tar -cf x.tar --remove-files {where}",
    "rsync -a --delete src/ {where}/",
    "rsync -a --remove-source-files {where}/x dest/",
    "git -C {where} rm -rq x",
]


def test_an_unsure_find_is_denied_but_not_called_irreversible(tmp_path: Path) -> None:
    """``find /usr/include -name *.h``: the glob is known only when it runs (a file named
    ``-delete`` would make it one), so rules about rm match; but nothing certain is deleted
    outside the workspace, so it is not asked about as irreversible in every mode."""
    command = "find /usr/include -name *.h"
    assert rule_matches("rm -rf *", command_forms(command))
    assert irreversible_reason(command, tmp_path) is None
    assert irreversible_reason("find /usr/include -name x -delete", tmp_path) is not None


@pytest.mark.parametrize("template", IRREVERSIBLE)
def test_irreversible_exactly_when_the_deleted_is_outside(template: str, tmp_path: Path) -> None:
    workspace = tmp_path / "home" / "ws"
    outside = tmp_path / "home" / "other"
    for folder in (workspace / "inner", outside):
        folder.mkdir(parents=True)
    inside = irreversible_reason(template.format(where="inner"), workspace)
    assert inside is None, (template, inside)
    far = irreversible_reason(template.format(where=str(outside)), workspace)
    assert far is not None and "outside the workspace" in far, template
