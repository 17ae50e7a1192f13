"""Putting a workspace's files back to a snapshot of :mod:`reasonix.safety.checkpoints`.

The restorer writes only through real folders inside the workspace (a folder that became a
symlink is never written through): every write, removal and change of permissions is made
relative to a folder descriptor opened from the workspace root down, one component at a time
with ``O_NOFOLLOW``, so a folder swapped for a symlink after a check is never resolved again by
path (attacker5 B9). It writes each file through a new temporary name (``O_EXCL``) renamed into
place, removes symlinks themselves and never what they point to, and leaves alone
what someone other than the agent changed (``keep``). It does not take the store's lock: the
manager holds it around a rewind (snapshot first, then restore)."""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from reasonix.safety.snapshot_git import _LINK, _Snapshot
from reasonix.safety.snapshot_scan import repositories

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
        nested: bool = True,
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
        #: whether the repositories made since the target go (a rewind; not ``--force``)
        self.nested = nested
        #: the ``.git`` of each repository the agent created since the target, removed
        self.repositories: list[str] = []

    def run(self) -> None:
        rows = self.store.diff(self.current.tree, self.target.tree)
        self.kept = sorted(self._differing(rows) & self.keep)
        rows = [r for r in rows if r[1] not in self.keep]
        remove = [r for r in rows if r[0] == "D"]  # in the current tree, not in the target
        write = [r for r in rows if r[0] != "D"]
        self._remove_created(remove)
        self._write_all(self._pending(write))
        self._put_modes_back({r[1] for r in write if r[3] != r[5]})
        if self.nested:
            self._remove_created_repositories()
        for name, why in self.target.skipped.items():
            self.not_covered.setdefault(name, why)

    def _remove_created_repositories(self) -> None:
        """A repository made inside the workspace since the target (``git init lib``) loses its
        ``.git``: the undo leaves no configuration whose programs (``core.fsmonitor``) git would
        run for the user's editor or shell. One someone else made (``keep``) or that holds
        commits is left as it is and named (removing it could lose work no snapshot holds)."""
        for git in sorted(repositories(self.current.skipped) - repositories(self.target.skipped)):
            if git in self.keep:
                self.not_covered[git] = (
                    "a repository created since, but not by the agent (it appeared outside its "
                    "steps): left as it is"
                )
            elif (held := self._remove_repository(git)) is not None:
                self.not_covered[git] = f"a repository created since, left as it is: {held}"
            else:
                self.repositories.append(git)

    def _remove_repository(self, git: str) -> str | None:
        """Remove the ``.git`` ``git`` (a folder, a gitfile or a symlink itself) through folder
        descriptors opened with ``O_NOFOLLOW``: None when it is gone, else why it stays."""
        try:
            folder = _open_folder(self.ws, git)
        except FileNotFoundError:
            return None
        except (OSError, _Unsafe) as exc:
            return str(exc) if isinstance(exc, _Unsafe) else exc.strerror or str(exc)
        try:
            if not stat.S_ISDIR(os.lstat(".git", dir_fd=folder).st_mode):
                os.unlink(".git", dir_fd=folder)
                return None
            held = _held_work(folder)
            if held is None:
                shutil.rmtree(".git", dir_fd=folder)  # descriptor-based: no symlink followed
            return held
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc.strerror or str(exc)
        finally:
            os.close(folder)

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

    def _remove(self, name: str) -> bool:
        try:
            folder = _open_folder(self.ws, name)
        except FileNotFoundError:
            return False
        except _Unsafe:
            self.failed[name] = "a folder on its path is now a symlink or a file"
            return False
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return False
        base = _base(name)
        try:
            if stat.S_ISDIR(os.lstat(base, dir_fd=folder).st_mode):
                return False  # a folder where the snapshot had a file: handled when writing
            os.unlink(base, dir_fd=folder)  # a symlink itself, never what it points to
        except FileNotFoundError:
            return False
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return False
        finally:
            os.close(folder)
        self.removed.append(name)
        return True

    def _prune_dirs(self, removed: list[str]) -> None:
        """Remove folders the removals emptied (the ones the snapshot has come back when its
        files are written)."""
        for name in sorted(_parent_dirs(removed), key=lambda d: d.count("/"), reverse=True):
            with contextlib.suppress(OSError, _Unsafe):
                folder = _open_folder(self.ws, name)
                try:  # only when empty: what was not covered stays; never a symlink's target
                    os.rmdir(_base(name), dir_fd=folder)
                finally:
                    os.close(folder)

    def _write(self, name: str, mode: str, data: bytes, created: bool) -> bool:
        try:
            folder = _open_folder(self.ws, name, create=True)
        except _Unsafe as exc:
            self.failed[name] = str(exc)
            return False
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return False
        try:
            return self._write_in(folder, name, mode, data, created)
        finally:
            os.close(folder)

    def _write_in(self, folder: int, name: str, mode: str, data: bytes, created: bool) -> bool:
        base = _base(name)
        try:
            st: os.stat_result | None = os.lstat(base, dir_fd=folder)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            try:
                os.rmdir(base, dir_fd=folder)
            except OSError:
                self.failed[name] = "a folder is in its place and still holds files"
                return False
        is_link = int(mode, 8) == _LINK
        perms = self.target.modes.get(name, _canonical(mode))
        try:
            _place(folder, base, data, is_link, perms)
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return False
        (self.recreated if created else self.restored).append(name)
        return True

    def _chmod(self, name: str, perms: int | None) -> None:
        try:
            folder = _open_folder(self.ws, name)
        except _Unsafe:
            return
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
            return
        try:
            if _chmod_at(folder, _base(name), perms):
                self.modes.append(name)
        except OSError as exc:
            self.failed[name] = exc.strerror or str(exc)
        finally:
            os.close(folder)


