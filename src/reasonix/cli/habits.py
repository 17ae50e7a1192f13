"""Claude Code's invocations read as ours (``reasonix -p PROMPT``, ``reasonix PROMPT``), before
:mod:`reasonix.cli.commands` parses the arguments; a mistyped command is not taken for a
prompt."""

from __future__ import annotations

import argparse
from collections.abc import Collection, Sequence

from reasonix.errors import StartupError as UsageError


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """The top-level options that take a value (``-m NAME``), read off the parser itself."""
    return {o for a in parser._actions if a.nargs != 0 for o in a.option_strings}


def habits(
    argv: Sequence[str], parser: argparse.ArgumentParser, commands: Collection[str | None]
) -> tuple[list[str], str | None]:
    """Claude Code's invocations as ours: ``reasonix -p PROMPT`` (``--print``) is ``reasonix
    run PROMPT``; ``reasonix PROMPT`` (a first word that is no command) starts the app with
    PROMPT as its first message. ``commands`` are the command names. Returns the argument
    list to parse and that first message."""
    args = list(argv)
    takes_value = _value_options(parser)
    printing = False
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            break
        if word in ("-p", "--print"):
            del args[i]
            printing = True
            continue
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            if name in takes_value and "=" not in word:
                i += 1
            i += 1
            continue
        if word in commands:  # a command: its own words are its parser's
            return (["run", *args] if printing and word != "run" else args), None
        if printing:
            return ["run", *args], None
        _not_a_typo(word, commands)
        return args[:i] + args[i + 1 :], word
    return (["run", *args] if printing else args), None


def _not_a_typo(word: str, commands: Collection[str | None]) -> None:
    """A one-word first message that looks like a mistyped command (``reasonix sesions``) is
    an error, not a paid prompt."""
    import difflib

    if " " in word.strip():
        return
    names = [c for c in commands if c]
    close = difflib.get_close_matches(word.lower(), names, n=1, cutoff=0.75)
    if close:
        raise UsageError(
            f"{word!r} is not a command: did you mean {close[0]!r}? "
            f'(to start the app with a first message, write it out: reasonix "{word} ...")'
        )
