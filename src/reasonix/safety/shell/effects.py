"""What a shell command does, computed once from its text: the record every view reads.

:func:`effects` parses a line once (:mod:`~reasonix.safety.shell.lexer`) and keeps, for the
line and for each simple command in it, what it *runs* (the forms, wrappers and ``sh -c``
text seen through: :mod:`~reasonix.safety.shell.rules`), the files it *writes* (redirections,
and the operands of the programs whose row in :data:`PROGRAMS` says they write them), what it
*reaches off-host*, and why part of it is known only at run time (``unknown``). The record
depends on the text alone, so it is cached per text; what depends on the file system (where a
glob or a path lands, a repository's configuration) is asked of the views with a workspace.

The views over it: the deny side matches rules against :attr:`Effects.runs`; the allow side
(:func:`~reasonix.safety.shell.rules.allow_obstacle`) and the read-only proof
(:mod:`~reasonix.safety.shell.readers`) read :attr:`Effects.script`; the irreversible list
(:mod:`~reasonix.safety.shell.irreversible`) judges each step's writes; the proposed session
rules (``reasonix.app.approvals``) read :func:`program` and :func:`broad_rule_ok`.

:data:`PROGRAMS` is the one table of what a program does besides reading and running other
commands (those are :data:`~reasonix.safety.shell.programs.READERS` and
:func:`~reasonix.safety.shell.rules.runs_commands`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from reasonix.safety.patterns import normalize_command
from reasonix.safety.shell.lexer import Command, Script, parse
from reasonix.safety.shell.rules import (
    HARMLESS_DEVICES,
    Form,
    runs_commands,
    script_forms,
    simple_forms,
    word_forms,
    written_targets,
)

__all__ = [
    "PROGRAMS",
    "Effects",
    "Program",
    "Step",
    "broad_rule_ok",
    "effects",
    "program",
    "written_operands",
]

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
    test``)."""

    writes: Operands = ""
    creates: bool = False
    off_host: bool = False
    changes: str = ""
    runs_code: bool = False
    subcommands: bool = False

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

#: What each program does besides reading (one row per program; see :class:`Program`).
PROGRAMS: dict[str, Program] = {
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


def broad_rule_ok(name: str) -> bool:
    """Whether a rule naming program ``name`` (and its subcommand) may cover its every use:
    not for a program whose every use acts (writes, deletes, reaches another machine, changes
    processes or services), runs code given to it, or runs another command."""
    row = program(name)
    if row.acts or runs_commands(name):
        return False
    return not (row.runs_code and not row.subcommands)


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


@dataclass(frozen=True, slots=True)
class Step:
    """One simple command of a line: the command as parsed; ``text`` as written (whitespace
    collapsed); ``forms``, what it may run (an unknown word None); ``as_written``, the same
    with every word as written (``$HOME/x`` kept); ``redirected``, the files its
    redirections write; ``writes``, every file it writes (redirections and operands);
    ``off_host``, the programs in it that reach another machine."""

    command: Command
    text: str
    forms: frozenset[Form]
    as_written: tuple[Form, ...]
    redirected: tuple[str, ...]
    writes: tuple[str, ...]
    off_host: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Effects:
    """What a command line does (see the module docstring). ``runs``: every command it may
    run, what deny rules are matched against; ``redirects``: whether it writes a file through
    a redirection (``/dev/null`` and ``2>&1`` do not count); ``unknown``: why part of it is
    known only at run time or could not be analysed (empty when it is all known)."""

    script: Script
    steps: tuple[Step, ...]
    runs: frozenset[Form]
    redirects: bool
    unknown: tuple[str, ...]

    @property
    def parts(self) -> list[str]:
        """The simple commands that have words, as written."""
        return [s.text for s in self.steps if s.command.words and s.text]

    @property
    def opaque(self) -> bool:
        """Whether some of it is hidden (a substitution) or could not be analysed."""
        return bool(self.unknown)

    @property
    def writes(self) -> tuple[str, ...]:
        return tuple(w for s in self.steps for w in s.writes)

    @property
    def off_host(self) -> tuple[str, ...]:
        return tuple(p for s in self.steps for p in s.off_host)


@functools.lru_cache(maxsize=512)
def effects(command: str) -> Effects:
    """The :class:`Effects` of ``command``, computed once per text."""
    script = parse(command)
    steps = tuple(_step(cmd) for cmd in script.commands)
    unknown = script.problems + (("a part runs inside a substitution",) * script.substitutions)
    return Effects(
        script=script,
        steps=steps,
        runs=frozenset(script_forms(script)),
        redirects=any(
            r.writes and (r.target is None or r.target.value not in HARMLESS_DEVICES)
            for cmd in script.commands
            for r in cmd.redirects
        ),
        unknown=unknown,
    )


def _step(cmd: Command) -> Step:
    as_written = tuple(word_forms([w.value for w in cmd.words])) if cmd.words else ()
    redirected = tuple(written_targets(cmd))
    writes = list(redirected)
    off_host = []
    for form in as_written:
        words = [t for t in form if t is not None]
        if words:
            writes.extend(written_operands(words))
            name = words[0].rsplit("/", 1)[-1]
            if program(name).off_host:
                off_host.append(name)
    return Step(
        command=cmd,
        text=normalize_command(cmd.text),
        forms=frozenset(simple_forms(cmd)),
        as_written=as_written,
        redirected=redirected,
        writes=tuple(dict.fromkeys(w for w in writes if w not in HARMLESS_DEVICES)),
        off_host=tuple(off_host),
    )
