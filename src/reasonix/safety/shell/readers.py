"""Programs that only read, and the proof that a command line does nothing else.

A command is **proved read-only** when :func:`~reasonix.safety.shell.rules.allow_obstacle`
finds nothing, and every simple command is a program of :data:`READERS` (or a git subcommand of
:data:`GIT_READS`) given only options its row knows to read, no glob could expand to an option,
and the file ``PATH`` finds for a bare name is outside the workspace with no relative entry
before it. Git commands that compute diffs are not proved (the attributes' drivers run). The
README's "Permissions" section lists the cases.
"""

from __future__ import annotations

import fnmatch
import functools
import glob as globlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from reasonix.safety.git_repository import user_filter_drivers
from reasonix.safety.shell.effects import effects
from reasonix.safety.shell.git import READING_OPTIONS, parse_git
from reasonix.safety.shell.lexer import Script
from reasonix.safety.shell.programs import READERS, prefix_of, row_obstacle
from reasonix.safety.shell.rules import Step, allow_obstacle, step_of

__all__ = [
    "GIT_READS",
    "proved_read_only",
    "read_only_obstacle",
    "snapshot_skippable",
]


def _git_plain(args: Sequence[str]) -> str | None:
    """A subcommand that only reads whatever it is given (the allow side has refused the
    options that write or run: ``--output``, ``--ext-diff``, ``-O``, their abbreviations)."""
    return None


#: options that make ``git log`` compute diffs: the diff and textconv drivers that the files'
#: attributes (the repository's ``.gitattributes``) select from the configuration then run
#: (-G/-S, the pickaxe, compare each commit's diff through the textconv driver)
_DIFF_LONGS = (
    "--patch", "--stat", "--numstat", "--shortstat", "--dirstat", "--cumulative", "--summary",
    "--patch-with-stat", "--patch-with-raw", "--function-context", "--word-diff",
    "--color-words", "--color-moved", "--textconv", "--unified", "--check", "--cc", "--raw",
    "--compact-summary", "--full-diff", "--diff-merges", "--remerge-diff", "--dd", "--binary",
    "--pickaxe-regex", "--pickaxe-all", "--find-object",
)  # fmt: skip
_DIFF_SHORTS = frozenset("puWLcmUGS")


def _git_log(args: Sequence[str]) -> str | None:
    """``git log`` without the options that show diffs (``git show`` and ``git diff`` always
    do, so they are not in the table)."""
    for a in args:
        if a == "--":
            break
        key = a.split("=", 1)[0]
        if a.startswith("--") and prefix_of(key, _DIFF_LONGS):
            return f"git log {key} computes diffs (which run configured drivers)"
        if a.startswith("-") and not a.startswith("--") and set(a[1:]) & _DIFF_SHORTS:
            return f"git log {a} computes diffs (which run configured drivers)"
    return _git_plain(args)


def _git_without(
    *refused: str, exact: frozenset[str] = frozenset()
) -> Callable[[Sequence[str]], str | None]:
    """A subcommand that only reads unless given one of the long options ``refused`` (or an
    abbreviation of one that is not itself in ``exact``): those run the textconv or filter
    drivers the files' attributes select."""

    def check(args: Sequence[str]) -> str | None:
        for a in args:
            if a == "--":
                break
            key = a.split("=", 1)[0]
            if a.startswith("--") and key not in exact and prefix_of(key, refused):
                return f"{key} runs the textconv or filter drivers the files' attributes select"
        return None

    return check


def _names(word: str, shorts: str, longs: tuple[str, ...]) -> bool:
    """Whether option ``word`` is one of ``longs`` (or an abbreviation) or a cluster with one
    of ``shorts``."""
    if word.startswith("--"):
        return prefix_of(word.split("=", 1)[0], longs)
    return word.startswith("-") and bool(set(word[1:]) & set(shorts))


_CLEANS = "runs the clean program of a filter driver the git configuration defines"


