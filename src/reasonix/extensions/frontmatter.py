"""The front matter of a markdown file (``---`` … ``---`` at its top), as Claude Code's
commands and skills write it.

A small reader of the YAML subset those files use, so no YAML library is needed: ``key: value``
lines with plain, single- or double-quoted values, inline lists (``[a, b]``), block lists
(``- item`` lines under a key) and block scalars (``|`` / ``>`` with indented lines). Anything
else is kept as its literal text, never an error: a command with odd front matter still runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_KEY = re.compile(r"^([A-Za-z0-9_-]+)\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Document:
    """A markdown file split into its front matter (``meta``) and its ``body``."""

    meta: dict[str, str | list[str]] = field(default_factory=dict)
    body: str = ""

    def text(self, key: str) -> str:
        """``key`` as one string (a list is joined with ", "); "" when absent."""
        value = self.meta.get(key, "")
        return ", ".join(value) if isinstance(value, list) else value

    def items(self, key: str) -> list[str]:
        """``key`` as a list: a YAML list, or a comma-separated string (``Bash, Read``)."""
        value = self.meta.get(key, "")
        if isinstance(value, list):
            return [v for v in value if v]
        return split_tool_list(value)


def split_tool_list(text: str) -> list[str]:
    """``"Bash(git add:*), Read"`` → ``["Bash(git add:*)", "Read"]``: commas inside
    parentheses do not split."""
    out: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    out.append("".join(current).strip())
    return [item for item in out if item]


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        inner = raw[1:-1]
        if raw[0] == '"':
            return inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        return inner.replace("''", "'")
    if " #" in raw:
        raw = raw.split(" #", 1)[0].rstrip()
    return raw


def parse(text: str) -> Document:
    """Split ``text`` into front matter and body (no front matter: all body)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return Document({}, text)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return Document({}, text)
    meta: dict[str, str | list[str]] = {}
    i = 1
    while i < end:
        line = lines[i].rstrip("\r\n")
        i += 1
        match = _KEY.match(line)
        if not match:
            continue
        key, raw = match.group(1), match.group(2).strip()
        if raw in ("|", ">", "|-", ">-", "|+", ">+") or (not raw and _indented(lines, i, end)):
            block: list[str] = []
            while i < end and (not lines[i].strip() or lines[i][:1] in " \t"):
                block.append(lines[i].strip())
                i += 1
            items = [b[1:].strip() for b in block if b.startswith("-")]
            if not raw and items and len(items) == len([b for b in block if b]):
                meta[key] = [_scalar(item) for item in items]
            else:
                joiner = "\n" if raw.startswith("|") else " "
                meta[key] = joiner.join(b for b in block if b).strip()
            continue
        if raw.startswith("[") and raw.endswith("]"):
            meta[key] = [_scalar(v) for v in split_tool_list(raw[1:-1])]
            continue
        meta[key] = _scalar(raw)
    body = "".join(lines[end + 1 :])
    return Document(meta, body)


def _indented(lines: list[str], i: int, end: int) -> bool:
    return i < end and lines[i][:1] in " \t" and bool(lines[i].strip())
