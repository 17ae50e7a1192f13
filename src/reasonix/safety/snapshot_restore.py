"""Putting a workspace's files back to a snapshot of :mod:`reasonix.safety.checkpoints`.

The restorer writes only through real folders inside the workspace (a folder that became a
symlink is never written through), writes each file through a new temporary name (``O_EXCL``)
renamed into place, removes symlinks themselves and never what they point to, and leaves alone
what someone other than the agent changed (``keep``). It does not take the store's lock: the
manager holds it around a rewind (snapshot first, then restore)."""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from reasonix.safety.snapshot_git import _LINK, _rel, _Snapshot

#: (status, path, old mode, old blob, new mode, new blob): one row of ``_Store.diff``.
_Row = tuple[str, str, str, str, str, str]


class _Objects(Protocol):
    """What the restorer reads of the store (``checkpoints._Store``)."""

    workspace: Path

    def diff(self, old_tree: str, new_tree: str) -> list[_Row]: ...

    def blobs(self, shas: Sequence[str]) -> Iterator[tuple[str, bytes]]: ...


def _protected_recreation(workspace: Path, name: str) -> str | None:
    """Why a rewind may not recreate ``name``: it makes code run later outside the sandbox
    (:func:`reasonix.safety.protected.protection`), and a snapshot taken while a background job
    ran may hold the job's plant, which the job's guard undid since. Recreate it with the file
    tools, which ask."""
    from reasonix.safety.protected import protection

    real = Path(os.path.realpath(workspace))
    what = protection(real / name, real)
    if what is None:
        return None
    return (
        f"{what}; a rewind does not recreate what makes code run outside the sandbox, since "
        "a snapshot may hold a plant that was undone: write it again with the file tools"
    )


