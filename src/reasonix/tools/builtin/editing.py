"""Text decoding and the search-and-replace engine behind ``edit_file`` and ``multi_edit``.

Pure functions, no I/O, so the matching rules can be tested and benchmarked on their own.

Matching, in order:

1. **Exact.** ``old`` occurs once: replace it. More than once: refused with the line numbers of
   every occurrence, unless ``replace_all``.
2. **Whitespace-tolerant.** No exact occurrence: compare whole lines with leading and trailing
   whitespace ignored (so indentation drift, tabs vs spaces, trailing spaces and CRLF do not
   matter). Exactly one window of lines must match; several are refused as ambiguous. Because
   this is the most tolerant comparison there is, a unique match here is the only place the
   model can have meant, whatever whitespace it got wrong. The replacement is re-indented to the
   file's own indentation, and lines the edit leaves unchanged keep their exact original bytes.
3. **Miss.** Refused, showing the closest lines so the model can correct itself.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
_SNIFF = 8192


class EditError(Exception):
    """An edit that cannot be applied; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class TextFile:
    """Decoded file text plus what is needed to write it back byte-for-byte the same way.

    ``text`` uses ``\\n`` line endings when the file consistently used ``\\r\\n`` (then
    ``newline`` is ``"\\r\\n"``); a file with mixed endings is kept as it is.
    """

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"

    def encode(self, text: str) -> bytes:
        """Bytes for ``text`` in this file's encoding, BOM and line-ending style."""
        if self.newline == "\r\n":
            text = text.replace("\n", "\r\n")
        try:
            return self.bom + text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise EditError(
                f"The file is stored as {self.encoding}, which cannot hold "
                f"{exc.object[exc.start : exc.end]!r}. Use characters that encoding can hold."
            ) from exc


def decode_text(data: bytes) -> TextFile | None:
    """Decode file bytes, or None when they look binary."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError:
                return None
            return _with_newlines(text, encoding, bom)
    head = data[:_SNIFF]
    if b"\x00" in head:
        return None
    try:
        return _with_newlines(data.decode("utf-8"), "utf-8", b"")
    except UnicodeDecodeError:
        pass
    # Not UTF-8: accept it as Latin-1 (which round-trips every byte) only when it reads like
    # text, i.e. almost no control characters.
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    if head and controls / len(head) > 0.05:
        return None
    return _with_newlines(data.decode("latin-1"), "latin-1", b"")


def _with_newlines(text: str, encoding: str, bom: bytes) -> TextFile:
    crlf = text.count("\r\n")
    if crlf and crlf == text.count("\n"):
        return TextFile(text.replace("\r\n", "\n"), encoding, bom, "\r\n")
    return TextFile(text, encoding, bom, "\n")


def describe_binary(data: bytes) -> str:
    """A one-line guess at what binary data is."""
    signatures = (
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "ZIP archive (also docx/xlsx/jar/wheel)"),
        (b"\x1f\x8b", "gzip data"),
        (b"\x7fELF", "ELF executable or library"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"RIFF", "RIFF media (WAV/AVI/WebP)"),
        (b"\x00asm", "WebAssembly module"),
    )
    for magic, label in signatures:
        if data.startswith(magic):
            return label
    return "binary data"


# ---------------------------------------------------------------------------------------------
# Replacing


@dataclass(frozen=True, slots=True)
class EditOutcome:
    """The text after an edit, how many places changed, and how the match was made."""

    text: str
    count: int
    how: str  # "exact" | "whitespace-tolerant" | "created"
    first_line: int


def line_of(text: str, offset: int) -> int:
    """1-based line number of a character offset."""
    return text.count("\n", 0, offset) + 1


def _positions(text: str, needle: str) -> list[int]:
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def apply_edit(text: str, old: str, new: str, *, replace_all: bool = False) -> EditOutcome:
    """Replace ``old`` with ``new`` in ``text`` by the rules in the module docstring.

    Raises :class:`EditError` for a miss, an ambiguous match or a no-op edit.
    """
    old = old.replace("\r\n", "\n")
    new = new.replace("\r\n", "\n")
    if old == new:
        raise EditError("old_string and new_string are identical; there is nothing to change.")
    if old == "":
        if text == "":
            return EditOutcome(new, 1, "created", 1)
        raise EditError(
            "old_string is empty. Give the exact text to replace (with a few surrounding lines "
            "so it is unique), or use write_file to replace the whole file."
        )
    positions = _positions(text, old)
    if len(positions) == 1 or (positions and replace_all):
        if replace_all:
            return EditOutcome(
                text.replace(old, new), text.count(old), "exact", line_of(text, positions[0])
            )
        at = positions[0]
        return EditOutcome(text[:at] + new + text[at + len(old) :], 1, "exact", line_of(text, at))
    if positions:
        lines = sorted({line_of(text, p) for p in positions})
        raise EditError(
            f"old_string occurs {len(positions)} times (lines {_list_lines(lines)}). Include "
            "more surrounding lines so it matches one place, or set replace_all to change all."
        )
    return _apply_tolerant(text, old, new, replace_all=replace_all)


def _list_lines(lines: list[int], limit: int = 20) -> str:
    shown = ", ".join(str(n) for n in lines[:limit])
    return shown + (f", … ({len(lines) - limit} more)" if len(lines) > limit else "")


def _key(line: str) -> str:
    return line.strip()


def _real_lines(text: str) -> list[str]:
    """Lines without their ``\\n``; no phantom empty line after a final newline."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _find_windows(file_keys: list[str], old_keys: list[str]) -> list[int]:
    n = len(old_keys)
    first = old_keys[0]
    return [
        i
        for i in range(len(file_keys) - n + 1)
        if file_keys[i] == first and file_keys[i : i + n] == old_keys
    ]


