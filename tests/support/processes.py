"""Looking up a test's own processes in ``/proc`` (Linux): which of its descendants run a
given program, and whether a pid still names a live process."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def _parents() -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                # the command name may hold spaces and parentheses: the fields follow the last ")"
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                out[int(entry.name)] = int(fields[1])
    return out


def descendants(pid: int | None = None) -> set[int]:
    """Every live process below ``pid`` (default: this one)."""
    top = os.getpid() if pid is None else pid
    parents = _parents()
    found: set[int] = set()
    frontier = {top}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def command_line(pid: int) -> str:
    """The process's arguments joined by spaces ("" when it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
