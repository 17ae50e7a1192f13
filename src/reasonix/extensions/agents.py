"""Subagent profiles: ``*.md`` files whose front matter names a kind of ``task`` child.

Claude Code's format: front matter with ``name``, ``description`` (when to use it), optional
``tools`` (which tools the child gets, e.g. ``Read, Grep, Glob``; all of its view when absent)
and optional ``model`` (a model reasonix knows; ``inherit``, or Claude's ``sonnet`` / ``opus`` /
``haiku``, keep the executor's); the body is the child's system prompt.

Where they are found (the first file defining a name wins): ``.reasonix/agents`` and
``.claude/agents`` in the project, only when the folder is trusted (in an untrusted folder they
are ignored, and a notice says so), then ``agents/`` in the user's config folder. The list is
read once, when the session's tools are built: it lives in the ``task`` tool's description, which
stays byte-identical for the session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.extensions.frontmatter import parse

if TYPE_CHECKING:
    from reasonix.tools.registry import Tool

__all__ = ["AgentProfile", "agent_folders", "load_agent_profiles", "profile_tool_names"]

MAX_PROFILE_BYTES = 100_000
#: Descriptions are cut here in the ``task`` tool's description (paid on every request).
MAX_LISTED_DESCRIPTION = 200
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

#: Claude's model aliases: they mean "a Claude model", so the child keeps the executor's.
_INHERIT = frozenset({"", "inherit", "sonnet", "opus", "haiku"})


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """One profile; ``source`` is ``project`` or ``user``; ``model`` is "" for the
    executor's."""

    name: str
    description: str
    prompt: str
    path: Path
    source: str
    tools: tuple[str, ...] = ()
    model: str = ""

    def listing(self) -> str:
        text = " ".join(self.description.split())
        if len(text) > MAX_LISTED_DESCRIPTION:
            text = text[: MAX_LISTED_DESCRIPTION - 1].rstrip() + "…"
        return f"- {self.name}: {text}"


def agent_folders(
    workspace: Path, user_dir: Path | None, *, trusted: bool
) -> tuple[list[tuple[Path, str]], list[str]]:
    """The folders profiles are read from, in precedence order, with their source label, and a
    notice for each project folder left out because the folder is not trusted."""
    folders: list[tuple[Path, str]] = []
    notices: list[str] = []
    for sub in (".reasonix", ".claude"):
        folder = workspace / sub / "agents"
        if trusted:
            folders.append((folder, "project"))
        elif folder.is_dir() and any(folder.glob("*.md")):
            notices.append(
                f"Subagent profiles in {sub}/agents were ignored: this folder is not trusted "
                "(trust it to use them)."
            )
    if user_dir is not None:
        folders.append((user_dir / "agents", "user"))
    return folders, notices


def load_agent_profiles(
    folders: Iterable[tuple[Path, str]], *, problems: list[str] | None = None
) -> dict[str, AgentProfile]:
    """Every valid profile by name (sorted). A file without a usable name, description or body
    is skipped and reported through ``problems``."""
    notes = problems if problems is not None else []
    found: dict[str, AgentProfile] = {}
    for root, source in folders:
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*.md")):
            try:
                if path.stat().st_size > MAX_PROFILE_BYTES:
                    notes.append(f"subagent profile {path}: larger than {MAX_PROFILE_BYTES} bytes")
                    continue
                doc = parse(path.read_text(encoding="utf-8", errors="replace"))
            except OSError as exc:
                notes.append(f"subagent profile {path}: {exc}")
                continue
            name = doc.text("name").strip() or path.stem
            description = doc.text("description").strip()
            why = ""
            if not _NAME.match(name):
                why = f"name {name!r} must be letters, digits, '-' or '_'"
            elif not description:
                why = "it has no description (front matter `description:`)"
            elif not doc.body.strip():
                why = "it has no body (the subagent's instructions)"
            if why:
                notes.append(f"subagent profile {path} skipped: {why}")
                continue
            if name in found:
                continue
            model = doc.text("model").strip()
            found[name] = AgentProfile(
                name,
                description,
                doc.body.strip() + "\n",
                path,
                source,
                tuple(doc.items("tools")),
                "" if model.lower() in _INHERIT else model,
            )
    return dict(sorted(found.items()))


def profile_tool_names(profile: AgentProfile, available: Iterable[Tool]) -> list[str] | None:
    """The tools of ``available`` the profile allows, by our names; a profile written for
    Claude Code names them by the tools' aliases (:attr:`Tool.aliases`, case-insensitive).
    None when it names none (it gets them all). Unknown names are ignored."""
    if not profile.tools:
        return None
    tools = list(available)
    wanted: list[str] = []
    for raw in profile.tools:
        base = raw.split("(", 1)[0].strip()
        for tool in tools:
            called = {tool.name, *(alias.lower() for alias in tool.aliases)}
            if (base in called or base.lower() in called) and tool.name not in wanted:
                wanted.append(tool.name)
    return wanted
