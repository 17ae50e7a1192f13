"""What trusting a folder would make take effect, item by item, for the trust question.

The loader's list of what it left out (``Config.ignored``) names settings; it does not say which
commands would run. :func:`trust_items` adds every item of the folder that runs or changes what
the agent does once the folder is trusted, each with what it runs: each hook with its event and
command (``[[hooks.EVENT]]`` of ``reasonix.toml`` and the ``hooks`` of ``.claude/settings.json``
and ``.claude/settings.local.json``), each MCP server with its command (or URL), each custom
command (with its ``!`` shell lines), each skill and each agent profile, then the settings. It
reads the folder the way the session would (the same loaders), so what is listed is what would
load; everything shown goes through the terminal sanitiser, and a command is shown whole, its
newlines escaped (descriptions are folded and cut).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.terminal_text import printable

if TYPE_CHECKING:
    from reasonix.config import Config

#: A group of the trust question: its heading and its lines.
TrustGroup = tuple[str, list[str]]

_SHELL_LINE = re.compile(r"!`([^`]+)`")
_MAX_SHOWN = 200


def _show(text: str) -> str:
    one = " ".join(text.split())
    if len(one) > _MAX_SHOWN:
        one = one[: _MAX_SHOWN - 1] + "…"
    return printable(one)


def _command(text: str) -> str:
    """A command as it will run: whole (a cut would hide what runs last) and with its
    newlines and tabs shown escaped (folded into spaces, a newline that ends one command reads
    as more words of the one before)."""
    return printable(text)


def _rel(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)


def trust_items(workspace: Path, config: Config, preview: Config) -> list[TrustGroup]:
    """The trust question's groups for ``workspace``: ``config`` is the configuration without
    the project's files (what the loader left out is in its ``ignored``), ``preview`` the one
    with them. Empty groups are left out."""
    groups: list[TrustGroup] = [
        ("hooks (run as your user, outside the sandbox)", _hooks(workspace, preview)),
        ("MCP servers (started as your user, outside the sandbox)", _servers(workspace, preview)),
        ("custom commands", _commands(workspace)),
        ("skills", _skills(workspace)),
        ("subagent profiles", _profiles(workspace)),
        ("settings", _settings(config.ignored)),
    ]
    return [(heading, lines) for heading, lines in groups if lines]


def _hooks(workspace: Path, preview: Config) -> list[str]:
    from reasonix.config.hooks import HookGroup, HookShapeError, parse_hook_table
    from reasonix.extensions.hooks import load_settings_hooks

    lines: list[str] = []

    def add(group: HookGroup, where: str) -> None:
        when = group.event + (f" ({group.matcher})" if group.matcher else "")
        lines.extend(f"{_show(when)}: {_command(h.command)}  [{where}]" for h in group.hooks)

    for group in preview.hooks:
        kind, _, where = group.source.partition(":")
        if kind == "project":
            add(group, _rel(Path(where), workspace))
    for name in ("settings.json", "settings.local.json"):
        path = workspace / ".claude" / name
        table, problem = load_settings_hooks(path)
        if problem:
            lines.append(f"{_show(problem)} (its hooks would be skipped)")
        if table is None:
            continue
        try:
            for group in parse_hook_table(table, f"project:{path}"):
                add(group, f".claude/{name}")
        except HookShapeError as exc:
            lines.append(f".claude/{name}: {_show(str(exc))} (its hooks would be skipped)")
    return lines


def _servers(workspace: Path, preview: Config) -> list[str]:
    from reasonix.errors import ConfigError
    from reasonix.mcp.config import configured_servers

    skipped: list[ConfigError] = []
    try:
        servers = configured_servers(preview, workspace, environ={}, skipped=skipped)
    except ConfigError as exc:
        return [f"(cannot be read: {_show(str(exc))})"]
    base = workspace.resolve()
    lines = []
    for server in servers:
        source = Path(server.source)
        if not source.is_absolute() or not source.resolve().is_relative_to(base):
            continue  # the user's own servers run trusted or not
        if server.command:
            what = "runs " + " ".join([server.command, *server.args])
        else:
            what = f"connects to {server.url}"
        lines.append(f"{_show(server.name)}: {_command(what)}  [{_rel(source, workspace)}]")
    lines += [f"(skipped: {_show(str(problem))})" for problem in skipped]
    return lines


def _project_folders(
    folders: Callable[..., list[tuple[Path, str]]], workspace: Path
) -> list[tuple[Path, str]]:
    return [(f, s) for f, s in folders(workspace, None, trusted=True) if s == "project"]


def _commands(workspace: Path) -> list[str]:
    from reasonix.extensions.commands import command_folders, load_commands

    problems: list[str] = []
    found = load_commands(_project_folders(command_folders, workspace), problems=problems)
    lines = []
    for command in found.values():
        shell = _SHELL_LINE.findall(command.body)
        line = f"/{_show(command.name)}  [{_rel(command.path, workspace)}]"
        if shell:
            line += " runs: " + "; ".join(_command(s) for s in shell)
        lines.append(line)
    return lines


def _skills(workspace: Path) -> list[str]:
    from reasonix.extensions.skills import load_skills, skill_folders

    found = load_skills(_project_folders(skill_folders, workspace), problems=[])
    return [
        f"{_show(skill.name)}: {_show(skill.description)}  [{_rel(skill.folder, workspace)}]"
        for skill in found.values()
    ]


def _profiles(workspace: Path) -> list[str]:
    from reasonix.extensions.agents import agent_folders, load_agent_profiles

    folders, _ = agent_folders(workspace, None, trusted=True)
    found = load_agent_profiles([f for f in folders if f[1] == "project"], problems=[])
    return [
        f"{_show(profile.name)}: {_show(profile.description)}  [{_rel(profile.path, workspace)}]"
        for profile in found.values()
    ]


def _settings(ignored: tuple[str, ...] | list[str]) -> list[str]:
    """The loader's list of what it left out, without what the groups above name in full
    (its ``.mcp.json`` servers, its notice about hooks and what ``.claude/`` holds)."""
    return [
        _command(" ".join(item.split()))  # whole: a cut list hides its last rules
        for item in ignored
        if not item.startswith((".mcp.json:", "hooks (", ".claude/")) and item.strip()
    ]
