"""The settings a shell line gives git through its environment instead of ``-c``.

git reads ``GIT_CONFIG_COUNT`` with ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` pairs and
``GIT_CONFIG_PARAMETERS`` as if they were ``-c`` settings, and ``GIT_CONFIG_GLOBAL``,
``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG``, ``HOME`` and ``XDG_CONFIG_HOME`` name the configuration
files it reads. :func:`git_environment` reads the line's assignments (in front of a command,
``env``'s and ``export``'s words) into those settings and names the variables it cannot read (a
file, a value known only at run time, an assignment inside ``sh -c``); the irreversible floor
(:mod:`reasonix.safety.shell.irreversible`) judges them as it judges ``-c`` (attacker6 B3).
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass

from reasonix.safety.shell.effects import effects
from reasonix.safety.shell.git import parse_git

#: an assignment to a variable git reads settings or configuration files from
_GIT_ENV = re.compile(r"(?<![\w$])(GIT_CONFIG\w*|HOME|XDG_CONFIG_HOME)=")
_ASSIGNED = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)
_MAX_COUNT = 64  # more pairs than anyone sets by hand: the rest count as unread


@dataclass(frozen=True, slots=True)
class GitEnvironment:
    """What a line's assignments give its git calls: ``settings`` (key, value; None when the
    value is known only at run time), the variables whose settings are not read here
    (``unread``), and the subcommands of the line's git calls (``subs``, "" for none)."""

    settings: tuple[tuple[str, str | None], ...]
    unread: frozenset[str]
    subs: frozenset[str]


def git_environment(command: str) -> GitEnvironment | None:
    """The git environment ``command`` sets, or None when it sets none or runs no git."""
    if not _GIT_ENV.search(command):
        return None
    found: dict[str, str | None] = {}
    subs: set[str] = set()
    for step in effects(command).steps:
        words = [w.value if w.literal else None for w in step.command.assignments]
        for form in step.forms:
            words += form
            if form and form[0] is not None and form[0].rsplit("/", 1)[-1] == "git":
                subs.add(parse_git(form[1:]).sub or "")
        for word in words:
            if word is not None and (m := _ASSIGNED.fullmatch(word)):
                found[m[1]] = None if "$" in m[2] or "`" in m[2] else m[2]
    if not subs:
        return None
    settings, unread = _settings(found)
    unread |= {m[1] for m in _GIT_ENV.finditer(command)} - found.keys()
    return GitEnvironment(tuple(settings), frozenset(unread), frozenset(subs))


def _settings(found: dict[str, str | None]) -> tuple[list[tuple[str, str | None]], set[str]]:
    """The settings the variables ``found`` give git, and those whose settings are not read."""
    settings: list[tuple[str, str | None]] = []
    unread = {n for n in found if n in ("HOME", "XDG_CONFIG_HOME") or n.startswith("GIT_CONFIG")}
    count = found.get("GIT_CONFIG_COUNT")
    if count is not None and count.isdigit() and int(count) <= _MAX_COUNT:
        unread.discard("GIT_CONFIG_COUNT")
        for i in range(int(count)):
            key, value = found.get(f"GIT_CONFIG_KEY_{i}"), found.get(f"GIT_CONFIG_VALUE_{i}")
            unread -= {f"GIT_CONFIG_KEY_{i}", f"GIT_CONFIG_VALUE_{i}"}
            if key is None:
                unread.add(f"GIT_CONFIG_KEY_{i}")
            else:
                settings.append((key, value))
    params = found.get("GIT_CONFIG_PARAMETERS")
    if params is not None:
        with contextlib.suppress(ValueError):
            pairs = [p.partition("=") for p in shlex.split(params)]
            settings += [(key, value if eq else "true") for key, eq, value in pairs]
            unread.discard("GIT_CONFIG_PARAMETERS")
    return settings, unread