def _git_cleans(shorts: str = "", longs: tuple[str, ...] = ()) -> Callable[..., str | None]:
    """A subcommand that reads the work tree's files through their filter's ``clean`` program
    (always, or with these options): not proved while a filter driver is configured."""

    def check(args: Sequence[str]) -> str | None:
        given = (not shorts and not longs) or any(_names(a, shorts, longs) for a in args)
        return _CLEANS if given and user_filter_drivers() else None

    return check


def _listing(
    shorts: str, flags: frozenset[str], valued: frozenset[str]
) -> Callable[..., str | None]:
    """``git branch``/``git tag``: listing only, with these options; names only after
    ``-l``/``--list`` (without it a name creates one)."""

    def check(args: Sequence[str]) -> str | None:
        listing = False
        names = False
        skip = False
        for a in args:
            if skip:
                skip = False
                continue
            key = a.split("=", 1)[0]
            if key in valued:
                skip = "=" not in a
            elif a in flags:
                listing = listing or a == "--list"
            elif a.startswith("-") and not a.startswith("--") and set(a[1:]) <= set(shorts):
                listing = listing or "l" in a or "n" in a
            elif a.startswith("-"):
                return f"{a} is not known to only list"
            else:
                names = True
        if names and not listing:
            return "a name without --list creates it"
        return None

    return check


_LIST_VALUED = frozenset(
    {"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
     "--format", "--abbrev"}
)  # fmt: skip
_LIST_FLAGS = frozenset(
    {"--list", "--all", "--remotes", "--verbose", "--show-current", "--color", "--no-color",
     "--column", "--no-column", "--ignore-case", "--omit-empty"}
)  # fmt: skip


def _first_is(
    *allowed: str,
    bare: bool = False,
    options: bool = False,
    then: Callable[[Sequence[str]], str | None] = _git_plain,
) -> Callable[..., str | None]:
    """A subcommand with subcommands of its own: only these read (``git stash list``), the rest
    of the words checked by ``then`` (``git log``'s check for those that take its options)."""

    def check(args: Sequence[str]) -> str | None:
        if not args:
            return None if bare else "without a subcommand it changes something"
        first = args[0]
        if options and first.startswith("-"):
            return then(args)
        if first in allowed:
            return then(args[1:])
        return f"{first!r} is not known to only read"

    return check


_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list"})
#: (``--global``, ``--system``, ``--includes`` and no scope at all read the user's and the
#: system's files, outside the workspace: a token in ``http.extraheader``, a credential URL)
_CONFIG_OPTIONS = frozenset(
    {"--local", "--worktree", "--show-origin", "--show-scope", "--name-only", "-z", "--null",
     "--no-includes", "--bool", "--int", "--path"}
)  # fmt: skip
_CONFIG_VALUED = frozenset({"--type", "--default", "--file", "-f", "--blob"})
#: the scopes that read the repository's own configuration only (a file's name is a word the
#: outside-the-workspace check judges)
_CONFIG_SCOPES = frozenset({"--local", "--worktree", "--file", "-f", "--blob"})


def _git_config(args: Sequence[str]) -> str | None:
    """``git config --local --get x``, ``git config --local --list``, ``git config get
    --local x``."""
    reads = bool(args) and args[0] in ("get", "list")
    scoped = False
    skip = False
    for a in args[1:] if reads else args:
        if skip:
            skip = False
            continue
        key = a.split("=", 1)[0]
        scoped = scoped or key in _CONFIG_SCOPES
        if key in _CONFIG_VALUED:
            skip = "=" not in a
        elif a in _CONFIG_READS:
            reads = True
        elif a.startswith("-") and a not in _CONFIG_OPTIONS:
            return f"git config {a} is not known to only read the repository's configuration"
    if not reads:
        return "git config without --get or --list may set a value"
    return None if scoped else "git config without --local reads the user's own files too"


def _git_remote(args: Sequence[str]) -> str | None:
    if all(a in ("-v", "--verbose") for a in args):
        return None
    if args[:1] == ["get-url"]:
        return None
    return "git remote changes remotes or reaches them"


