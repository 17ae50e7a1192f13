"""A folder's first snapshot, started from the folder's own git repository
(:mod:`reasonix.safety.checkpoints`).

Where the workspace is a git repository whose index names the files' own bytes, our (absent)
index starts as a copy of the user's, so the first snapshot hashes only what changed since the
user's last ``git add``. The blobs that index names are not copied then: our store *borrows*
them (the file ``borrowed`` names the user's object folder), which makes the first snapshot
cost about what a later one does. Only the git commands that read our objects see that folder
(``GIT_ALTERNATE_OBJECT_DIRECTORIES``, :meth:`_Store.read_env`); the ones that write never do,
so every object they write is written into our store and nothing in the user's repository is
touched (git would otherwise "freshen", that is touch, a borrowed object it wrote again).
:func:`settle_borrowed`, run in the background after that snapshot, copies every object our
snapshots reach into our own store (``pack-objects | index-pack``, which checks each object's
hash) and only then stops borrowing, so a ``git gc`` in the user's repository can never take a
snapshot's bytes once that is done. Until then the borrowed blobs are the ones the user's index
names, which git's own pruning keeps; our store's pruning waits for the copy
(:func:`settle_borrowed` with ``held``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reasonix.safety.snapshot_git import _GIT_FLAGS, _STORE_FLAGS, _GitError, _nul, fed_git

if TYPE_CHECKING:
    from reasonix.safety.snapshot_scan import _Scan


class _Store(Protocol):
    """What seeding and the copy use of the store (``checkpoints._Store``)."""

    workspace: Path
    dir: Path
    git_dir: Path
    index: Path
    exclude: Path

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        reads: bool = False,
    ) -> bytes: ...

    def env(self) -> dict[str, str]: ...

    def read_env(self) -> dict[str, str]: ...

    def locked(self) -> contextlib.AbstractContextManager[None]: ...

    def _read_last(self) -> str | None: ...


def alternates(store: _Store) -> Path:
    return store.dir / "borrowed"


def borrowing(store: _Store) -> bool:
    """Whether some of the store's objects may still live only in the user's repository."""
    return alternates(store).exists()


def borrowed_from(store: _Store) -> str | None:
    """The user's object folder our snapshots borrow from, or None."""
    try:
        return alternates(store).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


class Seeded:
    """The entries of the index a first snapshot started from (``ls-files -s`` output), for
    :func:`vouch`, and the ``write-tree`` that stores its folders' trees in our store while
    the look goes on (:meth:`trees_written`)."""

    def __init__(
        self, listing: bytes, trees: tuple[subprocess.Popen[bytes], Path] | None = None
    ) -> None:
        self._listing = listing
        self._trees = trees

    def trees_written(self) -> None:
        """Wait for the trees of the seeded index (unchanged folders' trees the snapshot's own
        ``write-tree`` then finds in the store instead of writing each again); a failure only
        leaves that work to it."""
        started, self._trees = self._trees, None
        if started is None:
            return
        trees, copy = started
        try:
            trees.wait(timeout=300)
        except subprocess.TimeoutExpired:
            trees.kill()
            trees.wait()
        finally:
            copy.unlink(missing_ok=True)

    def blobs(self) -> dict[str, str]:
        """Each entry's ``<mode> <blob>``, by name."""
        out = {}
        for entry in self._listing.split(b"\0"):
            head, _, raw = entry.partition(b"\t")
            out[raw.decode("utf-8", "surrogateescape")] = head[2:49].decode()
        return out


