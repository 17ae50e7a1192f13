"""The shape of hook configuration, as Claude Code writes it: event → matcher groups → commands.

In ``config.toml`` / ``reasonix.toml``::

    [[hooks.PreToolUse]]
    matcher = "bash"
    hooks = [{ type = "command", command = "python3 check.py", timeout = 30 }]

and in ``.claude/settings.json``: ``{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks":
[{"type": "command", "command": "...", "timeout": 30}]}]}}``. Both parse to
:class:`HookGroup` records here (plain data, no I/O); :mod:`reasonix.extensions.hooks` runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
)
#: Seconds a hook command may run when its entry gives no ``timeout`` (Claude Code's default).
DEFAULT_HOOK_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class HookCommand:
    """One ``{ type = "command", command = "...", timeout = N }`` entry."""

    command: str
    timeout: float = DEFAULT_HOOK_TIMEOUT


@dataclass(frozen=True, slots=True)
class HookGroup:
    """A matcher and its commands for one event. ``source`` says where it was written
    (``user:<path>``, ``project:<path>``): project hooks run only in trusted folders, and may
    not loosen permissions."""

    event: str
    matcher: str
    hooks: tuple[HookCommand, ...]
    source: str

    @property
    def from_project(self) -> bool:
        return not self.source.startswith("user:")


class HookShapeError(ValueError):
    """A hooks table that is not in the expected shape; ``key`` is the place in it
    (``("hooks", "PreToolUse", 0, "hooks", 0, "timeout")``)."""

    def __init__(self, key: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.key = key


def parse_hook_table(table: Any, source: str) -> tuple[HookGroup, ...]:
    """``{event: [{matcher, hooks: [...]}, ...]}`` as groups; raises :class:`HookShapeError`
    at the first problem, naming the key and what would be valid."""
    if not isinstance(table, Mapping):
        raise HookShapeError(("hooks",), "expected a table of events, e.g. [[hooks.PreToolUse]]")
    groups: list[HookGroup] = []
    for event, entries in table.items():
        if event not in HOOK_EVENTS:
            raise HookShapeError(
                ("hooks", event),
                f'unknown hook event "{event}"; use one of {", ".join(HOOK_EVENTS)}',
            )
        if not isinstance(entries, list):
            raise HookShapeError(
                ("hooks", event), f"expected an array of matcher tables ([[hooks.{event}]])"
            )
        for i, entry in enumerate(entries):
            where: tuple[str | int, ...] = ("hooks", event, i)
            if not isinstance(entry, Mapping):
                raise HookShapeError(where, "expected a table with matcher and hooks")
            unknown = set(entry) - {"matcher", "hooks"}
            if unknown:
                raise HookShapeError(
                    where, f'unknown key "{sorted(unknown)[0]}"; valid: matcher, hooks'
                )
            matcher = entry.get("matcher", "")
            if not isinstance(matcher, str):
                raise HookShapeError(
                    (*where, "matcher"), "expected a string (a tool name or regex)"
                )
            commands = entry.get("hooks")
            if not isinstance(commands, list) or not commands:
                raise HookShapeError(
                    (*where, "hooks"),
                    'expected an array of commands, e.g. hooks = [{ type = "command", '
                    'command = "python3 check.py" }]',
                )
            parsed: list[HookCommand] = []
            for j, command in enumerate(commands):
                at = (*where, "hooks", j)
                if not isinstance(command, Mapping):
                    raise HookShapeError(at, 'expected { type = "command", command = "..." }')
                kind = command.get("type", "command")
                if kind != "command":
                    raise HookShapeError(
                        (*at, "type"), f'hook type "{kind}" is not supported; use "command"'
                    )
                text = command.get("command")
                if not isinstance(text, str) or not text.strip():
                    raise HookShapeError((*at, "command"), "expected the command line to run")
                timeout = command.get("timeout", DEFAULT_HOOK_TIMEOUT)
                if (
                    isinstance(timeout, bool)
                    or not isinstance(timeout, int | float)
                    or timeout <= 0
                ):
                    raise HookShapeError((*at, "timeout"), "expected a positive number of seconds")
                parsed.append(HookCommand(text, float(timeout)))
            groups.append(HookGroup(event, matcher, tuple(parsed), source))
    return tuple(groups)
