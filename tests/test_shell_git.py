"""git parsed once (:func:`reasonix.safety.shell.git.parse_git`) and the views that read it, as
tables: git's own options and their values, the subcommand and its arguments; what the deny
side sees git run (``-c alias``, ``-c core.pager``, ``rebase -x``), what the allow side refuses,
what a git command deletes, what no snapshot undoes. No process runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.safety.shell.deletes import deleting_forms
from reasonix.safety.shell.git import GitCall, parse_git
from reasonix.safety.shell.irreversible import irreversible_reason
from reasonix.safety.shell.lexer import parse
from reasonix.safety.shell.rules import (
    allow_obstacle,
    command_forms,
    runs_commands,
    word_forms,
    written_targets,
)

PARSED: list[tuple[tuple[str | None, ...], GitCall]] = [
    (("status",), GitCall((), "status", ())),
    (("-C", "src", "log", "-3"), GitCall((("-C", "src"),), "log", ("-3",))),
    (("-c", "a=b", "log"), GitCall((("-c", "a=b"),), "log", ())),
    (("-ca=b", "log"), GitCall((("-c", "a=b"),), "log", ())),
    (("-cx", "log"), GitCall((("-c", "x"),), "log", ())),
    (("--git-dir=x", "status"), GitCall((("--git-dir", "x"),), "status", ())),
    (("--git-dir", "x", "status"), GitCall((("--git-dir", "x"),), "status", ())),
    (("--work-tree", "w", "clean"), GitCall((("--work-tree", "w"),), "clean", ())),
    (("--no-pager", "-P", "log"), GitCall((("--no-pager", None), ("-P", None)), "log", ())),
    (("--config-env", "k=V", "log"), GitCall((("--config-env", "k=V"),), "log", ())),
    (("--exec-path", "log"), GitCall((("--exec-path", None),), "log", ())),
    (("--exec-path=.", "log"), GitCall((("--exec-path", "."),), "log", ())),
    (("-C",), GitCall((("-C", None),), None, ())),
    ((), GitCall((), None, ())),
    (("--version",), GitCall((("--version", None),), None, ())),
    (("log", "-C", "x"), GitCall((), "log", ("-C", "x"))),
    ((None, "log"), GitCall((), None, (None, "log"), complete=False)),
    (("-C", "a", None), GitCall((("-C", "a"),), None, (None,), complete=False)),
    (("-C", None, "rm", "x"), GitCall((("-C", None),), "rm", ("x",))),
    (("rm", None), GitCall((), "rm", (None,))),
]


@pytest.mark.parametrize(("rest", "call"), PARSED)
def test_parse_git(rest: tuple[str | None, ...], call: GitCall) -> None:
    assert parse_git(rest) == call


def test_values_and_has() -> None:
    call = parse_git(("-c", "a=1", "-C", "x", "-c", "b=2", "log"))
    assert call.values("-c") == ["a=1", "b=2"] and call.values("-C") == ["x"]
    assert call.has("-C") and call.has("-P", "-c") and not call.has("-P")


#: git command lines and a form the deny side must see them run (None: an unknown word)
RUNS = [
    ("git -c alias.r=!rm r", ("rm",)),
    ("git -c alias.x=rm x -r src", ("git", "rm", "-r", "src")),
    ("git -c core.pager=evil log", ("evil",)),
    ("git -c CORE.PAGER=evil log", ("evil",)),
    ("git -ccore.pager=evil log", ("evil",)),
    ("git -c diff.external=evil diff", ("evil",)),
    ("git -c core.fsmonitor=evil status", ("evil",)),
    ("git rebase -x 'make test' main", ("make", "test")),
    ("git rebase --exec=evil main", ("evil",)),
    ("git filter-branch --tree-filter evil HEAD", ("evil",)),
    ("git clone -u evil x", ("evil",)),
    ("git fetch --upload-pack=evil origin", ("evil",)),
    ("git clone -c core.pager=evil x", ("evil",)),
    ("git submodule foreach evil", ("evil",)),
    ("git bisect run evil arg", ("evil", "arg")),
    ("git -C $d -c alias.l=!evil l", ("evil",)),
    ("git --config-env core.pager=X log", (None,)),
    ("git clean -fd", ("rm", "-rf", ".")),
    ("git -C sub clean -f", ("rm", "-rf", "sub")),
    ("git rm -r src", ("rm", "-r", "src")),
]


@pytest.mark.parametrize(("command", "form"), RUNS)
def test_the_deny_side_sees_what_git_runs(command: str, form: tuple[str | None, ...]) -> None:
    assert form in command_forms(command)


QUIET = ["git status", "git log --oneline", "git -C src diff", "git clean -n", "git rm --cached x"]


@pytest.mark.parametrize("command", QUIET)
def test_what_runs_nothing_else(command: str) -> None:
    forms = command_forms(command)
    assert all(f[:1] == ("git",) for f in forms), forms


GIT_DELETES = [
    (("clean", "-fdx"), [("rm", "-rf", ".")]),
    (("clean", "-n"), []),
    (("-C", "a", "-C", "b", "clean", "-f"), [("rm", "-rf", "a/b")]),
    (("--work-tree", "w", "clean", "-f", "src"), [("rm", "-rf", "w/src")]),
    (("rm", "x"), [("rm", "x")]),
    (("rm", "-r", "--cached", "x"), []),
    (("worktree", "remove", "--force", "w"), [("rm", "-rf", "w")]),
    (("worktree", "remove", "w"), []),
    ((None, "clean", "-f"), []),
    (("status",), []),
]


@pytest.mark.parametrize(("rest", "forms"), GIT_DELETES)
def test_what_git_deletes(rest: tuple[str | None, ...], forms: list[tuple[str, ...]]) -> None:
    assert deleting_forms("git", rest) == forms


ALLOW_REFUSES = [
    "git -c a=b log", "git -cA=b log", "git --config-env=a=B log", "git --exec-path=. log",
    "git --exec-path log", "git diff --output=x", "git diff --outp=x", "git diff --ext-diff",
    "git grep -O foo", "git grep -nOvim foo", "git grep --open-files-in-pager foo",
    "git clone --template=t x", "git clone -c a=b x", "git submodule update --config=a",
    "git clone -u evil x", "git archive -o x.tar HEAD", "git archive -vo x.tar HEAD",
    "git fetch --upload-pack=evil", "git push --receive-pack=evil", "git difftool --extcmd=x",
    "git cherry-pick -x HEAD", "git log --exe=x",
]  # fmt: skip
ALLOW_COVERS = [
    "git status", "git log --oneline", "git diff --stat", "git -C . status", "git show HEAD",
    "git log --exclude=x --all", "git diff --exit-code", "git grep -n foo",
]  # fmt: skip


@pytest.mark.parametrize("command", ALLOW_REFUSES)
def test_the_allow_side_refuses(command: str, tmp_path: Path) -> None:
    assert allow_obstacle(parse(command), tmp_path) is not None


@pytest.mark.parametrize("command", ALLOW_COVERS)
def test_the_allow_side_covers(command: str, tmp_path: Path) -> None:
    assert allow_obstacle(parse(command), tmp_path) is None


IRREVERSIBLE = [
    "git push --force", "git -C x push -f", "git -c a=b push --delete origin x",
    "git --git-dir=.git push origin :gone", "git stash drop", "git stash clear",
    "git reflog expire --all", "git gc --prune=now", "git prune", "git filter-repo",
    "sudo git push --force", "caffeinate -t 5 git push -f",
]  # fmt: skip
REVERSIBLE = ["git push", "git -C x push origin main", "git stash", "git gc", "git reflog"]


@pytest.mark.parametrize("command", IRREVERSIBLE)
def test_irreversible_git(command: str, tmp_path: Path) -> None:
    assert irreversible_reason(command, tmp_path)


@pytest.mark.parametrize("command", REVERSIBLE)
def test_reversible_git(command: str, tmp_path: Path) -> None:
    assert irreversible_reason(command, tmp_path) is None


#: redirections an irreversible check reads from the lexer (no regular expression)
REDIRECTS = [
    ("echo x > a", ["a"]),
    ("echo x >> a 2> b", ["a", "b"]),
    ("echo x &> a", ["a"]),
    ("echo x >| a", ["a"]),
    ("cat <> a", ["a"]),
    ("echo x > /dev/null 2>&1", []),
    ("echo x 2>/dev/stderr", []),
    ("cat < a", []),
    ("echo x >&2", []),
    ("echo x > ~/.bashrc", ["~/.bashrc"]),
]


@pytest.mark.parametrize(("command", "targets"), REDIRECTS)
def test_written_targets(command: str, targets: list[str]) -> None:
    # (the lexer reads ``&>`` as ``&`` and a command of one redirection: the same file)
    assert [t for cmd in parse(command).commands for t in written_targets(cmd)] == targets


OUTSIDE = [
    "echo x > ~/.bashrc", "echo x >> /etc/motd", "echo x &> ../../x", "ls 2> $HOME/.profile",
    "tee ~/.bashrc", "sudo cp a /etc/x", "env A=1 rm -rf ~/x", "nice -n 5 rm ~/x",
    "timeout 3 touch /etc/x", "xargs rm ~/x", "sh -c 'rm -rf /etc/x'",
]  # fmt: skip
INSIDE = [
    "echo x > a", "echo x > /dev/null", "echo x > /dev/fd/2", "echo x > /dev/tty", "rm a",
    "exec 3<>/dev/tcp/127.0.0.1/80",  # a connection, not a file (the sandbox's network rule)
    "cat a > $'x\\0y'", "rm $'a\\0b'",  # a NUL the lexer decoded: no crash
]  # fmt: skip


@pytest.mark.parametrize("command", OUTSIDE)
def test_writes_outside_the_workspace_are_irreversible(command: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert irreversible_reason(command, ws)


@pytest.mark.parametrize("command", INSIDE)
def test_writes_inside_are_not(command: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert irreversible_reason(command, ws) is None


WRAPPERS = ["sudo", "env", "xargs", "timeout", "nice", "sh", "bash", "eval", "ssh", "nohup",
            "find", "caffeinate", "strace", "source", "."]  # fmt: skip
NOT_WRAPPERS = ["ls", "cat", "git", "rm", "python3", "make", "grep"]


@pytest.mark.parametrize("name", WRAPPERS)
def test_runs_commands(name: str) -> None:
    assert runs_commands(name)


@pytest.mark.parametrize("name", NOT_WRAPPERS)
def test_does_not_run_commands(name: str) -> None:
    assert not runs_commands(name)


def test_word_forms_keep_words_as_written_and_see_through_wrappers() -> None:
    forms = word_forms(["sudo", "-u", "x", "rm", "$HOME/a"])
    assert ("rm", "$HOME/a") in forms and forms == sorted(forms, key=lambda f: tuple(map(str, f)))