def _held_work(folder: int) -> str | None:
    """Why the ``.git`` folder in ``folder`` is kept: it holds commits (a ref or packed refs),
    said with the programs its configuration names; None for a repository without any."""
    from reasonix.safety.git_repository import command_settings

    git = os.open(".git", _FOLDER, dir_fd=folder)
    try:
        refs = any(files for _, _, files, _ in os.fwalk("refs", dir_fd=git))
        with contextlib.suppress(FileNotFoundError):
            refs = refs or os.stat("packed-refs", dir_fd=git, follow_symlinks=False).st_size > 0
        if not refs:
            return None
        try:
            fd = os.open("config", os.O_RDONLY | os.O_NOFOLLOW, dir_fd=git)
            with os.fdopen(fd, "rb") as config:
                settings = command_settings(config.read(1 << 20).decode("utf-8", "replace"))
        except OSError:
            settings = ["?"]
    finally:
        os.close(git)
    why = "it holds commits no snapshot keeps; remove it yourself if they are not yours"
    if settings:
        why += f" (its configuration names programs git runs: {', '.join(settings)})"
    return why


class _Unsafe(Exception):
    """A folder on a file's path cannot be written through; the text says why."""


#: How a folder on a path is opened: never through a symlink, only as a folder.
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _open_folder(workspace: Path, name: str, *, create: bool = False) -> int:
    """A descriptor of the folder holding ``name``, each folder on the way opened relative to
    the one before with ``O_NOFOLLOW`` (none is resolved by path again). A folder that is a
    symlink or a file raises :class:`_Unsafe`; a missing one is made when ``create``, else
    ``FileNotFoundError``. The caller closes the descriptor."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    parts = name.split("/")[:-1]
    try:
        for i, part in enumerate(parts):
            child = _open_child(fd, part, create, "/".join(parts[: i + 1]))
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(parent: int, part: str, create: bool, shown: str) -> int:
    try:
        return os.open(part, _FOLDER, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise _Unsafe(_not_a_folder(parent, part, shown)) from exc
        raise _Unsafe(f"cannot open the folder {shown}: {exc.strerror}") from exc
    try:
        os.mkdir(part, dir_fd=parent)
    except FileExistsError:
        pass  # made meanwhile: opening it below checks what it is
    except OSError as exc:
        raise _Unsafe(f"cannot create the folder {shown}: {exc.strerror}") from exc
    return _open_child(parent, part, False, shown)


def _not_a_folder(parent: int, part: str, shown: str) -> str:
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.lstat(part, dir_fd=parent).st_mode):
            return f"the folder {shown} is now a symlink, and a rewind never writes through one"
    return f"{shown} is now a file, not a folder"


def _chmod_at(folder: int, base: str, perms: int | None) -> bool:
    """Set the permission bits of the regular file ``base`` in ``folder`` (by its owner's
    execute bit when ``perms`` is None); whether they changed. A symlink is never followed."""
    st = os.lstat(base, dir_fd=folder)
    if not stat.S_ISREG(st.st_mode):
        return False
    if perms is None:
        perms = 0o755 if st.st_mode & 0o100 else 0o644
    if stat.S_IMODE(st.st_mode) == perms:
        return False
    try:  # AT_SYMLINK_NOFOLLOW: refused if a symlink took the file's place since
        os.chmod(base, perms, dir_fd=folder, follow_symlinks=False)
    except (NotImplementedError, ValueError):
        return _fchmod_nofollow(folder, base, perms)
    return True


def _fchmod_nofollow(folder: int, base: str, perms: int) -> bool:
    """Where the C library cannot refuse a symlink by name (or one is there now): open the
    file itself with ``O_NOFOLLOW`` and change it through the descriptor."""
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(base, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            return False  # a symlink: not ours to change
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        os.fchmod(fd, perms)
        return True
    finally:
        os.close(fd)


def _place(folder: int, base: str, data: bytes, is_link: bool, perms: int) -> None:
    """Write ``base`` in ``folder`` through a new temporary name (O_EXCL|O_NOFOLLOW, so a
    symlink planted at a fixed name cannot catch the write), then rename it into place within
    the same folder descriptor."""
    for _ in range(100):
        tmp = f".{base[:100]}.{os.urandom(6).hex()}.reasonix-restore"
        try:
            if is_link:
                os.symlink(os.fsdecode(data), tmp, dir_fd=folder)
                break
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            out = os.open(tmp, flags, 0o600, dir_fd=folder)
            break
        except FileExistsError:
            continue
    else:
        raise OSError("no free temporary name")
    try:
        if not is_link:
            with os.fdopen(out, "wb") as f:
                f.write(data)
                os.fchmod(f.fileno(), perms)
        os.replace(tmp, base, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def _canonical(mode: str) -> int:
    return 0o755 if int(mode, 8) & 0o111 else 0o644


def _parent_dirs(names: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for name in names:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]))
    return out