def _apply_tolerant(text: str, old: str, new: str, *, replace_all: bool) -> EditOutcome:
    file_lines = _real_lines(text)
    old_lines = _real_lines(old)
    if not old_lines or all(not ln.strip() for ln in old_lines):
        raise EditError("old_string was not found, and it holds only whitespace.")
    file_keys = [_key(ln) for ln in file_lines]
    old_keys = [_key(ln) for ln in old_lines]
    starts = _find_windows(file_keys, old_keys)
    if not starts:
        raise EditError(_miss_message(file_lines, file_keys, old_keys))
    n = len(old_lines)
    if len(starts) > 1 and not replace_all:
        raise EditError(
            f"old_string was not found exactly; ignoring whitespace it matches {len(starts)} "
            f"places (lines {_list_lines([s + 1 for s in starts])}). Copy the exact text from "
            "read_file and include more surrounding lines so it matches one place."
        )
    chosen: list[int] = []
    for s in starts:  # replace_all: non-overlapping, first come first served
        if not chosen or s >= chosen[-1] + n:
            chosen.append(s)
    new_lines = [] if new == "" else new.split("\n")
    if new_lines and new.endswith("\n") and old.endswith("\n"):
        new_lines.pop()
    ends_with_newline = text.endswith("\n")
    out = list(file_lines)
    for s in reversed(chosen):
        region = file_lines[s : s + n]
        out[s : s + n] = _rebuild_region(region, old_lines, new_lines, s + 1)
    result = "\n".join(out)
    if ends_with_newline and out:
        result += "\n"
    return EditOutcome(result, len(chosen), "whitespace-tolerant", chosen[0] + 1)


def _rebuild_region(
    region: list[str], old_lines: list[str], new_lines: list[str], first_line: int
) -> list[str]:
    """The file's lines for ``region`` after the edit: unchanged lines keep their original bytes,
    changed lines are re-indented to the file's style."""
    crlf = sum(1 for ln in region if ln.endswith("\r")) * 2 > len(region)
    reindent = _indent_mapper(old_lines, region, first_line)
    # If the model's trailing whitespace differs from the file's, its trailing whitespace is
    # noise; otherwise (e.g. Markdown hard breaks) keep what it wrote.
    trailing_drift = any(
        _trail(o) != _trail(f.removesuffix("\r")) for o, f in zip(old_lines, region, strict=True)
    )
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            out.extend(region[a1:a2])
            continue
        for line in new_lines[b1:b2]:
            if trailing_drift:
                line = line.rstrip(" \t")
            body = line.lstrip(" \t")
            # Whitespace-only lines carry no indentation worth keeping.
            fixed = reindent(line[: len(line) - len(body)]) + body if body.strip() else ""
            out.append(fixed + "\r" if crlf and not fixed.endswith("\r") else fixed)
    return out


def _trail(line: str) -> str:
    return line[len(line.rstrip(" \t")) :]


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_mapper(
    old_lines: list[str], region: list[str], first_line: int
) -> Callable[[str], str]:
    """A function turning the model's indentation into the file's, learned from the matched
    pairs of lines; raises :class:`EditError` for an indentation it cannot place."""
    pairs = [(_lead(o), _lead(f)) for o, f in zip(old_lines, region, strict=True) if o.strip()]
    direct: dict[str, str] = {}
    consistent = True
    for o, f in pairs:
        if direct.setdefault(o, f) != f:
            consistent = False
    strategies: list[Callable[[str], str | None]] = []
    if consistent:
        strategies.append(direct.get)
    prefix_added = _common_prefix_delta(pairs)
    if prefix_added is not None:
        strategies.append(lambda ws: prefix_added + ws)
    prefix_removed = _common_prefix_delta([(f, o) for o, f in pairs])
    if prefix_removed is not None:
        cut = prefix_removed
        strategies.append(lambda ws: ws[len(cut) :] if ws.startswith(cut) else None)
    for width in (4, 8, 2):
        columns = _column_mapper(pairs, width)
        if columns is not None:
            strategies.append(columns)

    def reindent(ws: str) -> str:
        for strategy in strategies:
            mapped = strategy(ws)
            if mapped is not None:
                return mapped
        raise EditError(
            f"old_string matched at line {first_line} once whitespace is ignored, but the "
            "indentation of new_string cannot be mapped onto the file's. Copy old_string exactly "
            "from read_file, with the file's own indentation."
        )

    return reindent


