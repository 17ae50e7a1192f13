"""Skills: folders holding a ``SKILL.md`` (Claude Code's format), loaded by the model on demand.

Where they are found (the first folder defining a name wins): ``.reasonix/skills``,
``.agents/skills`` and ``.claude/skills`` in the project (only when the folder is trusted),
then ``skills/`` in the user's config folder. ``SKILL.md`` starts with front matter giving
``name`` (equal to the folder's name), ``description`` (what it is for and when to use it) and
optionally ``allowed-tools`` (shown to the model; it grants nothing).

The index (each skill's name and description) is read once, when the session's tools are built,
and lives in the ``skill`` tool's description: the tool schemas are fixed for the session, so the
index never changes the prompt prefix mid-session and never touches the system prompt. The
model calls ``skill(name)`` to read a skill's instructions, and ``skill(name, file)`` for a file
the instructions point to inside the skill's folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from reasonix.extensions.frontmatter import parse
from reasonix.tools.registry import Tool, ToolResult

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 200_000
#: Descriptions are cut here in the index: every byte of it is paid on every request.
MAX_INDEX_DESCRIPTION = 300

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill folder; ``source`` is ``project`` or ``user``."""

    name: str
    description: str
    folder: Path
    source: str
    allowed_tools: tuple[str, ...] = ()

    def index_line(self) -> str:
        text = self.description
        if len(text) > MAX_INDEX_DESCRIPTION:
            text = text[: MAX_INDEX_DESCRIPTION - 1].rstrip() + "…"
        return f"- {self.name}: {text}"


def skill_folders(
    workspace: Path, user_dir: Path | None, *, trusted: bool
) -> list[tuple[Path, str]]:
    """The folders skills are read from, in precedence order, with their source label."""
    folders: list[tuple[Path, str]] = []
    if trusted:
        folders += [
            (workspace / sub / "skills", "project") for sub in (".reasonix", ".agents", ".claude")
        ]
    if user_dir is not None:
        folders.append((user_dir / "skills", "user"))
    return folders


def load_skills(
    folders: Iterable[tuple[Path, str]], *, problems: list[str] | None = None
) -> dict[str, Skill]:
    """Every valid skill by name (sorted). A folder whose ``SKILL.md`` lacks a description or
    names another skill is skipped and reported through ``problems``."""
    notes = problems if problems is not None else []
    found: dict[str, Skill] = {}
    for root, source in folders:
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            path = folder / SKILL_FILE
            if not path.is_file():
                continue
            try:
                doc = parse(path.read_bytes()[:MAX_SKILL_BYTES].decode("utf-8", "replace"))
            except OSError as exc:
                notes.append(f"skill {folder} skipped: {exc.strerror}")
                continue
            name = doc.text("name").strip()
            description = " ".join(doc.text("description").split())
            if name != folder.name:
                notes.append(
                    f"skill {folder} skipped: its SKILL.md name is {name!r}; it must equal the "
                    f"folder name {folder.name!r}"
                )
                continue
            if not _NAME.match(name):
                notes.append(
                    f"skill {folder} skipped: use lower-case letters, digits and hyphens "
                    "(at most 64) in a skill name"
                )
                continue
            if not description:
                notes.append(f"skill {folder} skipped: SKILL.md has no description")
                continue
            if name in found:
                continue
            found[name] = Skill(
                name, description, folder, source, tuple(doc.items("allowed-tools"))
            )
    return dict(sorted(found.items()))


class SkillTool:
    """The ``skill`` tool over a fixed set of skills."""

    def __init__(self, skills: dict[str, Skill]) -> None:
        self.skills = dict(skills)

    def description(self) -> str:
        lines = "\n".join(s.index_line() for s in self.skills.values())
        return (
            "Load a skill: instructions for a kind of task, written by the user or the project. "
            "When a task matches a skill below, call skill(name) first and follow what it says; "
            "skill(name, file) reads a file the instructions refer to.\n" + lines
        )

    async def skill(
        self,
        name: Annotated[str, "skill name from the list"],
        file: Annotated[str | None, "a file inside the skill's folder"] = None,
    ) -> ToolResult:
        found = self.skills.get(name)
        if found is None:
            known = ", ".join(self.skills) or "none"
            return ToolResult.error(f"No skill named {name!r}. Skills: {known}.")
        if file:
            return _read_inside(found, file)
        try:
            doc = parse(
                (found.folder / SKILL_FILE)
                .read_bytes()[:MAX_SKILL_BYTES]
                .decode("utf-8", "replace")
            )
        except OSError as exc:
            return ToolResult.error(f"Cannot read skill {name!r}: {exc.strerror}")
        others = sorted(
            p.relative_to(found.folder).as_posix()
            for p in found.folder.rglob("*")
            if p.is_file() and p.name != SKILL_FILE
        )[:50]
        parts = [f"# Skill: {name}", doc.body.strip()]
        if found.allowed_tools:
            parts.append("Tools this skill expects: " + ", ".join(found.allowed_tools))
        if others:
            parts.append("Files in this skill (read with skill(name, file)): " + ", ".join(others))
        return ToolResult("\n\n".join(parts))

    def tool(self) -> Tool:
        return Tool.from_function(
            self.skill,
            name="skill",
            description=self.description(),
            read_only=True,
            category="skill",
            kind="read",
            aliases=("Skill",),
            subjects=("name",),
        )


def _read_inside(skill: Skill, file: str) -> ToolResult:
    base = os.path.realpath(skill.folder)
    real = os.path.realpath(os.path.join(base, file))
    if not (real == base or real.startswith(base + os.sep)):
        return ToolResult.error(f"{file!r} is outside the skill's folder.")
    path = Path(real)
    if not path.is_file():
        return ToolResult.error(f"No file {file!r} in skill {skill.name!r}.")
    if _secret(os.path.relpath(real, base)):
        # What the file tools keep from the model (.env, keys) stays out through a skill too.
        return ToolResult.error(f"{file!r} is a file the sandbox protects (secrets); not read.")
    data = path.read_bytes()[:MAX_SKILL_BYTES]
    if b"\x00" in data[:8192]:
        return ToolResult.error(f"{file!r} is a binary file.")
    return ToolResult(data.decode("utf-8", "replace"))


def _secret(relpath: str) -> bool:
    from reasonix.safety.sandbox import holds_secrets

    return holds_secrets(relpath)


def skill_tool(skills: dict[str, Skill]) -> Tool | None:
    """The ``skill`` tool, or None when there are no skills (no tool, no prefix cost)."""
    return SkillTool(skills).tool() if skills else None


def skills_listing(skills: dict[str, Skill]) -> list[str]:
    """Lines for ``/skills``."""
    if not skills:
        return [
            "No skills. Add a folder with a SKILL.md to .reasonix/skills/ (or .claude/skills/, "
            ".agents/skills/) in a trusted project, or to skills/ in your config folder."
        ]
    return [f"{s.name:<24} {s.description[:90]} ({s.source}: {s.folder})" for s in skills.values()]