def seed(store: _Store) -> Seeded | None:
    """Start our (absent) index from the workspace repository's own index, borrowing the blobs
    it names. Only where the stored bytes are the files' bytes: no attributes, no line-ending
    conversion, no sparse, assume-unchanged or conflicted entries (submodules and what our
    exclusions cover are dropped). git's stat comparison against the copied index (its file
    time kept, which git's check for a change in the same second as the index needs) then
    finds the changed files. None, with nothing left behind, otherwise."""
    git = store.workspace / ".git"
    index = git / "index"
    if git.is_symlink() or not git.is_dir() or not index.is_file() or not seedable(git):
        return None
    objects = os.path.realpath(git / "objects")
    if "\n" in objects or not os.path.isdir(objects):
        return None
    try:
        shutil.copy2(index, store.index)
        # What our exclusions cover, listed while the entries are read (both only read).
        excluded = subprocess.Popen(
            ["git", *_STORE_FLAGS, "ls-files", "-z", "-c", "-i", f"--exclude-from={store.exclude}"],
            cwd=store.workspace,
            env=store.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            listing = store.run("ls-files", "-z", "-s", "-v")
        finally:
            out, _ = excluded.communicate(timeout=300)
        if excluded.returncode != 0:
            raise _GitError("git ls-files -i failed")
        drop = _unplain_entries(listing) + _staged_lies(store, git)
        drop += [n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n]
        if drop:
            store.run("update-index", "-z", "--force-remove", "--stdin", stdin=_nul(drop))
        alternates(store).write_text(objects + "\n", encoding="utf-8")
    except (OSError, _GitError, subprocess.SubprocessError, ValueError):
        store.index.unlink(missing_ok=True)
        alternates(store).unlink(missing_ok=True)
        return None
    return Seeded(listing, _write_trees(store))


def _staged_lies(store: _Store, git: Path) -> list[str]:
    """Entries of the copied index that stage other bytes than their file holds although
    their stat data is the file's (a forged index, attacker6 B4; git would take them on
    trust, and a rewind would write their blob): they are dropped, so the look hashes those
    files as new. Only entries that differ from the repository's ``HEAD`` are hashed (what the
    user staged: normally few; an entry equal to ``HEAD`` stages bytes the user committed)."""
    env = {**store.env(), "GIT_DIR": str(git)}

    def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", *_GIT_FLAGS, *args], cwd=store.workspace, env=env, input=stdin,
            capture_output=True, timeout=300, check=False,
        )  # fmt: skip

    def output(root: Path, *args: str, stdin: bytes = b"") -> bytes:
        done = run(*args, stdin=stdin)
        return done.stdout if done.returncode == 0 else b""

    head = run("rev-parse", "-q", "--verify", "HEAD^{tree}")
    tree = head.stdout.strip().decode() if head.returncode == 0 else _EMPTY_TREE
    raw = run("diff-index", "--cached", "-z", "--no-renames", tree)
    if raw.returncode != 0:
        raise _GitError("git diff-index --cached failed")
    fields = raw.stdout.split(b"\0")
    staged = {
        name: meta.split()[3].decode()
        for meta, name in zip(fields[::2], fields[1::2], strict=False)
        if meta.split()[-1] != b"D" and meta.split()[1] in (b"100644", b"100755")
    }
    if not staged:
        return []
    from reasonix.safety.index_check import hashes_of

    hashed = hashes_of(store.workspace, list(staged), output)
    return [n.decode("utf-8", "surrogateescape") for n, sha in hashed if sha != staged[n]]


