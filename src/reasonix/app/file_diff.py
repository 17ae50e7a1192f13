"""``/diff``'s text: the changes between two snapshots as one unified diff with a summary line
(files changed, lines added and removed), the way ``git diff`` shows them. A binary file (a
NUL byte, or not UTF-8) is named, not printed; a symlink shows its target."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from reasonix.safety.checkpoints import FileChange

__all__ = ["render_changes"]


def _text(data: bytes | None) -> list[str] | None:
    """The lines of ``data`` (none for a missing side), or None when it is binary."""
    if data is None:
        return []
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def _one(change: FileChange) -> tuple[list[str], int, int]:
    """The diff lines of one path, and its added and removed line counts."""
    old = f"a/{change.path}" if change.before is not None else "/dev/null"
    new = f"b/{change.path}" if change.after is not None else "/dev/null"
    head = [f"diff --git a/{change.path} b/{change.path}"]
    if change.before is None:
        head.append("new " + ("symlink" if change.link_after else "file"))
    elif change.after is None:
        head.append("deleted " + ("symlink" if change.link_before else "file"))
    elif change.link_before != change.link_after:
        head.append("type changed: " + ("symlink" if change.link_after else "file"))
    before, after = _text(change.before), _text(change.after)
    if before is None or after is None:
        return [*head, f"Binary files {old} and {new} differ"], 0, 0
    body = list(difflib.unified_diff(before, after, old, new, lineterm=""))
    added = sum(1 for line in body[2:] if line.startswith("+"))
    removed = sum(1 for line in body[2:] if line.startswith("-"))
    if not body:  # the same text: only the type or a trailing newline changed
        body = [f"--- {old}", f"+++ {new}", "(no line changed)"]
    return [*head, *body], added, removed


def render_changes(changes: Sequence[FileChange]) -> tuple[str, str]:
    """``(summary, diff)`` for ``changes``: ``3 files changed, 4 insertions(+), 1
    deletion(-)`` and the unified diff of every path, in order."""
    lines: list[str] = []
    added = removed = 0
    for change in changes:
        body, plus, minus = _one(change)
        lines += body
        added, removed = added + plus, removed + minus
    count = len(changes)
    summary = f"{count} file{'s' if count != 1 else ''} changed"
    summary += f", {added} insertion{'s' if added != 1 else ''}(+)"
    summary += f", {removed} deletion{'s' if removed != 1 else ''}(-)"
    return summary, "\n".join(lines)
