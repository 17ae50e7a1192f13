"""What a shell command does, computed once from its text: the record every view reads.

:func:`effects` parses a line once (:mod:`~reasonix.safety.shell.lexer`) and keeps, for the
line and for each simple command in it (a :class:`~reasonix.safety.shell.rules.Step`), what it
*runs* (the forms, wrappers and ``sh -c`` text seen through), the files it *writes*
(redirections, and the operands of the programs whose row in :data:`PROGRAMS` says they write
them), what it *reaches off-host*, what its forms do that a rule naming the program would not
show (``side_effects``: ``find -exec``, ``sort -o``, ``git -c``, ``tar --to-command``), and why
part of it is known only at run time (``unknown``). The record depends on the text alone, so
it is cached per text (and each step per simple command); what depends on the file system
(where a glob or a path lands, a repository's configuration) is asked of the views with a
workspace.

The views over it: the deny side matches rules against :attr:`Effects.runs`; the allow side
(:func:`~reasonix.safety.shell.rules.allow_obstacle`) and the read-only proof
(:mod:`~reasonix.safety.shell.readers`) read each step's forms and side effects; the
irreversible list (:mod:`~reasonix.safety.shell.irreversible`) judges each step's writes; the
proposed session rules (``reasonix.app.approvals``) read :func:`program` and
:func:`broad_rule_ok`.

:data:`PROGRAMS` (:mod:`~reasonix.safety.shell.programs`) is the one table of what a program
does besides reading and running other commands (those are
:data:`~reasonix.safety.shell.programs.READERS` and
:func:`~reasonix.safety.shell.rules.runs_commands`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from reasonix.safety.shell.lexer import Script, parse
from reasonix.safety.shell.programs import PROGRAMS, Program, program, written_operands
from reasonix.safety.shell.rules import (
    HARMLESS_DEVICES,
    Form,
    Step,
    runs_commands,
    script_forms,
    step_of,
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


def broad_rule_ok(name: str) -> bool:
    """Whether a rule naming program ``name`` (and its subcommand) may cover its every use:
    not for a program whose every use acts (writes, deletes, reaches another machine, changes
    processes or services), runs code given to it, or runs another command."""
    row = program(name)
    if row.acts or runs_commands(name):
        return False
    return not (row.runs_code and not row.subcommands)


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
    unknown = script.problems + (("a part runs inside a substitution",) * script.substitutions)
    return Effects(
        script=script,
        steps=tuple(step_of(cmd) for cmd in script.commands),
        runs=frozenset(script_forms(script)),
        redirects=any(
            r.writes and (r.target is None or r.target.value not in HARMLESS_DEVICES)
            for cmd in script.commands
            for r in cmd.redirects
        ),
        unknown=unknown,
    )
