"""Programs that only read, and the proof that a command line does nothing else.

A command is **proved read-only** when the line can be analysed, hides nothing (no ``$(...)``,
no variable, no assignment in front), writes no file through a redirection, reads only inside
the workspace, and every simple command in it is a program of :data:`READERS` (or a read-only
git subcommand, :data:`GIT_READS`) called with options its row knows to only read: ``ls -la``,
``cat README.md | head -50``, ``git status``, ``git log``, ``rg x``, ``wc -l *.py``. Anything
else is not proved: a wrapper that runs another command (``env``, ``xargs``, ``sh -c``), an
option that writes or runs (``sort -o``, ``tree -o``, ``file -C``, ``find -exec``/``-delete``,
``rg --pre``, ``git --output``, ``git -c``, ``git -p``), an operand that changes something
(``hostname foo``, ``date 0101``, ``git branch new``), an option the row does not know, a glob
that could expand to an option (a file named ``-delete``), a git repository whose own
configuration names a program (:mod:`reasonix.safety.git_repository`), a git command that
computes diffs (``git diff``, ``git show``, ``git log -p``: the diff and textconv drivers the
files' attributes select run). The checks the allow
side already makes (:func:`reasonix.safety.shell_rules.allow_obstacle`) come first; the rows here
add what a program must not be given to count as reading only.

GNU programs accept any unambiguous prefix of a long option (``sort --out=x`` is ``--output``):
a long option that is a prefix of one that writes counts as that one.
"""

from __future__ import annotations

import glob as globlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reasonix.safety.shell_lexer import Script, parse
from reasonix.safety.shell_rules import _unwrap, allow_obstacle

__all__ = [
    "GIT_READS",
    "READERS",
    "Reader",
    "proved_read_only",
    "read_only_obstacle",
    "snapshot_skippable",
]


@dataclass(frozen=True, slots=True)
class Reader:
    """How a program that only reads takes its options. ``shorts``/``longs``: the options known
    to only read (None: every one the program has); ``writes``/``writes_long``: the options that
    write or run something; ``valued``/``valued_longs``: those whose value may be the next word
    (a short one takes the rest of its word when something follows it); ``attached``: short
    options whose value can only be attached; ``operands``: at most this many operands;
    ``operand``: what each operand must look like."""

    shorts: str | None = None
    longs: frozenset[str] | None = None
    writes: str = ""
    writes_long: tuple[str, ...] = ()
    valued: str = ""
    valued_longs: frozenset[str] = frozenset()
    attached: str = ""
    operands: int | None = None
    operand: Callable[[str], bool] | None = None


_ANY = Reader()
_GREP_LONGS = frozenset(
    {"--extended-regexp", "--fixed-strings", "--basic-regexp", "--perl-regexp", "--regexp",
     "--file", "--ignore-case", "--no-ignore-case", "--word-regexp", "--line-regexp",
     "--null-data", "--no-messages", "--invert-match", "--version", "--help", "--max-count",
     "--byte-offset", "--line-number", "--line-buffered", "--with-filename", "--no-filename",
     "--label", "--only-matching", "--quiet", "--silent", "--binary-files", "--text",
     "--directories", "--devices", "--recursive", "--dereference-recursive", "--include",
     "--exclude", "--exclude-from", "--exclude-dir", "--files-without-match",
     "--files-with-matches", "--count", "--initial-tab", "--null", "--before-context",
     "--after-context", "--context", "--group-separator", "--no-group-separator", "--color",
     "--colour", "--binary"}
)  # fmt: skip
_GREP_VALUED = frozenset(
    {"--regexp", "--file", "--max-count", "--label", "--binary-files", "--directories",
     "--devices", "--include", "--exclude", "--exclude-from", "--exclude-dir",
     "--before-context", "--after-context", "--context", "--group-separator"}
)  # fmt: skip
_GREP = Reader(
    longs=_GREP_LONGS,
    valued="efmABCdD",
    valued_longs=_GREP_VALUED,
)
_HOSTNAME_LONGS = frozenset(
    {"--alias", "--all-fqdns", "--domain", "--fqdn", "--long", "--ip-address",
     "--all-ip-addresses", "--short", "--yp", "--nis", "--version", "--help"}
)  # fmt: skip
_HOSTNAME = Reader(shorts="aAdfiIsyV", longs=_HOSTNAME_LONGS, operands=0)