def _common_prefix_delta(pairs: list[tuple[str, str]]) -> str | None:
    """The P for which every pair is ``(x, P + x)``, or None."""
    delta: str | None = None
    for short, long in pairs:
        if not long.endswith(short):
            return None
        candidate = long[: len(long) - len(short)]
        if delta is None:
            delta = candidate
        elif candidate != delta:
            return None
    return delta


def _width(ws: str, tab: int) -> int:
    return len(ws.expandtabs(tab))


def _column_mapper(pairs: list[tuple[str, str]], tab: int) -> Callable[[str], str | None] | None:
    """Map by visual column (tabs ``tab`` wide) when the column shift is constant and the file's
    indentation is all tabs or all spaces."""
    file_ws = [f for _, f in pairs if f]
    if all(set(f) <= {"\t"} for f in file_ws):
        use_tabs = bool(file_ws)
    elif all(set(f) <= {" "} for f in file_ws):
        use_tabs = False
    else:
        return None
    shifts = {_width(f, tab) - _width(o, tab) for o, f in pairs}
    if len(shifts) > 1:
        return None
    shift = shifts.pop() if shifts else 0

    def render(ws: str) -> str | None:
        col = _width(ws, tab) + shift
        if col < 0:
            return None
        if use_tabs:
            return "\t" * (col // tab) + " " * (col % tab)
        return " " * col

    if any(render(o) != f for o, f in pairs):
        return None
    return render


# ---------------------------------------------------------------------------------------------
# Messages


_WORD = re.compile(r"\w+")


def _miss_message(file_lines: list[str], file_keys: list[str], old_keys: list[str]) -> str:
    n = len(old_keys)
    best = _closest_windows(file_keys, old_keys)
    parts = [
        "old_string was not found in the file, not even ignoring indentation and trailing "
        "whitespace."
    ]
    if best:
        parts.append("Closest lines in the file:")
        for start in best:
            end = min(len(file_lines), start + max(n, 1))
            shown = file_lines[start : min(end, start + 12)]
            parts.extend(f"{start + k + 1:>6}\t{ln.rstrip(chr(13))}" for k, ln in enumerate(shown))
            parts.append("")
    parts.append("Read the file again and copy old_string exactly.")
    return "\n".join(parts).strip()


def _closest_windows(file_keys: list[str], old_keys: list[str], count: int = 2) -> list[int]:
    """Start lines of the windows most like ``old_keys``: scored first by lines equal ignoring
    whitespace, then by shared words, so the cost stays linear in the file size."""
    n = len(old_keys)
    if not file_keys:
        return []
    old_words = [set(_WORD.findall(k)) for k in old_keys]
    line_scores: dict[tuple[int, int], float] = {}

    def score_line(i: int, j: int) -> float:
        cached = line_scores.get((i, j))
        if cached is None:
            key = file_keys[i]
            if key == old_keys[j]:
                cached = 2.0
            elif old_words[j]:
                words = set(_WORD.findall(key))
                cached = len(words & old_words[j]) / len(words | old_words[j]) if words else 0.0
            else:
                cached = 0.0
            line_scores[(i, j)] = cached
        return cached

    limit = max(1, len(file_keys) - n + 1)
    if len(file_keys) * n > 400_000:
        # Very large file and long old_string: score the first old line only.
        scores = [(score_line(i, 0), i) for i in range(limit)]
    else:
        scores = [
            (sum(score_line(i + j, j) for j in range(min(n, len(file_keys) - i))), i)
            for i in range(limit)
        ]
    scores.sort(key=lambda s: (-s[0], s[1]))
    picked: list[int] = []
    for score, i in scores:
        if score <= 0 or len(picked) >= count:
            break
        if all(abs(i - p) >= max(n, 1) for p in picked):
            picked.append(i)
    return picked


def unified_diff(before: str, after: str, path: str, *, max_lines: int = 60) -> str:
    """A short unified diff, capped at ``max_lines`` lines with a note of what was left out."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            f"a/{path}",
            f"b/{path}",
            n=2,
            lineterm="",
        )
    )
    if len(lines) > max_lines:
        left = len(lines) - max_lines
        lines = [*lines[:max_lines], f"[... {left} more diff lines not shown ...]"]
    return "\n".join(lines)
