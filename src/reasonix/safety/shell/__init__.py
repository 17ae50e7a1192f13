"""What a shell command does, computed once from the parsed line, and the views over it.

:mod:`~reasonix.safety.shell.readers` is the table of programs that only read, and how each
takes its options; :func:`read_only_obstacle` says why a command line is not proved read-only
(or None when it is). Two views read it: the permission decision allows a proved read-only
command in ``ask`` and ``auto-edit`` mode without asking (:func:`proved_read_only`), and the
snapshots skip a command that changes nothing (:func:`snapshot_skippable`, the same proof
without the question of where it reads: every proved read-only command is skippable).
"""

from __future__ import annotations

from reasonix.safety.shell.readers import (
    proved_read_only,
    read_only_obstacle,
    snapshot_skippable,
)

__all__ = ["proved_read_only", "read_only_obstacle", "snapshot_skippable"]
