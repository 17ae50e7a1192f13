"""``@path`` mentions: the files (or folder listings) a user names in a message, attached to it.

``attach_mentions("why does @calc.py fail?", workspace)`` keeps the user's words as typed and
appends each mentioned file's text (a folder: its listing) after them, so what is attached rides
at the tail of the user turn and the cached prefix before it stays intact. A word is a mention
only when it names something that exists inside the workspace; anything else (an e-mail
address, a decorator, a path outside the workspace) is left as it was typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Attached", "attach_mentions"]

#: a mention starts a word: ``@`` then a path, trailing punctuation not included
_MENTION = re.compile(r"(?<![\w@])@([^\s@]+)")
_TRAILING = ".,;:!?)]}'\""
MAX_FILE_CHARS = 60_000
MAX_LISTING = 200


@dataclass(frozen=True, slots=True)
class Attached:
    """The message to send and what was attached to it (workspace-relative paths)."""

    text: str
    paths: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def attach_mentions(text: str, workspace: Path) -> Attached:
    """``text`` with every ``@path`` that names a file or folder in ``workspace`` attached at
    its end; see the module docstring. ``notes`` say what was cut or could not be read."""
    root = workspace.resolve()
    blocks: list[str] = []
    paths: list[str] = []
    notes: list[str] = []
    for match in _MENTION.finditer(text):
        raw = match.group(1).rstrip(_TRAILING)
        if not raw:
            continue
        target = (root / raw).resolve()
        if not target.is_relative_to(root) or not target.exists():
            continue
        rel = target.relative_to(root).as_posix() or "."
        if rel in paths:
            continue
        block, note = _folder(target, rel) if target.is_dir() else _file(target, rel)
        if note:
            notes.append(note)
        if block:
            paths.append(rel)
            blocks.append(block)
    if not blocks:
        return Attached(text, (), tuple(notes))
    attached = "\n\n".join(blocks)
    return Attached(f"{text}\n\n{attached}", tuple(paths), tuple(notes))


def _file(path: Path, rel: str) -> tuple[str, str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return "", f"@{rel} could not be read ({exc.strerror or exc})"
    if b"\0" in data[:8192]:
        return "", f"@{rel} is a binary file; not attached"
    content = data.decode("utf-8", errors="replace")
    note = ""
    if len(content) > MAX_FILE_CHARS:
        note = f"@{rel} is {len(content)} characters; the first {MAX_FILE_CHARS} are attached"
        content = content[:MAX_FILE_CHARS] + f"\n[... {len(content) - MAX_FILE_CHARS} more]"
    fence = "````" if "```" in content else "```"
    lines = content.count("\n") + (0 if content.endswith("\n") else 1)
    head = f"Attached by the user: {rel} ({lines} lines)"
    return f"{head}\n{fence}\n{content.rstrip(chr(10))}\n{fence}", note


def _folder(path: Path, rel: str) -> tuple[str, str]:
    try:
        entries = sorted(path.iterdir(), key=lambda p: (not p.is_dir(), p.name))
    except OSError as exc:
        return "", f"@{rel} could not be listed ({exc.strerror or exc})"
    shown = [e.name + ("/" if e.is_dir() else "") for e in entries if e.name != ".git"]
    more = len(shown) - MAX_LISTING
    listing = "\n".join(shown[:MAX_LISTING]) + (f"\n[... {more} more]" if more > 0 else "")
    return f"Attached by the user: folder {rel}/ ({len(shown)} entries)\n{listing}", ""
