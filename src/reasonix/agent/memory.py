"""Project memory: ``REASONIX.md`` files (``AGENTS.md`` as the fallback many agents share).

Loaded once, into the system prompt, when a session starts: from the user config folder, then
from each ancestor of the project down to the project root itself (outermost first, so the most
specific file comes last). A note remembered mid-session is appended to the project's file and
rides at the tail of the next user turn — the running session's system prompt never changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from reasonix.tools.registry import Tool, ToolContext, ToolResult

MEMORY_NAMES = ("REASONIX.md", "AGENTS.md")
MAX_MEMORY_CHARS = 24_000
NOTES_HEADER = "## Notes remembered by reasonix"


def _pick(directory: Path) -> Path | None:
    for name in MEMORY_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def find_memory_files(project_dir: Path, user_config_dir: Path | None = None) -> list[Path]:
    """Memory files in load order: user folder, then ancestors outermost-first, then project."""
    found: list[Path] = []
    if user_config_dir is not None:
        user_file = _pick(user_config_dir)
        if user_file is not None:
            found.append(user_file)
    project = project_dir.resolve()
    for directory in [*reversed(project.parents), project]:
        picked = _pick(directory)
        if picked is not None and picked not in found:
            found.append(picked)
    return found


def load_memory(files: Iterable[Path], limit: int = MAX_MEMORY_CHARS) -> str:
    """The memory block for the system prompt (empty when there is none)."""
    sections = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text:
            sections.append(f"## {path}\n{text}")
    block = "\n\n".join(sections)
    if len(block) > limit:
        block = block[:limit] + f"\n[memory cut at {limit} characters]"
    return block


def system_prompt_with_memory(base: str, memory: str) -> str:
    if not memory:
        return base
    return f"{base}\n\n# Project memory (instructions from REASONIX.md / AGENTS.md)\n{memory}"


def remember(note: str, project_dir: Path) -> Path:
    """Append ``note`` to the project's memory file (REASONIX.md, or an existing AGENTS.md)."""
    note = " ".join(note.split())
    if not note:
        raise ValueError("Nothing to remember: the note is empty.")
    path = _pick(project_dir) or project_dir / MEMORY_NAMES[0]
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    addition = ""
    if NOTES_HEADER not in existing:
        addition += ("\n" if existing and not existing.endswith("\n") else "") + (
            f"\n{NOTES_HEADER}\n" if existing else f"{NOTES_HEADER}\n"
        )
    elif existing and not existing.endswith("\n"):
        addition += "\n"
    addition += f"- {note}\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(addition)
    return path


def tail_note(note: str) -> str:
    return f"[Remembered for this project: {' '.join(note.split())}]"


def remember_tool() -> Tool:
    async def remember_note(note: str, ctx: ToolContext) -> ToolResult:
        """Save a durable project fact or preference to REASONIX.md for future sessions."""
        try:
            path = remember(note, ctx.workspace)
        except (ValueError, OSError) as exc:
            return ToolResult.error(f"Could not remember the note: {exc}")
        return ToolResult(f"Remembered in {path.name}.")

    return Tool.from_function(remember_note, name="remember", category="memory")
