"""The extensions of one runtime: custom commands and skills, found once when it starts.

Project folders (``.reasonix/``, ``.claude/``, ``.agents/``) are read only when ``trusted``;
the user's folders (``commands/`` and ``skills/`` next to the user's ``config.toml``) always.
What could not be loaded is kept in ``problems`` for the frontend to show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.app.hooks import HookedPolicy
from reasonix.extensions.agents import AgentProfile, agent_folders, load_agent_profiles
from reasonix.extensions.commands import (
    CustomCommand,
    command_folders,
    expand_command_parts,
    image_reader,
    include_reader,
    load_commands,
)
from reasonix.extensions.skills import Skill, load_skills, skill_folders, skill_tool
from reasonix.safety.permissions import PermissionEngine
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.registry import PermissionPolicy, Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from reasonix.messages import ImagePart

#: Commands of the terminal app; a custom command cannot take these names.
BUILTIN_COMMANDS = (
    "help", "plan", "approve", "mode", "model", "cost", "todo", "rewind", "turns", "compact",
    "clear", "sessions", "resume", "config", "reasoning", "remember", "mcp", "skills", "exit",
    "quit", "q", "goal",
)  # fmt: skip


@dataclass
class Extensions:
    """Custom commands and skills by name, and what was skipped while loading them."""

    commands: dict[str, CustomCommand] = field(default_factory=dict)
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: subagent profiles (``subagent_type``) by name
    profiles: dict[str, AgentProfile] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        workspace: Path,
        user_dir: Path | None,
        *,
        trusted: bool,
        reserved: Iterable[str] = BUILTIN_COMMANDS,
    ) -> Extensions:
        problems: list[str] = []
        commands = load_commands(
            command_folders(workspace, user_dir, trusted=trusted),
            reserved=reserved,
            problems=problems,
        )
        skills = load_skills(skill_folders(workspace, user_dir, trusted=trusted), problems=problems)
        folders, untrusted = agent_folders(workspace, user_dir, trusted=trusted)
        problems += untrusted
        profiles = load_agent_profiles(folders, problems=problems)
        return cls(commands, skills, problems, profiles)

    def tools(self) -> list[Tool]:
        """Tools the extensions add (the ``skill`` tool when there are skills)."""
        tool = skill_tool(self.skills)
        return [tool] if tool is not None else []

    async def expand(
        self,
        name: str,
        arguments: str,
        *,
        registry: ToolRegistry,
        permissions: PermissionEngine,
        sandbox: Sandbox,
        ctx: ToolContext,
    ) -> str:
        """The prompt of ``/name arguments`` (its text: :meth:`expand_parts` has the images)."""
        text, _ = await self.expand_parts(
            name, arguments, registry=registry, permissions=permissions, sandbox=sandbox, ctx=ctx
        )
        return text

    async def expand_parts(
        self,
        name: str,
        arguments: str,
        *,
        registry: ToolRegistry,
        permissions: PermissionEngine,
        sandbox: Sandbox,
        ctx: ToolContext,
    ) -> tuple[str, tuple[ImagePart, ...]]:
        """The prompt of ``/name arguments`` and the images it carries. ``!`` lines run as
        ``bash`` calls through ``registry`` (the permission engine decides, the user's own
        command files may grant their ``allowed-tools``); ``@file`` reads through ``sandbox``
        (an image file rides as an image part). Raises KeyError for an unknown command."""
        command = self.commands[name]

        async def run_shell(cmd: str, grants: tuple[str, ...]) -> str:
            target = registry
            if grants:
                # The same rules and approver, plus what the command file grants.
                engine = PermissionEngine(
                    mode=permissions.mode,
                    allow=[*(r.text for r in permissions.allow), *grants],
                    ask=[r.text for r in permissions.ask],
                    deny=[r.text for r in permissions.deny],
                    approver=permissions.approver,
                    on_decision=permissions.on_decision,
                )
                bash = registry.get("bash")
                policy: PermissionPolicy = engine
                if isinstance(registry.policy, HookedPolicy):
                    # The session's PreToolUse hooks still see the command.
                    policy = HookedPolicy(engine, registry.policy.hooks)
                target = ToolRegistry([bash] if bash else [], policy=policy)
            result = await target.execute("bash", json.dumps({"command": cmd}), ctx)
            if result.is_error:
                return f"[`{cmd}` did not run: {result.content}]"
            return result.content

        return await expand_command_parts(
            command,
            arguments,
            run_shell=run_shell,
            include=include_reader(sandbox),
            image=image_reader(sandbox),
        )