class _Restorer:
    """Puts the workspace's files back to a snapshot, never writing through a symlink."""

    def __init__(
        self,
        store: _Objects,
        target: _Snapshot,
        current: _Snapshot,
        keep: Iterable[str] = (),
        *,
        force: Iterable[str] = (),
    ) -> None:
        self.store = store
        self.ws = store.workspace
        self.target = target
        self.current = current
        #: Paths someone else changed since the agent's last snapshot: never touched.
        self.keep = frozenset(keep)
        #: Paths the user asked to put back whatever they hold now (``/rewind --force``).
        self.force = frozenset(force)
        self.kept: list[str] = []
        self.restored: list[str] = []
        self.recreated: list[str] = []
        self.removed: list[str] = []
        self.modes: list[str] = []
        self.failed: dict[str, str] = {}
        self.not_covered: dict[str, str] = {}
        self.removed_blobs: dict[str, str] = {}
        self.written_blobs: dict[str, str] = {}

    def run(self) -> None:
        rows = self.store.diff(self.current.tree, self.target.tree)
        self.kept = sorted(self._differing(rows) & self.keep)
        rows = [r for r in rows if r[1] not in self.keep]
        remove = [r for r in rows if r[0] == "D"]  # in the current tree, not in the target
        write = [r for r in rows if r[0] != "D"]
        self._remove_created(remove)
        self._write_all(self._pending(write))
        self._put_modes_back({r[1] for r in write if r[3] != r[5]})
        for name, why in self.target.skipped.items():
            self.not_covered.setdefault(name, why)

    def differing(self) -> set[str]:
        """Every path the restore would change (before ``keep``)."""
        return self._differing(self.store.diff(self.current.tree, self.target.tree))

    def _differing(self, rows: Sequence[_Row]) -> set[str]:
        """Every path whose content, type or permissions differ between the two snapshots."""
        moded = {*self.target.modes, *self.current.modes}
        return {r[1] for r in rows} | {
            n for n in moded if self.target.modes.get(n) != self.current.modes.get(n)
        }

    def _remove_created(self, remove: Sequence[_Row]) -> None:
        """Remove what was created since the target, deepest first, then the folders that
        emptied."""
        for _status, name, _old_mode, old_blob, *_ in sorted(
            remove, key=lambda r: r[1].count("/"), reverse=True
        ):
            if name in self.target.skipped:
                self.not_covered[name] = self.target.skipped[name]
                continue
            if self._remove(name):
                self.removed_blobs[name] = old_blob
        self._prune_dirs([r[1] for r in remove])

    def _pending(self, write: Sequence[_Row]) -> list[tuple[str, str, str, bool]]:
        """(name, mode, blob, created) of each file to write back; a change of permissions
        only is made at once, and what may not be written is noted in ``failed``."""
        pending: list[tuple[str, str, str, bool]] = []
        for status, name, old_mode, old_blob, new_mode, new_blob in write:
            if old_blob == new_blob and old_mode[:3] == new_mode[:3] == "100":
                self._chmod(name, self.target.modes.get(name, _canonical(new_mode)))
                continue
            if name in self.current.skipped and name not in self.force:
                self.failed[name] = (
                    f"its current version is not in any snapshot ({self.current.skipped[name]}),"
                    f" and restoring would lose it; `/rewind --force {shlex.quote(name)}` right "
                    "after this puts it back anyway"
                )
                continue
            if status == "A" and (why := _protected_recreation(self.ws, name)) is not None:
                self.failed[name] = why
                continue
            created = status == "A" and name not in self.current.skipped  # there, not stored
            pending.append((name, new_mode, new_blob, created))
        return pending

    def _write_all(self, pending: Sequence[tuple[str, str, str, bool]]) -> None:
        order = iter(pending)
        for _sha, data in self.store.blobs([p[2] for p in pending]):
            name, mode, blob, created = next(order)
            if self._write(name, mode, data, created):
                self.written_blobs[name] = blob

    def _put_modes_back(self, written: set[str]) -> None:
        """The target's exact permission bits on the files not written (those were written
        with them)."""
        left = written | self.keep
        for name, perms in self.target.modes.items():
            if name not in left and self.current.modes.get(name) != perms:
                self._chmod(name, perms)
        for name in self.current.modes:
            if name not in left and name not in self.target.modes:
                self._chmod(name, None)

    def renamed(self) -> list[tuple[str, str]]:
        """(now, restored) pairs: a file removed and a file recreated with the same content,
        which is what undoing ``mv a b`` looks like."""
        by_blob: dict[str, list[str]] = {}
        for name, blob in self.removed_blobs.items():
            by_blob.setdefault(blob, []).append(name)
        pairs = []
        for name in self.recreated:
            olds = by_blob.get(self.written_blobs.get(name, ""))
            if olds:
                pairs.append((olds.pop(0), name))
        return pairs

    def _unsafe_parent(self, name: str) -> str | None:
        """Why the folders leading to ``name`` cannot be written through, or None. Missing
        folders are created here as real folders."""
        parts = name.split("/")[:-1]
        folder = self.ws
        for part in parts:
            folder = folder / part
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                try:
                    os.mkdir(folder)
                except OSError as exc:
                    return f"cannot create the folder {_rel(folder, self.ws)}: {exc.strerror}"
                continue
            except OSError as exc:
                return f"cannot inspect {_rel(folder, self.ws)}: {exc.strerror}"
            if stat.S_ISLNK(st.st_mode):
                return (
                    f"the folder {_rel(folder, self.ws)} is now a symlink, and a rewind never "
                    "writes through one"
                )
            if not stat.S_ISDIR(st.st_mode):
                return f"{_rel(folder, self.ws)} is now a file, not a folder"
        return None

    def _remove(self, name: str) -> bool:
        path = self.ws / name
        if self._unsafe_parent_existing(name):
            self.failed[name] = "a folder on its path is now a symlink or a file"
            return False
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                return False  # a folder where the snapshot had a file: handled when writing
            os.unlink(path)  # a symlink itself, never what it points to
        except FileNotFoundError:
            return False
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return False
        self.removed.append(name)
        return True

    def _unsafe_parent_existing(self, name: str) -> bool:
        folder = self.ws
        for part in name.split("/")[:-1]:
            folder = folder / part
            try:
                st = os.lstat(folder)
            except OSError:
                return False
            if not stat.S_ISDIR(st.st_mode):
                return True
        return False

    def _prune_dirs(self, removed: list[str]) -> None:
        """Remove folders the removals emptied (the ones the snapshot has come back when its
        files are written)."""
        for folder in sorted(_parent_dirs(removed), key=lambda d: d.count("/"), reverse=True):
            path = self.ws / folder
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    path.rmdir()  # only when empty: what was not covered stays

    def _write(self, name: str, mode: str, data: bytes, created: bool) -> bool:
        why = self._unsafe_parent(name)
        if why is not None:
            self.failed[name] = why
            return False
        path = self.ws / name
        try:
            st: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            try:
                path.rmdir()
            except OSError:
                self.failed[name] = "a folder is in its place and still holds files"
                return False
        is_link = int(mode, 8) == _LINK
        perms = self.target.modes.get(name, _canonical(mode))
        try:
            _place(path, data, is_link, perms)
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return False
        (self.recreated if created else self.restored).append(name)
        return True

    def _chmod(self, name: str, perms: int | None) -> None:
        path = self.ws / name
        if self._unsafe_parent_existing(name):
            return
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                return
            if perms is None:
                perms = 0o755 if st.st_mode & 0o100 else 0o644
            if stat.S_IMODE(st.st_mode) != perms:
                os.chmod(path, perms)
                self.modes.append(name)
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)


def _place(path: Path, data: bytes, is_link: bool, perms: int) -> None:
    """Write ``path`` through a new temporary name in its folder (O_EXCL, so a symlink planted
    at a fixed name cannot catch the write), then rename it into place."""
    folder = path.parent
    if is_link:
        for _ in range(100):
            tmp = folder / f".{path.name[:100]}.{os.urandom(6).hex()}.reasonix-restore"
            try:
                os.symlink(os.fsdecode(data), tmp)
                break
            except FileExistsError:
                continue
        else:
            raise OSError("no free temporary name")
        os.replace(tmp, path)
        return
    fd, name = tempfile.mkstemp(
        prefix=f".{path.name[:100]}.", suffix=".reasonix-restore", dir=folder
    )
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), perms)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _canonical(mode: str) -> int:
    return 0o755 if int(mode, 8) & 0o111 else 0o644


def _parent_dirs(names: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for name in names:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]))
    return out
