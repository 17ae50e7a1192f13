"""The files a bash command can write, where that list is complete and exact: what lets its
step go on during a background snapshot (:meth:`reasonix.safety.checkpoints.CheckpointManager.
before_command`), keeping those files' bytes as a file tool's step does, instead of waiting.

A command qualifies only when everything it writes is a redirection (``>``, ``>>``, ``>|``, with
or without a file descriptor before it) to a literal name inside the workspace, and the same
line without those redirections is proved to change nothing
(:func:`reasonix.safety.shell.readers.read_only_obstacle`: programs that only read, with
options that only read, nothing hidden or known only at run time). No ``cd`` (a relative name
would land elsewhere), no ``&>``, ``<>`` or ``>&file``, no glob, variable, tilde or brace in a
target. Each target must be absent or a plain file with one link (a write through a second
link changes another name), below real folders only (not through a symlink, not in ``.git``
or a repository of its own). Anything less
than certain is None, and the step waits as every other step does."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

from reasonix.safety.shell.lexer import Command, Redirect

_TRUNCATES = (">", ">>", ">|")
_MOVES = frozenset({"cd", "pushd", "popd"})


def exact_writes(command: str, workspace: Path) -> tuple[str, ...] | None:
    """The names (relative to ``workspace``) of every file ``command`` can write, or None when
    that list is not certain (see the module docstring)."""
    from reasonix.safety.shell.effects import effects
    from reasonix.safety.shell.readers import read_only_obstacle

    record = effects(command)
    script = record.script
    if record.unknown or not script.commands:
        return None
    names: list[str] = []
    bare: list[Command] = []
    for cmd in script.commands:
        if cmd.words and cmd.words[0].value in _MOVES:
            return None
        kept: list[Redirect] = []
        for redirect in cmd.redirects:
            if not redirect.writes:
                kept.append(redirect)
                continue
            name = _target(redirect, workspace)
            if name is None:
                return None
            names.append(name)
        if cmd.words:  # a redirection alone (a group's, a loop's) only opens its files
            bare.append(dataclasses.replace(cmd, redirects=tuple(kept)))
    if not names:
        return None
    if bare:
        rest = dataclasses.replace(script, commands=tuple(bare))
        if read_only_obstacle(rest, workspace, confined=False) is not None:
            return None
    return tuple(dict.fromkeys(names))


def _target(redirect: Redirect, workspace: Path) -> str | None:
    """The workspace name a writing redirection opens, when it is a plain one to a literal
    name inside the workspace that is absent or a file with one link below real folders."""
    word = redirect.target
    if redirect.op not in _TRUNCATES or word is None or not word.literal or not word.value:
        return None
    value = word.value
    if value.startswith("/") or ".." in value.split("/"):
        # the kernel resolves ``..`` after the folder before it: ``link/../m.py`` is a file
        # beside the link's target, not ``m.py`` (attacker6 B6)
        return None
    name = os.path.normpath(value)
    if name in (".", "..") or name.startswith("../") or value.endswith("/"):
        return None
    if not _real_folders(workspace, name):
        return None
    try:
        st = os.lstat(workspace / name)
    except FileNotFoundError:
        return name
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return None
    return name


def _real_folders(workspace: Path, name: str) -> bool:
    """Whether the folders above ``name`` are real folders, none of them ``.git`` or a
    repository of its own (which snapshots do not cover)."""
    folder = workspace
    for part in name.split("/")[:-1]:
        folder = folder / part
        try:
            if part == ".git" or not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
        except OSError:
            return False
        if os.path.lexists(folder / ".git"):
            return False
    return True
