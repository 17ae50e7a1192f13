"""Undoing what a confined call planted among the protected paths (:mod:`reasonix.safety.protected`
is the list; this is the undo): :class:`CreationGuard`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import stat
import subprocess
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.safety.environment import QUIET_GIT
from reasonix.safety.git_repository import git_dir_obstacle, has_hooks
from reasonix.safety.protected import protected_paths

if TYPE_CHECKING:
    from reasonix.safety.index_check import Before


@dataclass(eq=False)
class CreationGuard:
    """The state of the protected paths before a confined call; :meth:`finish` removes those
    the call created (a ``.git`` only when that repository names a program or holds a hook:
    ``git init`` stays), restores a symlink among them it changed, takes the git folder away
    from a repository the call embedded in the index that names a program, and says what it
    undid, for the tool result.

    A background job's guard (``lasting``) lives as long as the job: a file tool's approved write
    of a protected path meanwhile (:func:`approved_write`) is kept with exactly the approved
    bytes; the job's other creations around it are still undone. With ``record_dir`` the guard
    keeps a record there so another session in the folder can tell, while the job runs (or after
    it ended without the undo), which protected files it may have planted
    (:func:`running_plants`: the trust decision treats such a folder as untrusted)."""

    roots: tuple[Path, ...]
    absent: list[Path] = field(default_factory=list)
    links: dict[Path, str] = field(default_factory=dict)
    approved: dict[Path, bytes] = field(default_factory=dict)
    record: Path | None = None
    #: each root's index as it was (stat), to notice a gitlink the call added
    indexes: dict[Path, tuple[int, int, int, int] | None] = field(default_factory=dict)
    #: each root's index as it was, to tell which entries the call changed
    index_before: dict[Path, Before] = field(default_factory=dict)
    began_ns: int = 0
    #: the job's own process (its supervisor), which a kept job outlives the session with
    job_pid: int | None = None

    @classmethod
    def start(
        cls, roots: Sequence[Path], *, lasting: bool = False, record_dir: Path | None = None
    ) -> CreationGuard:
        """Record which protected paths are absent and which are symlinks."""
        guard = cls(tuple(Path(os.path.realpath(r)) for r in roots))
        guard.began_ns = time.time_ns()
        for root in guard.roots:
            guard.indexes[root] = _index_stat(root)
            guard.index_before[root] = _index_before(root)
            for path in protected_paths(root):
                if path.is_symlink():
                    guard.links[path] = os.readlink(path)
                elif not os.path.lexists(path):
                    guard.absent.append(path)
        if lasting:
            _LASTING.add(guard)
        if record_dir is not None and guard.absent:
            guard.record = record_dir / f"{os.getpid()}-{secrets.token_hex(6)}.json"
            guard._write_record()
        return guard

    def started(self, job_pid: int) -> None:
        """The job this guard watches runs as ``job_pid``: its record lasts while it does."""
        self.job_pid = job_pid
        self._write_record()

    def approve(self, path: Path, data: bytes) -> None:
        """A file tool was approved to write ``data`` to ``path``: keep it at :meth:`finish`."""
        if any(path.is_relative_to(p) for p in self.absent):
            self.approved[path] = data
            self._write_record()

    def finish(self) -> list[str]:
        """Undo what the call created among the protected paths; the names of what was undone."""
        _LASTING.discard(self)
        undone: list[str] = []
        kept: set[Path] = set()
        for path in self.absent:
            if path.parent in kept or path.parent.is_symlink() or not os.path.lexists(path):
                continue
            if self._undo_created(path, kept):
                undone.append(self._name(path))
        for root in self.roots:
            if _index_changed(root, self.indexes.get(root), self.began_ns) and _readable_index(
                root
            ):
                undone += [self._name(p) for p in _embedded_plants(root, self.began_ns)]
                from reasonix.safety.index_check import Before, unmask

                forged = unmask(root, self.index_before.get(root, Before()), _git)
                undone += [f"the index's entry of {name}" for name in forged]
        for path, target in self.links.items():
            if not (path.is_symlink() and os.readlink(path) == target):
                if os.path.lexists(path):
                    _remove(path)
                os.symlink(target, path)
                undone.append(self._name(path))
        if self.record is not None:
            self.record.unlink(missing_ok=True)
        return undone

    def _undo_created(self, path: Path, kept: set[Path]) -> bool:
        """Remove ``path``, which the call created (keeping what a file tool was approved to
        write there); whether anything of it was undone. A repository the command made is
        kept (in ``kept``) unless it names a program."""
        if (
            path.name == ".git"
            and not path.is_symlink()
            and path.is_dir()
            and git_dir_obstacle(path) is None
            and not has_hooks(path)
        ):
            kept.add(path)
            return False
        if path.name in ("modules", "worktrees") and not _offending(path, path.parent):
            return False
        if _empty_folder(path):  # the stand-in of a hooks folder (bind_arguments)
            with contextlib.suppress(OSError):
                path.rmdir()
            return False
        keep = {p: d for p, d in self.approved.items() if p.is_relative_to(path)}
        if keep:
            return _prune(path, keep)
        _remove(path)
        return True

    def _name(self, path: Path) -> str:
        for root in self.roots:
            if path.is_relative_to(root):
                return str(path.relative_to(root))
        return str(path)

    def _write_record(self) -> None:
        if self.record is None:
            return
        data = {
            "pid": os.getpid(),
            "job": self.job_pid,
            "absent": [str(p) for p in self.absent],
            "approved": {str(p): hashlib.sha256(d).hexdigest() for p, d in self.approved.items()},
        }
        try:
            self.record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.record.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh)
            os.replace(tmp, self.record)
        except OSError:
            pass  # a session without the record only loses the cross-session check


def _empty_folder(path: Path) -> bool:
    try:
        if path.is_symlink() or not path.is_dir():
            return False
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _index_stat(root: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(root / ".git" / "index")
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _index_before(root: Path) -> Before:
    from reasonix.safety.index_check import before  # not on the prompt's path

    return before(root)


def _readable_index(root: Path) -> bool:
    """Whether ``root``'s index is a regular file (through a symlink too): a FIFO left in its
    place would block every git command that opens it, ours for a minute each."""
    try:
        return stat.S_ISREG(os.stat(root / ".git" / "index").st_mode)
    except OSError:
        return False


def _index_changed(root: Path, before: tuple[int, int, int, int] | None, since_ns: int) -> bool:
    """Whether the call may have written ``root``'s index: its stat changed, or its change
    time is too close to the call's start to tell (file times tick coarsely; a writer can set
    the mtime back, never the ctime)."""
    now = _index_stat(root)
    return now != before or (now is not None and now[3] >= since_ns - _TICK_NS)


#: How coarse file times may be (the kernel's clock tick, at most 10 ms).
_TICK_NS = 10_000_000


def _embedded_plants(root: Path, since_ns: int) -> list[Path]:
    """Remove the git folders of repositories embedded in ``root``'s index (gitlinks to a
    folder holding its own ``.git`` folder) that were made or changed since ``since_ns`` and
    name a program or hold a hook: the user's ``git status`` recurses into them and obeys their
    configuration. The git folders removed."""
    removed = []
    for entry in _git(root, "ls-files", "--stage", "-z").split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if not meta.startswith(b"160000"):
            continue
        nested = root / os.fsdecode(name) / ".git"
        try:
            info = os.lstat(nested)
        except OSError:
            continue
        outside = not Path(os.path.realpath(nested)).is_relative_to(root)
        if not stat.S_ISDIR(info.st_mode) or outside:
            continue
        changed = max(info.st_ctime_ns, _newest(nested)) >= since_ns
        if changed and (git_dir_obstacle(nested) is not None or has_hooks(nested)):
            _remove(nested)
            removed.append(nested)
    return removed


def _git(root: Path, *args: str, stdin: bytes = b"", index: Path | None = None) -> bytes:
    """``git ARGS`` over ``root``'s repository on the host (with ``index`` for its index),
    obeying nothing of its configuration that runs a program (hooks, fsmonitor); b"" when it
    fails."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull}  # fmt: skip
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    try:
        proc = subprocess.run(
            ["git", *QUIET_GIT, "--git-dir", str(root / ".git"), "--work-tree", str(root), *args],
            env=env,
            cwd=root, input=stdin, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return b""
    return proc.stdout if proc.returncode == 0 else b""


def _newest(git_dir: Path) -> int:
    """The latest change time of the files that decide what a git folder runs."""
    newest = 0
    for name in ("config", "config.worktree", "hooks"):
        try:
            newest = max(newest, os.lstat(git_dir / name).st_ctime_ns)
        except OSError:
            continue
    return newest


def _prune(path: Path, keep: dict[Path, bytes]) -> bool:
    """Remove what lies at or below ``path`` except the files in ``keep``, and give each of
    those exactly its approved bytes; whether anything was undone."""
    changed = False
    if path in keep:
        try:
            same = not path.is_symlink() and path.is_file() and path.read_bytes() == keep[path]
        except OSError:
            same = False
        if not same:
            _remove(path)
            _write_new(path, keep[path])
        return not same
    if path.is_symlink() or not path.is_dir():
        _remove(path)
        return True
    for entry in list(os.scandir(path)):
        child = Path(entry.path)
        if child in keep or any(k.is_relative_to(child) for k in keep):
            changed = _prune(child, keep) or changed
        else:
            _remove(child)
            changed = True
    for kept in keep:
        if kept.parent == path and not os.path.lexists(kept):
            _write_new(kept, keep[kept])
            changed = True
    return changed


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (never through a symlink, never over a file) holding ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


#: The guards of background jobs still running.
_LASTING: weakref.WeakSet[CreationGuard] = weakref.WeakSet()


def approved_write(path: Path, data: bytes) -> None:
    """A file tool wrote ``data`` to ``path`` with the user's approval (or in yolo mode): a
    running job's guard keeps exactly that when the job ends."""
    real = Path(os.path.realpath(path))
    for guard in list(_LASTING):
        guard.approve(real, data)


def running_plants(record_dir: Path, folder: Path) -> list[str]:
    """Protected paths below ``folder`` that a background job may have created and no guard
    undid: the job still runs (in any session whose guards keep their records in
    ``record_dir``; a kept job after its session too), or it ended without the undo (its agent
    was killed). Each was absent when the job started and exists now, other than as a file
    tool's approved write. A record whose processes are gone and whose paths are all absent is
    removed; one with paths left stays until they are removed (or the record is deleted)."""
    base = Path(os.path.realpath(folder))
    found: list[str] = []
    try:
        records = sorted(record_dir.glob("*.json"))
    except OSError:
        return []
    for record in records:
        try:
            data = json.loads(record.read_text())
            pids = [int(data["pid"]), *([int(data["job"])] if data.get("job") else [])]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        approved = data.get("approved") or {}
        left = [
            Path(str(t))
            for t in data.get("absent") or []
            if os.path.lexists(str(t)) and not _only_approved(Path(str(t)), approved)
        ]
        if not left and not any(_alive(pid) for pid in pids):
            record.unlink(missing_ok=True)
            continue
        for path in left:
            if not path.is_relative_to(base):
                continue
            found.append(path.relative_to(base).as_posix() if path != base else ".")
    return sorted(set(found))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _only_approved(path: Path, approved: dict[str, str]) -> bool:
    """Whether all that lies at or below ``path`` is approved writes with their bytes."""
    try:
        if path.is_symlink():
            return False
        if path.is_file():
            want = approved.get(str(path))
            return want is not None and hashlib.sha256(path.read_bytes()).hexdigest() == want
        for here, dirs, files in os.walk(path):
            for name in files:
                if not _only_approved(Path(here) / name, approved):
                    return False
            for name in dirs:
                if (Path(here) / name).is_symlink():
                    return False
    except OSError:
        return False
    return True


def _offending(folder: Path, git_dir: Path) -> bool:
    """Whether a git folder below ``folder`` (a submodule's, a linked worktree's) names a
    program, holds a hook, or points at a configuration other than ``git_dir``'s."""
    for here_text, dirs, files in os.walk(folder):
        here = Path(here_text)
        if "config" in files and git_dir_obstacle(here) is not None:
            return True
        if "hooks" in dirs and has_hooks(here):
            return True
        if "commondir" in files:
            try:
                common = (here / "commondir").read_text(errors="replace").strip()
            except OSError:
                return True
            if Path(os.path.realpath(here / common)) != Path(os.path.realpath(git_dir)):
                return True
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
    return False


def _remove(path: Path) -> None:
    """Remove ``path`` without following a symlink out of the workspace."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)