#: awk: a program and variables only (``-f``, ``-i``, ``-l``, ``-E`` load code; gawk's ``-o``,
#: ``-p`` and ``-d`` write files), the program itself checked by the allow side
_AWK = Reader(
    shorts="vFe",
    longs=frozenset({"--assign", "--field-separator", "--source", "--version"}),
    valued="vFe",
    valued_longs=frozenset({"--assign", "--field-separator", "--source"}),
)

#: sed: scripts given as they are (``-i`` edits in place, ``-f`` reads a script the allow side
#: cannot see; an abbreviated ``--expression`` would hide the script from it)
_SED = Reader(
    writes="i",
    longs=frozenset(
        {
            "--expression",
            "--quiet",
            "--silent",
            "--regexp-extended",
            "--null-data",
            "--separate",
            "--posix",
            "--debug",
            "--line-length",
            "--sandbox",
            "--unbuffered",
            "--zero-terminated",
            "--version",
        }
    ),
    valued="el",
    valued_longs=frozenset({"--expression", "--line-length"}),
)

#: programs that only read whatever options they are given
_PLAIN = (
    "ls", "cat", "tac", "nl", "head", "tail", "wc", "cut", "paste", "tr", "rev", "column", "od",
    "hexdump", "strings", "basename", "dirname", "realpath", "readlink", "stat", "du", "df",
    "cmp", "comm", "diff", "pwd", "echo", "true", "false", ":", "whoami", "id", "uname",
    "printenv", "which", "type", "jq", "seq", "nproc", "md5sum", "sha1sum", "sha224sum",
    "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "find", "cd", "pushd", "popd",
)  # fmt: skip

#: Programs that only read, and how each takes its options (see the module docstring).
READERS: dict[str, Reader] = {
    **dict.fromkeys(_PLAIN, _ANY),
    # these: the allow side's own checks (sed -i and e/w/r commands, awk system(), find -exec
    # and -delete) refuse their forms that write or run
    "sed": _SED,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _AWK),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": Reader(writes_long=("--pre", "--hostname-bin"), valued="eEfgjmMtTrdABC"),
    "printf": Reader(writes="v"),
    "test": Reader(writes="v"),
    "[": Reader(writes="v"),
    "sort": Reader(writes="o", writes_long=("--output", "--compress-program"), valued="kStT"),
    "tree": Reader(writes="oR", writes_long=("--output",), valued="LPI"),
    "file": Reader(writes="C", writes_long=("--compile",), valued="mFfeP"),
    "date": Reader(
        writes="s",
        writes_long=("--set",),
        valued="dfr",
        valued_longs=frozenset({"--date", "--file", "--reference"}),
        attached="I",
        operand=lambda word: word.startswith("+"),
    ),
    "hostname": _HOSTNAME,
    "uniq": Reader(valued="fsw", operands=1),
    "xxd": Reader(valued="cglosn", operands=1),
}

#: git's own options a read-only git command may be given (``-C`` takes a folder).
_GIT_GLOBAL = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
     "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects"}
)  # fmt: skip
#: long options of git's reading subcommands that write or run (a prefix counts: git accepts
#: abbreviated long options)
_GIT_WRITES_LONG = (
    "--output", "--ext-diff", "--open-files-in-pager", "--exec", "--upload-pack",
    "--receive-pack", "--extcmd", "--edit",
)  # fmt: skip


def _git_plain(args: Sequence[str]) -> str | None:
    """A subcommand that only reads whatever it is given, but for the options that write."""
    for a in args:
        if a == "--":
            return None
        if a.startswith("--") and _prefix_of(a.split("=", 1)[0], _GIT_WRITES_LONG):
            return f"git {a.split('=', 1)[0]} writes or runs something"
        if a.startswith("-O"):
            return f"git {a} runs a pager"
    return None


