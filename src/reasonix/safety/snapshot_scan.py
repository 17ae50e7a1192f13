"""One snapshot's look at the files of a workspace (:mod:`reasonix.safety.checkpoints`).

The store says which names to look at: every file of its index on a full look, or only what git
reported changed since the last snapshot (with the files that were too recent to trust their
stat) on a quick one. :class:`_Scan` stats each of those names once, without following symlinks
and only through real folders (a path below a folder that became a symlink is not the file it
was), and sorts them into what the snapshot adds to the index, removes from it, and skips (too
large, unreadable), with the exact permission bits git does not keep."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping

#: git compares times in whole seconds (this build has no nanosecond times), so a write in the
#: same second as a snapshot's look, of the same size with the old modification time put back,
#: leaves git's stat as it was (racy git). A file changed within this long of a look is
#: therefore checked by the next look itself: by its full stat (nanosecond inode time) where
#: its inode time is fine-grained and older than the look by :data:`_TICK_NS` (every later
#: change then gives another inode time), and otherwise read again.
_RACY_NS = 2_000_000_000
_TICK_NS = 50_000_000  # more than a clock tick of the file system's timestamps
_PLAIN = (0o644, 0o755)
#: why a snapshot skips a folder with a ``.git`` of its own (a repository nested in the workspace)
NESTED_REPOSITORY = "a repository of its own"
#: why it skips the ``.git`` of a repository in a folder whose files it covers
NESTED_GIT = "the git folder of a repository inside the workspace"


def repositories(skipped: Mapping[str, str]) -> set[str]:
    """The ``.git`` of every repository nested in the workspace that a snapshot's ``skipped``
    names (a folder that is a repository of its own, or a ``.git`` in a covered folder)."""
    found = {n.rstrip("/") + "/.git" for n, why in skipped.items() if why == NESTED_REPOSITORY}
    return found | {n for n, why in skipped.items() if why == NESTED_GIT}


#: What a later look compares: (size, mtime, ctime, mode, inode).
_Key = tuple[int, int, int, int, int]
#: Files the next look checks itself: their stat then, or None to read them again.
Recent = dict[str, _Key | None]


def _key(st: os.stat_result) -> _Key:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_ino)


class _Scan:
    """Stats the names a snapshot looks at, once each, through real folders only."""

    def __init__(self, workspace: os.PathLike[str] | str, max_file_mb: float) -> None:
        self.max_file_mb = max_file_mb
        self.limit = int(max_file_mb * 1024 * 1024)
        self.fd = os.open(workspace, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self.started = time.time_ns()
        self._real: dict[str, bool] = {"": True}
        self.modes: dict[str, int] = {}
        self.skipped: dict[str, str] = {}
        #: (size, mtime, ctime, inode) of each file skipped for its size
        self.stats: dict[str, tuple[int, ...]] = {}
        self.add: list[str] = []
        self.remove: list[str] = []
        #: what each added file looked like when it was read: compared once git has hashed it
        self.looked: dict[str, _Key] = {}
        #: added files whose stat git finds unchanged: ``update-index --add`` would keep the
        #: entry as it is, so they leave the index first
        self.reread: list[str] = []
        #: ``tracked(hold=True)``: the regular files it would read again, with their stat, left
        #: for the caller to check against their index entry (:meth:`vouched` or :meth:`candidates`)
        self.held: list[tuple[str, os.stat_result]] = []

    def close(self) -> None:
        os.close(self.fd)

    def real_dir(self, folder: str) -> bool:
        """Whether ``folder`` and every folder above it are real folders (a path below a
        symlink is not the file it was: the link is what the snapshot keeps)."""
        known = self._real.get(folder)
        if known is None:
            try:
                known = self.real_dir(folder.rpartition("/")[0]) and stat.S_ISDIR(
                    os.lstat(folder, dir_fd=self.fd).st_mode
                )
            except OSError:
                known = False
            self._real[folder] = known
        return known

    def tracked(
        self, names: Iterable[str], *, check_size: bool, recent_after: int, hold: bool = False
    ) -> None:
        """A full look at files of the index that git found unchanged: their permission bits,
        and the ones git cannot vouch for read again (changed at or after ``recent_after``,
        the index's own time less the racy window, or larger than the limit where the index
        came from the user's repository); ``hold``: the regular files among those within the
        limit go to :attr:`held` instead."""
        lstat, fd, real, plain = os.lstat, self.fd, self._real, _PLAIN
        again: list[str] = []
        for name in names:
            try:
                parent = name.rpartition("/")[0]
                if not (real.get(parent) or self.real_dir(parent)):
                    raise FileNotFoundError(name)
                st = lstat(name, dir_fd=fd)
            except OSError:
                self.remove.append(name)
                continue
            if (
                st.st_ctime_ns >= recent_after
                or st.st_mtime_ns >= recent_after
                or (check_size and st.st_size > self.limit)
            ):
                if hold and stat.S_ISREG(st.st_mode) and st.st_size <= self.limit:
                    self.held.append((name, st))
                else:
                    again.append(name)
                continue
            mode = st.st_mode
            if mode & 0o7777 not in plain and stat.S_ISREG(mode):
                self.modes[name] = mode & 0o7777
        self.candidates(again, in_index=True, reread=True)

    def vouched(self, name: str, st: os.stat_result) -> None:
        """A held file whose bytes, read after ``st``, are its index entry's: the entry stays,
        and the next look checks the file itself while its stat is recent (:meth:`recent`)."""
        perms = stat.S_IMODE(st.st_mode)
        if perms not in _PLAIN:
            self.modes[name] = perms
        self.looked[name] = _key(st)

    def carry(self, modes: Mapping[str, int], looking_again: set[str]) -> None:
        """A quick look: the permission bits of the files git found unchanged are the last
        snapshot's (a change of permissions changes the inode time, so git reports it)."""
        for name, perms in modes.items():
            if name not in looking_again:
                self.modes[name] = perms

    def candidates(self, names: Iterable[str], *, in_index: bool, reread: bool = False) -> None:
        """Files that are new or changed: each is added (a regular file or a symlink that can
        be read and is within the limit), or skipped, or removed from the index
        (``in_index``: only names the index has need removing; ``reread``: names whose stat
        git takes as unchanged, read again all the same)."""
        for name in names:
            try:
                if not self.real_dir(name.rpartition("/")[0]):
                    raise FileNotFoundError(name)
                st = os.lstat(name, dir_fd=self.fd)
            except OSError:
                self._drop(name, in_index)
                continue
            why = self._why_not(name, st)
            if why is None:  # not a file (a folder where a file was, a socket)
                self._drop(name, in_index)
                continue
            if why:
                self.skipped[name] = why
                if st.st_size > self.limit:
                    self.stats[name] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                self._drop(name, in_index)
                continue
            perms = stat.S_IMODE(st.st_mode)
            if stat.S_ISREG(st.st_mode) and perms not in _PLAIN:
                self.modes[name] = perms
            self.add.append(name)
            self.looked[name] = _key(st)
            if reread:
                self.reread.append(name)

    def _why_not(self, name: str, st: os.stat_result) -> str | None:
        """Empty to add the file, why it is skipped, or None for what is not a file."""
        kind = stat.S_IFMT(st.st_mode)
        if kind not in (stat.S_IFREG, stat.S_IFLNK):
            return None
        if kind == stat.S_IFREG and st.st_size > self.limit:
            return f"larger than max_file_mb = {self.max_file_mb:g}"
        if kind == stat.S_IFREG and not os.access(name, os.R_OK, dir_fd=self.fd):
            return "unreadable"
        return ""

    def _drop(self, name: str, in_index: bool) -> None:
        if in_index:
            self.remove.append(name)

    def nested(self, folders: Iterable[str], covered: Iterable[str] = ()) -> None:
        """Note the repositories nested in the workspace: ``folders`` git lists as ones of
        their own, and the ``covered`` folders (those of the snapshot's files) with a ``.git``
        in them (one ``lstat`` each), so a rewind knows the repositories made since."""
        for name in folders:
            self.skipped[name] = NESTED_REPOSITORY
        for folder in covered:
            try:
                os.lstat(f"{folder}/.git", dir_fd=self.fd)
            except OSError:
                continue
            self.skipped[f"{folder}/.git"] = NESTED_GIT

    def unchanged(self, recent: Recent) -> set[str]:
        """Of the files the last look left to this one, those whose full stat vouches that they
        are as git hashed them (they are looked at again for the next look's sake)."""
        out = set()
        for name, key in recent.items():
            try:
                if key is not None and _key(os.lstat(name, dir_fd=self.fd)) == key:
                    out.add(name)
                    self.looked[name] = key
            except OSError:
                pass
        return out

    def recent(self) -> Recent:
        """After git hashed the added files: those the next look checks itself. A file changed
        while git read it is read again; one changed within the racy window of now is read
        again unless its stat can tell any later change (:data:`_TICK_NS`)."""
        now = time.time_ns()
        out: Recent = {}
        for name, before in self.looked.items():
            try:
                st = os.lstat(name, dir_fd=self.fd)
            except OSError:
                out[name] = None
                continue
            key = _key(st)
            if key != before:
                out[name] = None
            elif now - max(st.st_ctime_ns, st.st_mtime_ns) < _RACY_NS:
                fine = st.st_ctime_ns % 10_000_000 != 0  # not whole seconds or hundredths
                trusted = fine and st.st_ctime_ns < self.started - _TICK_NS
                out[name] = key if trusted else None
        return out
