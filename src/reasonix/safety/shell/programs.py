"""The tables of programs, one row per program: :data:`READERS` (how a reading program takes its
options: the read-only proof accepts only the options a row knows, :func:`row_obstacle`; the
allow side refuses those a row says write, :func:`writing_obstacle`) and :data:`PROGRAMS` (what
a program does besides reading). A long option's unambiguous prefix counts as the option.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "PROGRAMS",
    "READERS",
    "Program",
    "Reader",
    "prefix_of",
    "program",
    "row_obstacle",
    "writing_obstacle",
    "written_operands",
]


@dataclass(frozen=True, slots=True)
class Reader:
    """How a program that only reads takes its options. ``shorts``/``longs``: the options known
    to only read (None: every one the program has); ``writes``/``writes_long``: the options that
    write or run something; ``valued``/``valued_longs``: those whose value may be the next word
    (a short one takes the rest of its word when something follows it); ``attached``: short
    options whose value can only be attached; ``operands``: at most this many operands;
    ``operand``: what each operand must look like; ``follows``/``follows_words``: the options
    that make a recursive reader follow symbolic links (a link in the workspace may point out
    of it, and the words alone do not show where recursion goes); ``reads_named``: the long
    options that make it read files named somewhere else than the line."""

    shorts: str | None = None
    longs: frozenset[str] | None = None
    writes: str = ""
    writes_long: tuple[str, ...] = ()
    valued: str = ""
    valued_longs: frozenset[str] = frozenset()
    attached: str = ""
    operands: int | None = None
    operand: Callable[[str], bool] | None = None
    follows: str = ""
    follows_words: tuple[str, ...] = ()
    reads_named: tuple[str, ...] = ()


#: ``--files0-from``: the names of the files to read come from a file (or stdin), so no word of
#: the line shows where it reads
_FILES0 = ("--files0-from",)
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
    follows="R",
    follows_words=("--dereference-recursive",),
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
#: cannot see); long options by their full names only, the scripts themselves read by the allow
#: side's own getopt-like reading of sed's options (``-ne SCRIPT``, ``-l N SCRIPT``)
_SED_LONGS = frozenset(
    {"--expression", "--quiet", "--silent", "--regexp-extended", "--null-data", "--separate",
     "--posix", "--debug", "--line-length", "--sandbox", "--unbuffered", "--zero-terminated",
     "--version"}
)  # fmt: skip
_SED = Reader(
    writes="i",
    longs=_SED_LONGS,
    valued="el",
    valued_longs=frozenset({"--expression", "--line-length"}),
)

#: diff: its recursion (``-r``) follows symbolic links (a committed ``docs -> ../outside``)
#: unless ``--no-dereference`` is given; a recursive diff is not proved either way
_DIFF = Reader(follows="r", follows_words=("--recursive",), valued="xXIFSCUDLW")

#: programs that only read whatever options they are given
_PLAIN = (
    "cat", "tac", "nl", "head", "tail", "cut", "paste", "tr", "rev", "column", "od",
    "hexdump", "strings", "basename", "dirname", "realpath", "readlink", "stat", "df",
    "cmp", "comm", "pwd", "echo", "true", "false", ":", "whoami", "id", "uname",
    "printenv", "which", "type", "jq", "seq", "nproc", "md5sum", "sha1sum", "sha224sum",
    "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "cd", "pushd", "popd",
)  # fmt: skip

#: Programs that only read, and how each takes its options (see the module docstring).
READERS: dict[str, Reader] = {
    **dict.fromkeys(_PLAIN, _ANY),
    # these: the allow side's own checks (sed -i and e/w/r commands, awk system(), find -exec
    # and -delete) refuse their forms that write or run
    "sed": _SED,
    "diff": _DIFF,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _AWK),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": Reader(
        writes_long=("--pre", "--hostname-bin"),
        valued="eEfgjmMtTrdABC",
        follows="L",
        follows_words=("--follow",),
    ),
    "find": Reader(follows="L", follows_words=("-follow",)),
    "ls": Reader(follows="L", follows_words=("--dereference",)),
    "du": Reader(follows="L", follows_words=("--dereference",), reads_named=_FILES0),
    "wc": Reader(reads_named=_FILES0),
    "printf": Reader(writes="v"),
    "test": Reader(writes="v"),
    "[": Reader(writes="v"),
    "sort": Reader(
        writes="o",
        writes_long=("--output", "--compress-program"),
        valued="kStT",
        reads_named=_FILES0,
    ),
    "tree": Reader(writes="oR", writes_long=("--output",), valued="LPI", follows="l"),
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


def prefix_of(key: str, dangerous: Iterable[str]) -> bool:
    """Whether long option ``key`` is one of ``dangerous`` or an abbreviation of one."""
    return len(key) > 2 and any(d.startswith(key) or key == d for d in dangerous)


def _long_obstacle(name: str, row: Reader, word: str) -> str | None:
    key = word.split("=", 1)[0]
    if prefix_of(key, row.writes_long):
        return f"{name} {key} writes or runs something"
    if prefix_of(key, row.reads_named):
        return f"{name} {key} reads files no word of the line names"
    if prefix_of(key, row.follows_words):
        return f"{name} {key} follows symbolic links, maybe out of the workspace"
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
        if ch in row.follows:
            return f"{name} -{ch} follows symbolic links, maybe out of the workspace", False
        if row.shorts is not None and ch not in row.shorts:
            return f"{name} -{ch} is not known to only read", False
        if ch in row.attached:
            return None, False
        if ch in row.valued:
            return None, k == len(letters) - 1
    return None, False


def row_obstacle(name: str, row: Reader, args: Sequence[str], strict: bool = True) -> str | None:
    """Why ``name args…`` does more than read by its row; ``strict=False`` reports only what
    writes or changes something (not an option the row does not know)."""
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
        problem, takes_next = _option_obstacle(name, row, word)
        if problem and (strict or "writes" in problem):
            return problem
        i += takes_next
    if row.operands is not None and operands > row.operands:
        return f"{name} with {operands} operands writes or changes something"
    return None


def _option_obstacle(name: str, row: Reader, word: str) -> tuple[str | None, bool]:
    if word in row.follows_words:  # find's -follow: a word of one dash
        return f"{name} {word} follows symbolic links, maybe out of the workspace", False
    if word.startswith("--"):
        return _long_obstacle(name, row, word), "=" not in word and word in row.valued_longs
    return _short_obstacle(name, row, word)


def writing_obstacle(name: str, args: Sequence[str]) -> str | None:
    """Why a program of :data:`READERS` writes or changes something with these arguments, or
    None (also for a program not in the table)."""
    row = READERS.get(name)
    return row_obstacle(name, row, args, strict=False) if row is not None else None


#: which operands a program writes or deletes: every one, every one after the first (a mode or
#: an owner comes first), or only the last (the destination)
Operands = Literal["", "all", "after-first", "last"]


@dataclass(frozen=True, slots=True)
class Program:
    """What a program does besides reading: the operands it writes (``writes``; ``creates``
    when it only makes them or touches their times, never changing what is in them), whether it
    reaches another machine (``off_host``), what else it changes (``changes``: processes,
    services...), whether it runs code it is given (``runs_code``: an interpreter), and
    whether its second word names what it does (``subcommands``: ``git status``, ``npm
    test``), and what it does with the files its words name (``names``: ``"read"`` it only
    reads them, so an allow rule may cover it naming our own configuration or ``.git/``;
    ``"none"`` its words are text, never files, so where they point is not checked; ``""``
    it may change them)."""

    writes: Operands = ""
    creates: bool = False
    off_host: bool = False
    changes: str = ""
    runs_code: bool = False
    subcommands: bool = False
    names: Literal["", "read", "none"] = ""

    @property
    def acts(self) -> bool:
        """Whether every use of it deserves its own approval."""
        return bool((self.writes and not self.creates) or self.off_host or self.changes)


_WRITES_ALL = Program(writes="all")
_WRITES_AFTER_FIRST = Program(writes="after-first")
_WRITES_LAST = Program(writes="last")
_OFF_HOST = Program(off_host=True)
_INTERPRETER = Program(runs_code=True)
_SUBCOMMANDS = Program(subcommands=True)

#: interpreters: they run whatever code they are given (on stdin, in a file or an argument)
_INTERPRETERS = (
    "python", "python3", "python2", "node", "perl", "ruby", "php", "lua", "Rscript",
    "osascript", "pwsh", "powershell",
)  # fmt: skip
#: programs whose second word names what they do (``git status``, ``npm test``, ``make lint``)
_TOOLS_WITH_SUBCOMMANDS = (
    "git", "npm", "pnpm", "yarn", "cargo", "go", "pip", "pip3", "uv", "poetry", "pipenv",
    "pdm", "hatch", "tox", "nox", "conda", "make", "just", "gh", "kubectl", "helm",
    "terraform", "dotnet", "mvn", "gradle", "rustup", "brew", "apt", "apt-get", "dnf",
    "pacman", "bundle", "rake", "mix", "composer", "cmake", "ctest",
)  # fmt: skip

#: programs that only read the files they name (``less``, ``more`` and ``[[`` are not proved
#: read-only, :data:`READERS`, but never change what they name either)
_READ_NAMED = (
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ls", "wc", "diff",
    "stat", "file", "test", "[", "[[", "cut", "sort", "uniq", "nl", "od", "xxd", "hexdump",
    "md5sum", "sha256sum", "sha1sum", "find", "tree", "du", "realpath", "readlink", "basename",
    "dirname", "jq", "awk", "sed", "tr", "column", "cmp", "comm",
)  # fmt: skip
#: programs whose words are text, never files
_TEXT_ONLY = ("echo", "printf", "true", "false", ":", "pwd", "whoami")

#: What each program does (one row per program; see :class:`Program`).
PROGRAMS: dict[str, Program] = {
    **dict.fromkeys(_READ_NAMED, Program(names="read")),
    **dict.fromkeys(_TEXT_ONLY, Program(names="none")),
    **dict.fromkeys(
        ("rm", "rmdir", "unlink", "shred", "srm", "wipe", "truncate", "tee", "mv"), _WRITES_ALL
    ),
    **dict.fromkeys(("touch", "mkdir"), Program(writes="all", creates=True)),
    **dict.fromkeys(("chmod", "chown", "chgrp", "setfacl", "chattr"), _WRITES_AFTER_FIRST),
    **dict.fromkeys(("cp", "ln", "install"), _WRITES_LAST),
    **dict.fromkeys(("rsync", "scp"), Program(writes="last", off_host=True)),
    "dd": Program(changes="files named by of="),
    "mkfs": Program(changes="file systems"),
    **dict.fromkeys(("curl", "wget", "nc", "ncat", "socat"), _OFF_HOST),
    **dict.fromkeys(("kill", "pkill", "killall"), Program(changes="processes")),
    "crontab": Program(changes="scheduled jobs"),
    "systemctl": Program(changes="services"),
    **dict.fromkeys(("docker", "podman"), Program(changes="containers", subcommands=True)),
    **dict.fromkeys(_INTERPRETERS, _INTERPRETER),
    **dict.fromkeys(("deno", "bun"), Program(runs_code=True, subcommands=True)),
    **dict.fromkeys(_TOOLS_WITH_SUBCOMMANDS, _SUBCOMMANDS),
}

_NOTHING = Program()


def program(name: str) -> Program:
    """The row of program ``name`` (an empty one for a program of no row)."""
    return PROGRAMS.get(name, _NOTHING)


def written_operands(words: list[str]) -> list[str]:
    """The files one command (its words as written) writes or deletes through its operands,
    by its program's row (``dd of=``, ``sed -i`` and ``find -delete`` by their options)."""
    name = words[0].rsplit("/", 1)[-1]
    args = [a for a in words[1:] if not a.startswith("-")]
    writes = program(name).writes
    if writes == "all":
        return args
    if writes == "after-first":
        return args[1:]
    if writes == "last":
        return args[-1:]
    if name == "dd":
        return [a[3:] for a in words[1:] if a.startswith("of=")]
    if name == "sed" and any(a.startswith(("-i", "--in-place")) for a in words[1:]):
        scripted = any(a in ("-e", "-f") or a.startswith(("--expression", "--file")) for a in words)
        return args if scripted else args[1:]
    if name == "find" and any(a in ("-delete", "-exec", "-execdir") for a in words):
        return [a for a in words[1:] if not a.startswith(("-", "(", ")", "!", "{"))][:1]
    if name == "tar" and _tar_extracts(words[1:]):
        return _values(words[1:], "-C", "--directory")  # where it unpacks
    if name == "unzip":
        return _values(words[1:], "-d", "--exdir")
    return []


def _tar_extracts(args: list[str]) -> bool:
    """Whether tar unpacks: ``-x``/``--extract``/``--get``, in a cluster (``-xzf``) or the old
    style first word without a dash (``xf``)."""
    if args and not args[0].startswith("-") and "x" in args[0]:
        return True
    return any(
        a in ("--extract", "--get") or (a.startswith("-") and not a.startswith("--") and "x" in a)
        for a in args
    )


def _values(args: list[str], short: str, long: str) -> list[str]:
    """The values of option ``short`` (next word, or attached: ``-dDIR``) and ``long`` (``=``
    or the next word) among ``args``."""
    found = []
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            found.append(args[i + 1])
        elif a.startswith(long + "="):
            found.append(a.split("=", 1)[1])
        elif a.startswith(short) and len(a) > len(short) and not a.startswith("--"):
            found.append(a[len(short) :])
    return found