_GIT_PLAIN = (
    "rev-parse", "ls-tree", "rev-list", "shortlog", "merge-base", "name-rev", "show-ref",
    "for-each-ref", "count-objects", "show-branch", "cherry", "check-ignore", "check-attr",
    "version",
)  # fmt: skip
#: git subcommands that only read, each with what it must not be given.
GIT_READS: dict[str, Callable[[Sequence[str]], str | None]] = {
    **dict.fromkeys(_GIT_PLAIN, _git_plain),
    "log": _git_log,
    "cat-file": _git_without("--textconv", "--filters"),
    "grep": _git_without("--textconv", exact=frozenset({"--text"})),
    "status": _git_cleans(),
    "ls-files": _git_cleans("m", ("--modified",)),
    "describe": _git_cleans(longs=("--dirty", "--broken")),
    "branch": _listing("arvli", _LIST_FLAGS, _LIST_VALUED),
    "tag": _listing("lni0123456789", _LIST_FLAGS, _LIST_VALUED),
    "stash": _first_is("list", then=_git_log),
    "worktree": _first_is("list"),
    "reflog": _first_is("show", bare=True, options=True, then=_git_log),
    "remote": _git_remote,
    "config": _git_config,
}


#: git subcommands that only read but compute diffs: the diff and textconv drivers the files'
#: attributes select may run, so they are not proved read-only; a snapshot may skip them
_GIT_DIFFS = (
    "show", "diff", "blame", "annotate", "diff-tree", "diff-files", "diff-index", "range-diff",
    "whatchanged",
)  # fmt: skip


#: what a snapshot may skip besides :data:`GIT_READS`: diffs, which change no file
_SNAPSHOT_GIT: dict[str, Callable[[Sequence[str]], str | None]] = {
    **dict.fromkeys((*_GIT_DIFFS, "log"), _git_plain),
    "stash": _first_is("list", "show"),
}


def _git_obstacle(args: Sequence[str], confined: bool = True) -> str | None:
    call = parse_git(tuple(args))
    for option, value in call.options:
        if option not in READING_OPTIONS and not (option == "-C" and value is not None):
            return f"git {option} is not known to only read"
    if call.sub is None:
        return "git without a subcommand"
    args = [a for a in call.args if a is not None]
    for a in args:
        if prefix_of(a.split("=", 1)[0], ("--show-signature",)) or "%G" in a:
            return f"git {call.sub} {a} checks signatures (gpg runs, and writes the user's home)"
    check = GIT_READS.get(call.sub)
    if not confined:
        check = _SNAPSHOT_GIT.get(call.sub, check)
    if check is None:
        return f"git {call.sub} is not known to only read"
    return check(args)


def reader_obstacle(name: str, args: Sequence[str], confined: bool = True) -> str | None:
    """Why ``name args…`` is not a program that only reads, or None (its row in
    :data:`~reasonix.safety.shell.programs.READERS`, or git's in :data:`GIT_READS`).
    ``confined=False``: a snapshot's question, where git commands that compute diffs count."""
    if name == "git":
        return _git_obstacle(args, confined)
    row = READERS.get(name)
    if row is None:
        return f"{name} is not known to only read"
    return row_obstacle(name, row, args)


#: Folders a program may be named from besides its bare name.
_SYSTEM_BIN = ("/usr/bin/", "/bin/")
_GLOB_START = "*?["


#: Names the shell runs itself, whatever ``PATH`` holds.
_BUILTINS = frozenset(
    {"echo", "printf", "pwd", "test", "[", "true", "false", "type", "cd", "pushd", "popd", ":"}
)


def _path_obstacle(name: str, folders: Sequence[Path], path: str | None = None) -> str | None:
    """Why the bare program ``name`` may be one of the workspace's (``folders``: the workspace
    and its added folders, real paths): the first match on ``PATH`` (``path``, default the one
    commands get, ours) lies in them, or a relative entry comes first. None: a program from
    outside, or none at all."""
    if name in _BUILTINS:
        return None
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    for entry in entries:
        if not os.path.isabs(entry):
            return f"PATH holds the relative folder {entry or '.'!r}: {name} may be the workspace's"
        candidate = os.path.join(entry, name)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        real = Path(os.path.realpath(candidate))
        if any(real.is_relative_to(f) for f in folders):
            return f"{name} is found on PATH inside the workspace, a program of its own"
        return None
    return None


