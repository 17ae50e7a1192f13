"""The git plumbing shared by the snapshot store and its parts (:mod:`reasonix.safety.checkpoints`,
:mod:`reasonix.safety.snapshot_seed`, :mod:`reasonix.safety.snapshot_restore`): the settings
every git call of the store runs with, a snapshot's record, and small helpers."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonix.safety.environment import QUIET_GIT

_SNAPSHOT_LINE = "reasonix snapshot"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "reasonix",
    "GIT_AUTHOR_EMAIL": "reasonix@localhost",
    "GIT_COMMITTER_NAME": "reasonix",
    "GIT_COMMITTER_EMAIL": "reasonix@localhost",
    # A fixed date: an unchanged tree gives the same commit, so repeated snapshots add nothing.
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
#: Settings passed on every call, whatever the store's own config file says.
_GIT_FLAGS = (
    *QUIET_GIT,
    "-c", "core.untrackedCache=false",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.symlinks=true",
    "-c", "core.filemode=true",
    "-c", "core.ignorecase=false",
    "-c", "core.quotepath=false",
    "-c", "core.splitIndex=false",
    # A snapshot's quick look trusts git's stat comparison: every field of it, always.
    "-c", "core.trustctime=true",
    "-c", "core.checkStat=default",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "safe.directory=*",
)  # fmt: skip
#: The snapshot store's own: its index in two parts, so that a step rewrites only the small one
#: (at 50,000 files the whole index is 4 MB, written and hashed twice a step otherwise).
_STORE_FLAGS = (*_GIT_FLAGS, "-c", "core.splitIndex=true")
#: Unset every attribute that would make the stored bytes differ from the file's bytes; the
#: store's ``info/attributes`` outranks the workspace's ``.gitattributes``.
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding -diff -merge\n"
_LINK = 0o120000


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """A snapshot's content: the git tree, exact permission bits that git does not keep
    (anything but 0644/0755), the paths it could not cover, with why, and the stat (size,
    mtime, ctime, inode) of each file skipped for its size, so a rewind can tell that such a
    file is still as the agent left it."""

    tree: str
    modes: Mapping[str, int] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(default_factory=dict)
    stats: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def message(self) -> str:
        meta: dict[str, object] = {
            "modes": dict(sorted(self.modes.items())),
            "skipped": dict(self.skipped),
        }
        if self.stats:
            meta["stats"] = {k: list(v) for k, v in self.stats.items()}
        return f"{_SNAPSHOT_LINE}\n\n{json.dumps(meta, sort_keys=True)}\n"

    @classmethod
    def parse(cls, tree: str, message: str) -> _Snapshot:
        _, _, body = message.partition("\n\n")
        try:
            meta = json.loads(body) if body.strip() else {}
        except json.JSONDecodeError:
            meta = {}
        modes = {str(k): int(v) for k, v in dict(meta.get("modes", {})).items()}
        skipped = {str(k): str(v) for k, v in dict(meta.get("skipped", {})).items()}
        stats = {str(k): tuple(int(x) for x in v) for k, v in dict(meta.get("stats", {})).items()}
        return cls(tree, modes, skipped, stats)


class _GitError(Exception):
    pass


def _escape_pattern(text: str) -> str:
    return re.sub(r"([*?\[\]\\!#])", r"\\\1", text)


def _feed(pipe: Any, shas: Sequence[str]) -> None:
    try:
        for sha in shas:
            pipe.write(sha.encode() + b"\n")
        pipe.close()
    except OSError:
        pass


def fed_git(
    args: Sequence[str], cwd: Path, env: Mapping[str, str], lines: Sequence[str]
) -> tuple[subprocess.Popen[bytes], threading.Thread]:
    """``git ARGS`` reading ``lines`` (one per line) from a thread while the caller reads its
    output (a large input would fill the pipe otherwise); join the thread, close stdout and
    wait for the process when done."""
    proc = subprocess.Popen(
        ["git", *args],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, lines), daemon=True)
    feeder.start()
    return proc, feeder


def _nul(names: Iterable[str]) -> bytes:
    return b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in names)


def _rel(path: Path, ws: Path) -> str:
    try:
        return path.relative_to(ws).as_posix()
    except ValueError:
        return str(path)