#: options that make ``git log`` compute diffs: the diff and textconv drivers that the files'
#: attributes (the repository's ``.gitattributes``) select from the configuration then run
_DIFF_LONGS = (
    "--patch", "--stat", "--numstat", "--shortstat", "--dirstat", "--cumulative", "--summary",
    "--patch-with-stat", "--patch-with-raw", "--function-context", "--word-diff",
    "--color-words", "--color-moved", "--textconv", "--unified", "--check", "--cc", "--raw",
    "--compact-summary", "--full-diff", "--diff-merges", "--remerge-diff", "--dd", "--binary",
)  # fmt: skip


def _git_log(args: Sequence[str]) -> str | None:
    """``git log`` without the options that show diffs (``git show`` and ``git diff`` always
    do, so they are not in the table)."""
    for a in args:
        if a == "--":
            break
        key = a.split("=", 1)[0]
        if a.startswith("--") and _prefix_of(key, _DIFF_LONGS):
            return f"git log {key} computes diffs (which run configured drivers)"
        if a.startswith("-") and not a.startswith("--") and set(a[1:]) & set("puWLcmU"):
            return f"git log {a} computes diffs (which run configured drivers)"
    return _git_plain(args)


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
    *allowed: str, bare: bool = False, options: bool = False
) -> Callable[..., str | None]:
    """A subcommand with subcommands of its own: only these read (``git stash list``)."""

    def check(args: Sequence[str]) -> str | None:
        if not args:
            return None if bare else "without a subcommand it changes something"
        first = args[0]
        if options and first.startswith("-"):
            return _git_plain(args)
        if first in allowed:
            return _git_plain(args[1:])
        return f"{first!r} is not known to only read"

    return check


_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list"})
_CONFIG_OPTIONS = frozenset(
    {"--local", "--global", "--system", "--worktree", "--show-origin", "--show-scope",
     "--name-only", "-z", "--null", "--includes", "--no-includes", "--bool", "--int", "--path"}
)  # fmt: skip
_CONFIG_VALUED = frozenset({"--type", "--default", "--file", "-f", "--blob"})


def _git_config(args: Sequence[str]) -> str | None:
    """``git config --get x``, ``git config --list``, ``git config get x``."""
    reads = bool(args) and args[0] in ("get", "list")
    skip = False
    for a in args[1:] if reads else args:
        if skip:
            skip = False
            continue
        key = a.split("=", 1)[0]
        if key in _CONFIG_VALUED:
            skip = "=" not in a
        elif a in _CONFIG_READS:
            reads = True
        elif a.startswith("-") and a not in _CONFIG_OPTIONS:
            return f"git config {a} is not known to only read"
    return None if reads else "git config without --get or --list may set a value"


def _git_remote(args: Sequence[str]) -> str | None:
    if all(a in ("-v", "--verbose") for a in args):
        return None
    if args[:1] == ["get-url"]:
        return None
    return "git remote changes remotes or reaches them"


_GIT_PLAIN = (
    "status", "rev-parse", "ls-files", "ls-tree", "cat-file", "rev-list", "describe",
    "shortlog", "merge-base", "name-rev", "show-ref", "for-each-ref", "count-objects", "grep",
    "show-branch", "cherry", "check-ignore", "check-attr", "version",
)  # fmt: skip
#: git subcommands that only read, each with what it must not be given.
GIT_READS: dict[str, Callable[[Sequence[str]], str | None]] = {
    **dict.fromkeys(_GIT_PLAIN, _git_plain),
    "log": _git_log,
    "branch": _listing("arvli", _LIST_FLAGS, _LIST_VALUED),
    "tag": _listing("lni0123456789", _LIST_FLAGS, _LIST_VALUED),
    "stash": _first_is("list"),
    "worktree": _first_is("list"),
    "reflog": _first_is("show", bare=True, options=True),
    "remote": _git_remote,
    "config": _git_config,
}


def _prefix_of(key: str, dangerous: Sequence[str]) -> bool:
    """Whether long option ``key`` is one of ``dangerous`` or an abbreviation of one."""
    return len(key) > 2 and any(d.startswith(key) or key == d for d in dangerous)


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
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            i += 2
            continue
        if args[i] not in _GIT_GLOBAL:
            return f"git {args[i]} is not known to only read"
        i += 1
    if i >= len(args):
        return "git without a subcommand"
    check = GIT_READS.get(args[i])
    if not confined:
        check = _SNAPSHOT_GIT.get(args[i], check)
    if check is None:
        return f"git {args[i]} is not known to only read"
    return check(args[i + 1 :])