def _command_obstacle(
    step: Step, workspace: Path, confined: bool, folders: Sequence[Path] = ()
) -> str | None:
    words = step.command.argv
    first = words[0]
    if "/" in first and not first.startswith(_SYSTEM_BIN):
        return f"{first} is a program of its own"
    for item in step.command.words[1:]:
        word, glob = item.value, item.glob
        if glob and word[:1] in _GLOB_START and _expands_to_option(word, workspace):
            return f"the pattern {word!r} may expand to an option"
        if glob and _may_match_dotdot(word):
            return f"the pattern {word!r} may match '..' (bash before 5.2, dash), out of the folder"
    for form in step.as_written:
        tokens = [t for t in form if t is not None]
        if len(tokens) != len(form) or not tokens:
            return "the command runs something known only at run time"
        name = tokens[0].rsplit("/", 1)[-1]
        if "/" not in tokens[0] and (found := _path_obstacle(name, folders or (workspace,))):
            return found
        if name == "git" and confined and _below_a_repository(workspace):
            return "git in a subfolder of a repository reads all of it (HEAD:path, :/)"
        problem = reader_obstacle(name, tokens[1:], confined)
        if problem:
            return problem
    return None


@functools.lru_cache(maxsize=64)
def _below_a_repository(workspace: Path) -> bool:
    """Whether ``workspace`` is a folder inside a repository whose top is above it: git's
    object names (``HEAD:other/file``) and pathspecs (``:/``, ``:(top)``) then name files of
    the rest of the repository, outside the workspace, whatever the words look like."""
    if (workspace / ".git").exists():
        return False
    return any((parent / ".git").exists() for parent in workspace.parents)


def _may_match_dotdot(pattern: str) -> bool:
    """Whether a component of the glob ``pattern`` that starts with a dot (or, to be safe, a
    bracket) can match ``..`` (``.?``, ``.[.]``, ``.*``, ``[.][.]``): shells before bash 5.2's
    globskipdots (and dash) expand it to the parent folder; Python's glob, which judges the
    word, never yields ``..``."""
    return any(
        part.startswith((".", "[")) and part != ".." and fnmatch.fnmatchcase("..", part)
        for part in pattern.split("/")
    )


def _expands_to_option(pattern: str, workspace: Path) -> bool:
    """Whether the glob ``pattern`` (starting with a wildcard) names a file starting with
    ``-`` in the workspace; too many matches to check count as one."""
    for k, match in enumerate(globlib.iglob(pattern, root_dir=workspace)):
        if k >= 2000 or match.startswith("-"):
            return True
    return False


def read_only_obstacle(
    script: Script, workspace: Path, roots: Sequence[Path] = (), *, confined: bool = True
) -> str | None:
    """Why ``script`` is not proved read-only (see the module docstring), or None.
    ``confined=False`` leaves out where it reads (what a snapshot needs to know)."""
    if not script.commands:
        return "there is no command"
    problem = allow_obstacle(script, workspace, roots, confined=confined)
    if problem:
        return problem
    moves = any(c.words and c.words[0].value in ("cd", "pushd", "popd") for c in script.commands)
    base = Path(os.path.realpath(workspace))
    for cmd in script.commands:
        if not cmd.words:
            return "a redirection alone opens a file"
        if moves and any(w.glob and w.value[:1] in _GLOB_START for w in cmd.words):
            return "a pattern after cd cannot be checked"
        folders = (base, *(Path(os.path.realpath(r)) for r in roots))
        problem = _command_obstacle(step_of(cmd), base, confined, folders)
        if problem:
            return problem
    return None


def proved_read_only(command: str, workspace: Path, roots: Sequence[Path] = ()) -> bool:
    """Whether ``command`` is proved to only read inside the workspace."""
    return read_only_obstacle(effects(command).script, workspace, roots) is None


def snapshot_skippable(command: str, workspace: Path | None = None) -> bool:
    """Whether ``command`` is proved to change nothing, wherever it reads: no snapshot is
    needed before it. Every :func:`proved_read_only` command is skippable."""
    where = workspace if workspace is not None else Path.cwd()
    return read_only_obstacle(effects(command).script, where, confined=False) is None