#: git's empty tree: what a repository with no commit yet is compared with.
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _write_trees(store: _Store) -> tuple[subprocess.Popen[bytes], Path] | None:
    """``write-tree`` of a copy of the seeded index, started now (its trees go into our store,
    nothing else is kept: the copy goes once it has read it)."""
    copy = store.dir / "index.trees"
    try:
        shutil.copy2(store.index, copy)
        env = {**store.env(), "GIT_INDEX_FILE": str(copy)}
        trees = subprocess.Popen(
            ["git", *_GIT_FLAGS, "write-tree", "--missing-ok"],
            cwd=store.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        copy.unlink(missing_ok=True)
        return None
    return trees, copy


def vouch(store: _Store, scan: _Scan, seeded: Seeded) -> None:
    """The files the seeded look held (changed too close to the user's index for git's stat
    comparison to vouch for them, :meth:`_Scan.tracked`): their bytes now are hashed without
    writing anything, and a file whose hash is its entry's keeps the entry (no blob written,
    the slow part at 10,000 such files); the others are read again as new. Each is hashed
    after its stat was taken, which the next look compares (:meth:`_Scan.recent`)."""
    held, scan.held = scan.held, []
    if not held:
        return
    blobs = seeded.blobs()
    names = [
        name
        for name, st in held
        if "\n" not in name
        and not name.startswith('"')  # --stdin-paths would unquote it
        and blobs.get(name, "")[:6] == ("100755" if st.st_mode & 0o100 else "100644")
        and os.access(name, os.R_OK, dir_fd=scan.fd)
    ]
    same: set[str] = set()
    if names:
        try:
            out = store.run("hash-object", "--no-filters", "--stdin-paths", stdin=_lines(names))
        except _GitError:  # one went away or became unreadable: all are read again
            out = b""
        shas = out.decode().split()
        if len(shas) == len(names):
            same = {n for n, sha in zip(names, shas, strict=True) if blobs[n][7:] == sha}
        same = _through_real_folders(scan, same)
    for name, st in held:
        if name in same:
            scan.vouched(name, st)
    scan.candidates([n for n, _ in held if n not in same], in_index=True, reread=True)


def _through_real_folders(scan: _Scan, names: set[str]) -> set[str]:
    """Those of ``names`` whose folders are real folders still: ``hash-object`` follows a
    folder that became a symlink while it read, where the snapshot keeps the link."""
    real: dict[str, bool] = {"": True}

    def check(folder: str) -> bool:
        if folder not in real:
            try:
                st = os.lstat(folder, dir_fd=scan.fd)
                real[folder] = stat.S_ISDIR(st.st_mode) and check(folder.rpartition("/")[0])
            except OSError:
                real[folder] = False
        return real[folder]

    return {n for n in names if check(n.rpartition("/")[0])}


def _lines(names: list[str]) -> bytes:
    return b"".join(n.encode("utf-8", "surrogateescape") + b"\n" for n in names)


def _unplain_entries(listing: bytes) -> list[str]:
    """The submodules of the copied index (dropped); raises on any entry that is not plain."""
    drop: list[str] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        head, _, raw = entry.partition(b"\t")
        tag, mode, _sha, stage = head.decode().split()
        name = raw.decode("utf-8", "surrogateescape")
        if tag != "H" or stage != "0" or name.rpartition("/")[2] == ".gitattributes":
            raise _GitError(f"not a plain entry: {name}")
        if mode == "160000":
            drop.append(name)
    return drop


def settle_borrowed(store: _Store, *, held: bool = False) -> None:
    """Copy into our store every object that our snapshots reach, then stop borrowing. The
    bulk is copied without the store's lock (steps go on); what snapshots taken meanwhile
    added is copied under it, and the alternates file goes only then. ``held``: the caller
    holds the lock. Raises on a failure, borrowing still (the next call tries again)."""
    if not borrowing(store):
        return
    first = _tips(store)
    if not held:
        _pack_into(store, first, ())
        with store.locked():
            _finish(store, first)
    else:
        _pack_into(store, first, ())
        _finish(store, first)


def _finish(store: _Store, copied: list[str]) -> None:
    if not borrowing(store):
        return
    now = _tips(store)
    _pack_into(store, now, copied)
    alternates(store).unlink()


def _tips(store: _Store) -> list[str]:
    out = store.run("for-each-ref", "--format=%(objectname)").decode().split()
    last = store._read_last()
    return sorted({*out, *([last] if last else [])})


def _pack_into(store: _Store, tips: list[str], known: list[str] | tuple[str, ...]) -> None:
    """Pack what ``tips`` reach and ``known`` do not, reading through the alternates, into a
    pack of our own (``index-pack`` hashes every object it stores)."""
    wanted = [t for t in tips if t not in set(known)]
    if not wanted:
        return
    lines = [*wanted, *(f"^{k}" for k in known)]
    args = (*_GIT_FLAGS, "pack-objects", "--revs", "--stdout", "-q")
    packer, feeder = fed_git(args, store.workspace, store.read_env(), lines)
    assert packer.stdout is not None
    try:
        indexer = subprocess.run(
            ["git", *_GIT_FLAGS, "index-pack", "--stdin"],
            cwd=store.workspace,
            env=store.env(),
            stdin=packer.stdout,
            capture_output=True,
            timeout=600,
            check=False,
        )
    finally:
        feeder.join(timeout=30)
        packer.stdout.close()
        packed = packer.wait(timeout=600)
    if packed != 0 or indexer.returncode != 0:
        raise _GitError("the repository's objects could not be copied into the snapshot store")


def seedable(git: Path) -> bool:
    """Whether the index of the repository ``git`` names the files' own bytes: no attributes
    file git would read (they can select filters and conversions) and no line-ending
    conversion or other work tree in the user's configuration."""
    workspace = git.parent
    home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    for path in (
        workspace / ".gitattributes",
        git / "info" / "attributes",
        xdg / "git" / "attributes",
        Path("/etc/gitattributes"),
    ):
        if os.path.lexists(path):
            return False
    from reasonix.safety.environment import git_environment

    env = git_environment()
    env.pop("GIT_CONFIG_NOSYSTEM", None)
    env.update({"GIT_DIR": str(git), "HOME": str(home), "XDG_CONFIG_HOME": str(xdg)})
    try:
        out = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "config", "-l", "-z"],
            cwd=workspace,
            env=env,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    if out.returncode != 0:
        return False
    return all(_plain_setting(item) for item in out.stdout.split(b"\0"))


def _plain_setting(item: bytes) -> bool:
    key, _, value = item.decode("utf-8", "replace").partition("\n")
    key = key.lower()
    if key == "core.autocrlf" and value.lower() not in ("false", "no", "off", "0"):
        return False
    if key in ("core.attributesfile", "core.worktree", "core.eol"):
        return False
    if key == "core.bare" and value.lower() in ("true", "yes", "on", "1"):
        return False
    return not key.startswith("extensions.")
