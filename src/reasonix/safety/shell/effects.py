"""What a shell command does, computed once from its text: the record every view reads.

:func:`effects` parses a line once and keeps, per simple command (a
:class:`~reasonix.safety.shell.rules.Step`), what it runs, writes, reaches off-host, does that a
rule naming its program would not show, and why part of it is known only at run time. It
depends on the text alone, so it is cached per text; what depends on the file system is asked
of the views with a workspace.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from reasonix.safety.shell.git import Form
from reasonix.safety.shell.lexer import Script, parse
from reasonix.safety.shell.programs import PROGRAMS, Program, program, written_operands
from reasonix.safety.shell.rules import (
    HARMLESS_DEVICES,
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
