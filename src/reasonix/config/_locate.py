"""Find the line a TOML key was written on.

``tomllib`` returns plain dicts with no positions, so error messages would otherwise only name a
key. This scanner walks the text once, noting every table header and every ``key =`` line with
the full key path it defines. It understands quoted keys, dotted keys, arrays of tables (the
n-th ``[[providers]]`` is path ``("providers", n)``), multi-line strings and multi-line arrays,
which covers how people write config files. It is deliberately not a TOML parser: when it cannot
tell, it answers with the nearest enclosing header, or None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PathPart = str | int

_BARE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class _Entry:
    path: tuple[PathPart, ...]
    line: int


def _split_key(text: str) -> tuple[str, ...] | None:
    """Split a (possibly dotted, possibly quoted) TOML key; None if ``text`` is not a key."""
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            return None
        ch = text[i]
        if ch in "\"'":
            end = text.find(ch, i + 1)
            if end < 0:
                return None
            parts.append(text[i + 1 : end])
            i = end + 1
        else:
            m = _BARE.match(text, i)
            if not m:
                return None
            parts.append(m.group())
            i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            return tuple(parts)
        if text[i] != ".":
            return None
        i += 1


def _key_end(line: str) -> int:
    """Index of the ``=`` that ends the key part of ``line`` (outside quotes), or -1."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "=":
            return i
        elif ch == "#":
            return -1
    return -1


def _bracket_delta(text: str) -> tuple[int, str]:
    """Net ``[``/``{`` depth change over ``text`` ignoring strings and comments, and the
    multi-line string delimiter left open at the end of it (or "")."""
    depth = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith(('"""', "'''"), i):
            delim = text[i : i + 3]
            end = text.find(delim, i + 3)
            if end < 0:
                return depth, delim
            i = end + 3
            continue
        if ch in "\"'":
            end = i + 1
            while end < n and text[end] != ch:
                end += 2 if ch == '"' and text[end] == "\\" else 1
            i = end + 1
            continue
        if ch == "#":
            break
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth, ""


def scan(text: str) -> list[_Entry]:
    """Every header and key line of ``text`` with its resolved path (1-based line numbers)."""
    entries: list[_Entry] = []
    arrays: dict[tuple[PathPart, ...], int] = {}  # array-of-tables path -> last index
    table: tuple[PathPart, ...] = ()
    depth = 0  # open brackets of a multi-line value
    open_string = ""  # delimiter of a multi-line string we are inside
    for number, line in enumerate(text.splitlines(), start=1):
        if open_string:
            end = line.find(open_string)
            if end < 0:
                continue
            line = line[end + 3 :]
            open_string = ""
            delta, open_string = _bracket_delta(line)
            depth += delta
            continue
        if depth > 0:
            delta, open_string = _bracket_delta(line)
            depth = max(depth + delta, 0)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        header = re.match(r"^\[(\[?)(.*?)\](\]?)\s*(#.*)?$", stripped)
        if header and bool(header.group(1)) == bool(header.group(3)):
            key = _split_key(header.group(2))
            if key is not None:
                table = _resolve(key, arrays)
                if header.group(1):
                    index = arrays.get(table, -1) + 1
                    arrays[table] = index
                    table = (*table, index)
                entries.append(_Entry(table, number))
                continue
        eq = _key_end(line)
        if eq < 0:
            continue
        key = _split_key(line[:eq])
        if key is None:
            continue
        entries.append(_Entry((*table, *key), number))
        delta, open_string = _bracket_delta(line[eq + 1 :])
        depth = max(delta, 0)
    return entries


def _resolve(key: tuple[str, ...], arrays: dict[tuple[PathPart, ...], int]) -> tuple[PathPart, ...]:
    """Insert array-of-tables indices: ``[providers.headers]`` after the 2nd ``[[providers]]``
    resolves to ``("providers", 1, "headers")``."""
    resolved: list[PathPart] = []
    for position, part in enumerate(key):
        resolved.append(part)
        index = arrays.get(tuple(resolved))
        if index is not None and position < len(key) - 1:
            resolved.append(index)
    return tuple(resolved)


def locate(text: str, path: tuple[PathPart, ...]) -> int | None:
    """Line number (1-based) where ``path`` is defined in ``text``, or of the closest
    enclosing table or inline value that contains it; None if nothing matches."""
    best_line: int | None = None
    best_score = -1
    for entry in scan(text):
        if entry.path == path:
            return entry.line
        n = len(entry.path)
        if n < len(path) and path[:n] == entry.path:
            score = 2 * n  # an enclosing table or an inline table holding the key
        elif len(path) < n and entry.path[: len(path)] == path:
            score = 2 * len(path) - 1  # a dotted key inside the table we are looking for
        else:
            continue
        if score > best_score:
            best_score, best_line = score, entry.line
    return best_line
