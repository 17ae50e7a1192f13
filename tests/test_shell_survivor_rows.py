"""Rows for the readings the mutation sampling of issue 26 (``scripts/mutants.py``) found no
table row for: each row pins one verdict a wrong line in :mod:`reasonix.safety.shell` would
change (docs/mutation.md lists the mutants and which of them change nothing). No process is
run but git; milliseconds a row."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.app.approvals import proposed_session_rules
from reasonix.safety.permissions import ApprovalRequest, Mode
from reasonix.safety.shell.effects import effects
from reasonix.safety.shell.irreversible import irreversible_reason
from reasonix.safety.shell.lexer import parse
from reasonix.safety.shell.readers import proved_read_only
from reasonix.safety.shell.rules import allow_obstacle, rule_matches


@pytest.fixture(autouse=True)
def _own_git_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    config = tmp_path_factory.mktemp("gitconfig") / "config"
    config.write_text("")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", str(config))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        yield


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a").write_text("x\n")
    return root


#: command -> the files it writes (where tar and unzip unpack: the value of -C/-d, whole)
WRITES: dict[str, tuple[str, ...]] = {
    "tar -xf a.tar -C out": ("out",),  # only the word after -C, not every next word
    "tar -xf a.tar -Cout": ("out",),
    "tar -xf a.tar --directory=out=1": ("out=1",),  # the value keeps its own '='
    "tar -tf a.tar -C out": (),  # listing unpacks nothing
    "unzip a.zip -d out": ("out",),
}


@pytest.mark.parametrize("command", WRITES)
def test_writes(command: str) -> None:
    assert effects(command).writes == WRITES[command]


#: command -> proved read-only (what the snapshot before a step may skip)
READ_ONLY: dict[str, bool] = {
    # the value of --contains is skipped, the word after it is a name again: it creates one
    "git branch --contains HEAD newname": False,
    "git branch --contains HEAD": True,
    "git branch --contains HEAD --list newname": True,
}


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only(command: str, repo: Path) -> None:
    assert proved_read_only(command, repo) is READ_ONLY[command]


#: command -> a deny rule ``bash(rm *)`` matches it (a command known only at run time, read
#: from stdin or a variable, may be rm; a script file named on the line is not read)
DENY_SEES: dict[str, bool] = {
    "source ./x.sh": False,
    ". ./x.sh": False,
    "source /dev/stdin": True,
    ". /dev/fd/0": True,
    "source $f": True,
    "source": True,
}


@pytest.mark.parametrize("command", DENY_SEES)
def test_deny_rule_sees(command: str) -> None:
    assert rule_matches("rm *", effects(command).runs) is DENY_SEES[command]


#: command -> an allow rule naming its program may cover it (no allow obstacle)
ALLOWED: dict[str, bool] = {
    # sed's long options are read by their unique abbreviation, as sed reads them
    "sed --quie 1p a": True,
    "sed --expr=1p a": True,
    "sed --in-pl s/a/b/ a": False,
    "sed --s 1p a": False,  # --sandbox or --separate: ambiguous
    # a substitution whose delimiter is missing or a backslash cannot be read
    "sed s a": False,
    "sed 's\\a\\b\\' a": False,
    "sed s/a/b/ a": True,
}


@pytest.mark.parametrize("command", ALLOWED)
def test_allowed(command: str, repo: Path) -> None:
    assert (allow_obstacle(parse(command), repo) is None) is ALLOWED[command]


#: command -> no snapshot can undo it (the floor asks first)
IRREVERSIBLE: dict[str, bool] = {
    "git branch -d -f topic": True,  # -d with --force: an unmerged branch goes
    "git branch --del --force topic": True,
    "git branch -d topic": False,
    "git branch -f topic": False,
    "cd; rm -rf x": True,  # a bare cd goes home: x is outside the workspace
    "rm -rf x": False,
    "gh api -X DELETE repos/o/r": True,
    "gh api --method=DELETE repos/o/r": True,
    "gh api repos/o/r": False,
    "gh api --method==DELETE repos/o/r": False,  # the value is read whole: "=DELETE"
}


@pytest.mark.parametrize("command", IRREVERSIBLE)
def test_irreversible(command: str, repo: Path) -> None:
    assert (irreversible_reason(command, repo) is not None) is IRREVERSIBLE[command]


#: command -> the rm form deny rules see in it (rsync --delete removes what the destination
#: has that the source lacks: its last operand; options after the operands are no operand)
DELETE_FORMS: dict[str, tuple[str, ...] | None] = {
    "rsync -a --delete src/ dst/ -v": ("rm", "-rf", "dst/"),
    "rsync --del src/ dst/": ("rm", "-rf", "dst/"),
    "rsync -a src/ dst/": None,
    "shred -u -- -f": ("rm", "-f", "-f"),  # after --, a word with a dash is a file
    "git worktree remove wt --force": ("rm", "-rf", "wt"),
    "dd if=a of=b conv=fsync": ("rm", "-f", "b"),  # only conv=notrunc keeps b's contents
    "dd if=a of=b conv=notrunc": None,
    # tar --remove-files: what it packs goes, not the archive (-f's value, or old-style czf's)
    "tar czf out.tgz --remove-files dir": ("rm", "-rf", "dir"),
    "tar -czf out.tgz --remove-files dir": ("rm", "-rf", "dir"),
    "tar -c --remove-files a b": ("rm", "-rf", "a", "b"),
}


@pytest.mark.parametrize("command", DELETE_FORMS)
def test_delete_forms(command: str) -> None:
    removes = [form for form in effects(command).runs if form[:1] == ("rm",)]
    expected = DELETE_FORMS[command]
    assert removes == ([expected] if expected else [])


#: command -> the rules "allow for this session" proposes for it
PROPOSED: dict[str, tuple[str, ...]] = {
    "echo $HOME > out": (),  # its exact rule names a word known only at run time
    "nice -n 5 make test": ("bash(nice -n 5 make test)",),  # a wrapper: exact, not nice *
}


@pytest.mark.parametrize("command", PROPOSED)
def test_proposed(command: str) -> None:
    request = ApprovalRequest(
        "bash", "bash", {"command": command}, command, "r", (f"bash({command})",), Mode.ASK
    )
    assert proposed_session_rules(request) == PROPOSED[command]
