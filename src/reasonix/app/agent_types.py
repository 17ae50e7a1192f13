"""``/agents``: the subagent types the executor's ``task`` tool offers, with their tools and
where each came from.

The built-in types (``general-purpose``, read-only ``Explore`` and ``Plan``) exist without
configuration; profiles come from ``.reasonix/agents`` and ``.claude/agents`` of a trusted
project and ``agents/`` of the user's config folder. The profiles of a folder that is not
trusted are listed too, marked as not loaded, so the user sees what trusting it would add.
The list is read from the running ``task`` tool (what the model was told), not from disk
again, except for the untrusted folders it left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasonix.terminal_text import printable

if TYPE_CHECKING:
    from reasonix.app.session import AgentSession

__all__ = ["AgentType", "agent_type_lines", "agent_types"]

_BUILTIN_ABOUT = {
    "general-purpose": "the default subagent, for any self-contained task",
    "Explore": "a read-only researcher: searches and reads, reports findings",
    "Plan": "a read-only researcher whose report is an implementation plan",
}


@dataclass(frozen=True, slots=True)
class AgentType:
    """One ``subagent_type``. ``tools``: the tool names it gets (None: all of its view);
    ``writer``: it may edit (in a private copy) when called with ``read_only`` false;
    ``source``: ``built-in``, ``project``, ``user``; ``path``: its file; ``loaded``: False
    for a profile of an untrusted folder (offered only once the folder is trusted);
    ``model``: the model it runs on ("" for the executor's)."""

    name: str
    description: str
    tools: tuple[str, ...] | None
    writer: bool
    source: str
    path: str = ""
    loaded: bool = True
    model: str = ""


def agent_types(session: AgentSession) -> list[AgentType]:
    """The subagent types of ``session``: built-in first, then the profiles by name, then
    the profiles of untrusted project folders (not loaded). Empty when ``task`` is off."""
    from reasonix.control.delegation import BUILTIN_TYPES
    from reasonix.extensions.agents import (
        agent_folders,
        load_agent_profiles,
        profile_tool_names,
    )

    delegator = session.controller.delegator
    if delegator is None:
        return []
    writers = delegator.writers is not None
    view = delegator.registry
    everything = tuple(t.name for t in view)
    out: list[AgentType] = []
    for name, (read_only, _) in BUILTIN_TYPES.items():
        if name in delegator.profiles:
            continue  # a configured profile of the same name wins
        out.append(
            AgentType(
                name,
                _BUILTIN_ABOUT.get(name, ""),
                everything,
                writers and not read_only,
                "built-in",
            )
        )
    for profile in delegator.profiles.values():
        allowed = profile_tool_names(profile, view)
        out.append(
            AgentType(
                profile.name,
                profile.description,
                tuple(allowed) if allowed is not None else everything,
                writers,
                profile.source,
                str(profile.path),
                model=profile.model,
            )
        )
    if not session.config.trusted:
        folders, _ = agent_folders(session.workspace, None, trusted=True)
        for profile in load_agent_profiles(folders).values():
            out.append(
                AgentType(
                    profile.name,
                    profile.description,
                    profile.tools or None,
                    writers,
                    "project",
                    str(profile.path),
                    loaded=False,
                    model=profile.model,
                )
            )
    return out


def agent_type_lines(session: AgentSession) -> list[str]:
    """``/agents``: one block per type."""
    types = agent_types(session)
    if not types:
        return ["Subagents are off ([subagents] enabled = false): the executor has no task tool."]
    lines = ["Subagent types (the executor's task tool, subagent_type):"]
    for t in types:
        where = "built in" if t.source == "built-in" else f"{t.source}: {t.path}"
        if not t.loaded:
            where += " — NOT LOADED: this folder is not trusted (trust it to use it)"
        kind = (
            "read-only; a writer in a private copy with read_only false"
            if t.writer
            else "read-only"
        )
        model = f", model {t.model}" if t.model else ""
        lines.append(f"  {printable(t.name)} ({kind}{model}) — {where}")
        if t.description:
            lines.append(f"    {printable(' '.join(t.description.split()))[:200]}")
        if t.tools is not None:
            label = "tools" if t.loaded else "tools (as written)"
            more = "; as a writer also the edit tools and bash it may use" if t.writer else ""
            lines.append(f"    {label}: {printable(', '.join(t.tools)) or 'none'}{more}")
    return lines
