"""The simple commands of a shell line and the forms each may run, as text: what the
permission rules, the irreversible-command check, the snapshots' read-only test and the
proposed session rules read a line through (:mod:`~reasonix.safety.shell.lexer` parses it,
:func:`~reasonix.safety.shell.rules.command_forms` sees through wrappers). It imports nothing
that imports it, so those views can sit beside each other without an import cycle."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from reasonix.safety.patterns import normalize_command
from reasonix.safety.shell.lexer import Script
from reasonix.safety.shell.lexer import parse as parse_shell
from reasonix.safety.shell.rules import HARMLESS_DEVICES
from reasonix.safety.shell.rules import command_forms as shell_command_forms

__all__ = ["HARMLESS_TARGETS", "CommandScan", "command_forms", "scan_command", "scan_script"]


@dataclass(frozen=True, slots=True)
class CommandScan:
    """What :func:`scan_command` found: the simple commands, whether some are hidden
    (``opaque``), and whether the line writes a file through a redirection (``redirects``:
    ``> file``, ``>> file``, ``&> file``, ``<> file``; ``/dev/null`` and ``2>&1`` do not count)."""

    parts: list[str]
    opaque: bool
    redirects: bool


#: redirect targets that write no file (the one list, from the allow side)
HARMLESS_TARGETS = HARMLESS_DEVICES


def scan_command(command: str) -> CommandScan:
    """The line's simple commands, as :mod:`~reasonix.safety.shell.lexer` reads them."""
    return scan_script(parse_shell(command))


def scan_script(script: Script) -> CommandScan:
    parts = [normalize_command(c.text) for c in script.commands if c.words and c.text]
    redirects = any(
        r.writes and (r.target is None or r.target.value not in HARMLESS_TARGETS)
        for c in script.commands
        for r in c.redirects
    )
    return CommandScan(parts, script.substitutions or not script.sure, redirects)


def command_forms(part: str) -> set[str]:
    """The commands one part of a line may run, as text, for checks written over words: the
    part itself, and each form :func:`~reasonix.safety.shell.rules.command_forms` finds (quotes
    removed, wrappers seen through), words shell-quoted and an unknown word written ``*``."""
    forms = {normalize_command(part)}
    for form in shell_command_forms(part):
        forms.add(" ".join("*" if t is None else shlex.quote(t) for t in form))
    return forms