def _long_obstacle(name: str, row: Reader, word: str) -> str | None:
    key = word.split("=", 1)[0]
    if _prefix_of(key, row.writes_long):
        return f"{name} {key} writes or runs something"
    if row.longs is not None and key not in row.longs:
        return f"{name} {key} is not known to only read"
    return None


def _short_obstacle(name: str, row: Reader, word: str) -> tuple[str | None, bool]:
    """Why a cluster of short options does more than read, and whether the next word is the
    value of its last option."""
    letters = word[1:]
    for k, ch in enumerate(letters):
        if ch in row.writes:
            return f"{name} -{ch} writes or runs something", False
        if row.shorts is not None and ch not in row.shorts:
            return f"{name} -{ch} is not known to only read", False
        if ch in row.attached:
            return None, False
        if ch in row.valued:
            return None, k == len(letters) - 1
    return None, False


def reader_obstacle(name: str, args: Sequence[str], confined: bool = True) -> str | None:
    """Why ``name args…`` is not a program that only reads, or None (its row in
    :data:`READERS`, or git's in :data:`GIT_READS`). ``confined=False``: a snapshot's
    question, where git commands that compute diffs count too."""
    if name == "git":
        return _git_obstacle(args, confined)
    row = READERS.get(name)
    if row is None:
        return f"{name} is not known to only read"
    operands = 0
    i = 0
    ended = False
    while i < len(args):
        word = args[i]
        i += 1
        if ended or word == "-" or not word.startswith("-"):
            operands += 1
            if row.operand is not None and not row.operand(word):
                return f"{name} {word!r} changes something"
            continue
        if word == "--":
            ended = True
            continue
        if word.startswith("--"):
            problem = _long_obstacle(name, row, word)
            if problem:
                return problem
            i += "=" not in word and word in row.valued_longs
            continue
        problem, takes_next = _short_obstacle(name, row, word)
        if problem:
            return problem
        i += takes_next
    if row.operands is not None and operands > row.operands:
        return f"{name} with {operands} operands writes or changes something"
    return None


#: Folders a program may be named from besides its bare name.
_SYSTEM_BIN = ("/usr/bin/", "/bin/")
_GLOB_START = "*?["


def _command_obstacle(
    words: Sequence[str], globs: Sequence[bool], workspace: Path, confined: bool
) -> str | None:
    first = words[0]
    if "/" in first and not first.startswith(_SYSTEM_BIN):
        return f"{first} is a program of its own"
    for word, glob in zip(words[1:], globs[1:], strict=True):
        if glob and word[:1] in _GLOB_START and _expands_to_option(word, workspace):
            return f"the pattern {word!r} may expand to an option"
    for form in _unwrap(tuple(words), 0):
        tokens = [t for t in form if t is not None]
        if len(tokens) != len(form) or not tokens:
            return "the command runs something known only at run time"
        problem = reader_obstacle(tokens[0].rsplit("/", 1)[-1], tokens[1:], confined)
        if problem:
            return problem
    return None


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
        globs = [w.glob for w in cmd.words]
        if moves and any(w.glob and w.value[:1] in _GLOB_START for w in cmd.words):
            return "a pattern after cd cannot be checked"
        problem = _command_obstacle([w.value for w in cmd.words], globs, base, confined)
        if problem:
            return problem
    return None


def proved_read_only(command: str, workspace: Path, roots: Sequence[Path] = ()) -> bool:
    """Whether ``command`` is proved to only read inside the workspace."""
    return read_only_obstacle(parse(command), workspace, roots) is None


def snapshot_skippable(command: str, workspace: Path | None = None) -> bool:
    """Whether ``command`` is proved to change nothing, wherever it reads: no snapshot is
    needed before it. Every :func:`proved_read_only` command is skippable."""
    where = workspace if workspace is not None else Path.cwd()
    return read_only_obstacle(parse(command), where, confined=False) is None
