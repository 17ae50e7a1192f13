"""Snapshots of the workspace before every step that may change it, and rewinding to them.

Before each file-tool write and each ``bash`` command that is not plainly read-only, the tools
call :meth:`CheckpointManager.before_write` / :meth:`CheckpointManager.before_command`, which
record a snapshot of the whole workspace: tracked, untracked and git-ignored files alike, with
their exact permission bits. :meth:`CheckpointManager.undo` and :meth:`CheckpointManager.rewind`
put the files back byte for byte to how they were before a step or a turn (content, mode,
deletions, creations, renames, symlinks), and say what they restored and what they could not.

Where snapshots live, and why there
    In a private git object store per workspace under our data folder
    (``<data>/checkpoints/<key>/git``, folders 0700), driven with ``GIT_DIR`` pointing there and
    ``GIT_WORK_TREE`` at the workspace. Nothing is written to the user's repository: not its
    index, refs, stash, objects or hooks, so snapshots never travel with a push and an ignored
    ``.env`` never lands in the user's object store. Git runs with an allowlisted environment,
    without the system or global configuration, with hooks and fsmonitor off and with every
    attribute that could transform content (``text``, ``eol``, ``filter``, ``ident``,
    ``working-tree-encoding``) unset, so a planted ``core.fsmonitor`` or hook in the workspace
    never runs and the stored bytes are the file's bytes.

What a snapshot costs
    After the store's own last snapshot, a quick look: git compares every file's stat with
    what our (split) index recorded while it lists the new files, and only those are stat'ed
    and hashed (:mod:`reasonix.safety.snapshot_scan`, which also covers git's whole-second
    times); otherwise a full look, one stat of every file. A folder's first snapshot starts
    from its own git index where that is exact, borrowing the blobs it names until a
    background copy has them (:mod:`reasonix.safety.snapshot_seed`). A session takes it in the
    background as it opens (:meth:`CheckpointManager.prepare_in_background`) and hashes what
    each step changed right after it (:meth:`CheckpointManager.after_step`), while the model
    answers. A file tool's step does not wait for a background snapshot (it keeps its file's
    bytes and is recorded over it); any other step's own snapshot waits for it, then checks.

What is not covered
    Folders named in :data:`DEFAULT_EXCLUDE` plus ``[checkpoints] exclude`` (gitignore syntax;
    ``!build/`` re-includes a default), files larger than ``max_file_mb``, unreadable files,
    nested repositories, empty folders, and the user's own ``.git``. A rewind leaves those as
    they are and names them, except the ``.git`` of a repository the agent made since the
    snapshot (each snapshot's ``skipped`` names the nested repositories, a rewind removes the
    new ones: :mod:`reasonix.safety.snapshot_restore`).

Safety of a rewind
    A rewind first snapshots the files as they are (so nothing present before the rewind is
    lost), removes what was created since without following symlinks, and writes files only
    through real folders inside the workspace: a folder that became a symlink is removed when
    the snapshot says it was created since, and otherwise nothing is written through it (the
    path is reported as not restored).

The step journal of each session (``sessions/<id>.jsonl``) maps steps to turns and tool calls.
Snapshots older than ``keep_days`` are pruned, and the oldest go first while the store is larger
than ``max_store_mb``.

It runs past 500 lines because its two parts, the store (``_Store``) and the manager, share
the invariants that make a rewind safe: the git environment that makes a snapshot byte-exact
and runs nothing of the workspace's, the lock around the store, and a rewind that snapshots
first. Its pieces beside it: :mod:`reasonix.safety.snapshot_git` (git settings, records),
``snapshot_scan``, ``snapshot_seed`` and ``snapshot_restore`` (writes only through real folders).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.config.schema import CheckpointsConfig
from reasonix.safety.snapshot_git import (
    _ATTRIBUTES,
    _LINK,
    _STORE_FLAGS,
    _escape_pattern,
    _GitError,
    _nul,
    _rel,
    _Snapshot,
    fed_git,
)
from reasonix.safety.snapshot_git import _GIT_FLAGS as _GIT_FLAGS  # worktree.py's too
from reasonix.safety.snapshot_git import _IDENTITY as _IDENTITY
from reasonix.tools.state import StateKey

if TYPE_CHECKING:
    from reasonix.safety.snapshot_restore import _Restorer
    from reasonix.safety.snapshot_scan import Recent, _Scan
    from reasonix.safety.snapshot_seed import Seeded

__all__ = [
    "CHECKPOINTS_KEY",
    "DEFAULT_EXCLUDE",
    "Busy",
    "CheckpointManager",
    "FileChange",
    "RewindResult",
    "Step",
    "checkpoint_store_size",
    "command_is_read_only",
]

#: Folders (and the user's own git data) that snapshots skip: caches, virtual environments,
#: dependency folders and build outputs, which are large and can be made again.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git",
    ".hg/",
    ".svn/",
    ".venv/",
    "node_modules/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".nox/",
    ".gradle/",
    ".next/",
    "target/",
    "dist/",
    "build/",
)

#: How long after a tool call's result the background snapshot starts (a next call sooner
#: cancels it): calls that come back to back, and a model that answers at once, pay no second
#: snapshot; a real model's answer takes longer, so the snapshot still overlaps it.
_SETTLE_S = 0.25
#: At most this many removals ride on the command line of the adding ``update-index``.
_FEW = 64
_SHOWN = 8  # names listed per line of the summary before "and N more"


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class Step:
    """One snapshot in a session's journal: taken before ``tool`` ran (``detail``: the command
    or the path) in executor turn ``turn``, as tool call ``call_id``. ``kind`` is ``step``, or
    ``rewind`` for the snapshot a rewind takes of the files it is about to replace, or
    ``after`` for the files as the agent left them (at the end of a turn that had steps, and
    after a rewind): what a later rewind compares with so that it never undoes a change it did
    not make."""

    seq: int
    turn: int
    call_id: str
    tool: str
    detail: str
    commit: str
    time: float
    kind: str = "step"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["call"] = out.pop("call_id")
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        return cls(
            int(data["seq"]),
            int(data.get("turn", 0)),
            str(data.get("call", "")),
            str(data.get("tool", "")),
            str(data.get("detail", "")),
            str(data["commit"]),
            float(data.get("time", 0.0)),
            str(data.get("kind", "step")),
        )

    def describe(self) -> str:
        detail = " ".join(self.detail.split())
        if len(detail) > 60:
            detail = detail[:57] + "..."
        return f"{self.tool}: {detail}" if detail else self.tool


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path that differs between two snapshots: git's ``status`` letter (``A`` added,
    ``D`` deleted, ``M`` modified, ``T`` type changed), the bytes before and after (None where
    it did not exist), and whether each side is a symlink (its bytes are then the target)."""

    path: str
    status: str
    before: bytes | None
    after: bytes | None
    link_before: bool = False
    link_after: bool = False


@dataclass(frozen=True, slots=True)
class Busy:
    """Something of the agent's that could write files outside its steps (a background job):
    its name for the user (``job-1 (started in turn 1)``) and when it ran (wall clock; ``end``
    None: still running). A rewind does not call what changed while it ran the user's."""

    name: str
    start: float
    end: float | None = None

    def overlaps(self, start: float, end: float) -> bool:
        return self.start <= end and (self.end is None or self.end >= start)


@dataclass(frozen=True, slots=True)
class RewindResult:
    """What a rewind or an undo did to the files; ``text`` is the summary shown to the user."""

    turn: int
    restored: tuple[str, ...] = ()
    recreated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    modes: tuple[str, ...] = ()
    not_restored: tuple[tuple[str, str], ...] = ()
    not_covered: tuple[tuple[str, str], ...] = ()
    text: str = ""
    #: Paths changed or created by someone else since the agent's last snapshot: left alone.
    kept: tuple[str, ...] = ()
    #: Of those, the ones that changed while something of the agent's ran (:class:`Busy`):
    #: (path, what ran), left alone too but not called the user's.
    held: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return self.text

    @property
    def changed(self) -> int:
        """How many paths the rewind changed."""
        lists = (self.restored, self.recreated, self.removed, self.modes, *self.renamed)
        return sum(len(items) for items in lists)


# ---------------------------------------------------------------------------------------------
# Read-only commands


def command_is_read_only(command: str, workspace: Path | None = None) -> bool:
    """Whether a shell command is proved to change nothing, so no snapshot is needed before it
    (:func:`reasonix.safety.shell.readers.snapshot_skippable`: programs that only read, with options
    that only read, no redirection into a file, no hidden parts; where it reads does not
    matter). Anything else, or anything unclear, is taken to change files."""
    from reasonix.safety.shell.readers import snapshot_skippable

    return snapshot_skippable(command, workspace)


# ---------------------------------------------------------------------------------------------
# The store of one workspace


def _workspace_key(workspace: Path) -> str:
    digest = hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()
    name = re.sub(r"[^A-Za-z0-9._-]", "_", workspace.name)[:40] or "root"
    return f"{name}-{digest[:16]}"


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


def _session_file_name(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", session_id) or "session"


class _Store:
    """The private shadow repository of one workspace and the git commands run on it."""

    def __init__(self, root: Path, workspace: Path, settings: CheckpointsConfig) -> None:
        self.workspace = workspace
        self.settings = settings
        self.dir = root / _workspace_key(workspace)
        self.git_dir = self.dir / "git"
        self.index = self.dir / "index"
        self.exclude = self.dir / "exclude"
        self.sessions = self.dir / "sessions"
        self._env: dict[str, str] | None = None
        self._meta_cache: dict[str, _Snapshot] = {}
        # Our last look: (its commit, our index's stamp after it, what the next look checks
        # itself). While the store's last snapshot and our index are as we left them (another
        # process may snapshot in between), git's stat comparison says what changed.
        self._look: tuple[str, tuple[int, int, int, int] | None, Recent] | None = None
        #: the folders of the files our index covers (where a nested ``.git`` is looked for)
        self._folders: set[str] = set()
        #: the store's first snapshot started from the workspace repository's index
        self.seeded = False

    # -- set-up -----------------------------------------------------------------------------------

    def ensure(self) -> None:
        _private_dir(self.dir.parent)
        _private_dir(self.dir)
        _private_dir(self.sessions)
        (self.dir / "workspace").write_text(str(self.workspace) + "\n", encoding="utf-8")
        patterns = [*DEFAULT_EXCLUDE, *self.settings.exclude]
        # Our own data folder inside the workspace (a test, or REASONIX_DATA_DIR set so): a
        # snapshot of the store itself would grow without end.
        data = self.dir.parent.parent
        if data.is_relative_to(self.workspace) and data != self.workspace:
            inside = data.relative_to(self.workspace).as_posix()
            patterns.append("/" + _escape_pattern(inside) + "/")
        text = "\n".join(patterns) + "\n"
        if not self.exclude.exists() or self.exclude.read_text(encoding="utf-8") != text:
            self.exclude.write_text(text, encoding="utf-8")
        if not (self.git_dir / "HEAD").exists():
            # An empty template: no sample hooks, nothing copied from the system's template dir.
            template = self.dir / "template"
            _private_dir(template)
            env = {k: v for k, v in self.env().items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
            self.run("init", "-q", "--bare", f"--template={template}", str(self.git_dir), env=env)
            shutil.rmtree(template, ignore_errors=True)
            self.run("config", "core.logAllRefUpdates", "false")
            # Objects and folders git makes are the owner's only, like the folders above.
            self.run("config", "core.sharedRepository", "0600")
            for folder, _dirs, _files in os.walk(self.git_dir):
                os.chmod(folder, 0o700)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        attributes = info / "attributes"
        if not attributes.exists() or attributes.read_text(encoding="utf-8") != _ATTRIBUTES:
            attributes.write_text(_ATTRIBUTES, encoding="utf-8")

    def env(self) -> dict[str, str]:
        if self._env is None:
            from reasonix.safety.environment import git_environment

            env = git_environment()
            env.setdefault("PATH", os.defpath)
            env.update(_IDENTITY)
            env.update(
                {
                    "GIT_DIR": str(self.git_dir),
                    "GIT_WORK_TREE": str(self.workspace),
                    "GIT_INDEX_FILE": str(self.index),
                    "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull,
                    "GIT_ATTR_NOSYSTEM": "1",
                    # The user's global config, attributes and ignore files live under these.
                    "HOME": str(self.dir),
                    "XDG_CONFIG_HOME": str(self.dir),
                    "GIT_TERMINAL_PROMPT": "0",
                    "LC_ALL": "C",
                }
            )
            self._env = env
        return self._env

    def read_env(self) -> dict[str, str]:
        """:meth:`env` for a command that only reads objects: while the first snapshot's
        objects are borrowed from the user's repository (:mod:`reasonix.safety.snapshot_seed`)
        it reads them there too. A command that writes objects never sees that folder."""
        from reasonix.safety.snapshot_seed import borrowed_from

        objects = borrowed_from(self)
        if objects is None:
            return self.env()
        return {**self.env(), "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects}

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        reads: bool = False,
    ) -> bytes:
        """Run git on the store; ``reads``: a command that only reads objects."""
        if env is None:
            env = self.read_env() if reads else self.env()
        proc = subprocess.run(
            ["git", *_STORE_FLAGS, *args],
            cwd=self.workspace,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=300,
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise _GitError(f"git {args[0]} failed: {err}")
        return proc.stdout

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One process at a time works on the store (two sessions may share a workspace)."""
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- snapshot -------------------------------------------------------------------------------

    def _listing(self) -> tuple[set[str], set[str], set[str], list[str]]:
        """(tracked, changed, others, nested): the index's paths, those whose content or type
        changed, files not in the index (our exclusions apply, the workspace's ignore files do
        not), and folders that are repositories of their own."""
        out = self.run(
            "ls-files", "-z", "-t", "-c", "-m", "-d", "-o", f"--exclude-from={self.exclude}"
        )
        tracked: set[str] = set()
        changed: set[str] = set()
        others: set[str] = set()
        nested: list[str] = []
        for entry in out.split(b"\0"):
            if len(entry) < 3:
                continue
            tag, name = entry[:1], entry[2:].decode("utf-8", "surrogateescape")
            if tag == b"H":
                tracked.add(name)
            elif tag in (b"C", b"R"):
                changed.add(name)
            elif name.endswith("/"):
                nested.append(name)
            else:
                others.add(name)
        return tracked, changed, others, nested

    def seed(self) -> Seeded | None:
        """Start our (absent) index from the workspace repository's own index
        (:func:`reasonix.safety.snapshot_seed.seed`)."""
        from reasonix.safety.snapshot_seed import seed

        return seed(self)

    def last(self) -> _Snapshot | None:
        commit = self._read_last()
        return self.load(commit) if commit else None

    def _read_last(self) -> str | None:
        with contextlib.suppress(OSError):
            return (self.dir / "last").read_text(encoding="utf-8").strip() or None
        return None

    def snapshot(self) -> str:
        """Record the workspace as it is now; returns the snapshot's commit. Caller holds the
        lock."""
        from reasonix.safety.snapshot_scan import _Scan

        previous_commit = self._read_last()
        previous = self.load(previous_commit) if previous_commit else None
        seeded: Seeded | None = None
        if previous is None:
            # Our index may describe a snapshot that is gone; start from nothing, or from the
            # workspace repository's own index.
            self.index.unlink(missing_ok=True)
            seeded = self.seed()
            self.seeded = self.seeded or seeded is not None
        look = self._look
        quick = (
            previous is not None
            and look is not None
            and look[:2]
            == (
                previous_commit,
                _stamp(self.index),
            )
        )
        scan = _Scan(self.workspace, self.settings.max_file_mb)
        try:
            if quick:
                assert previous is not None and look is not None
                self._scan_changes(scan, previous, look[2])
            else:
                self._scan_all(scan, seeded)
            self._update_index(scan)
            if quick and not scan.add and not scan.remove:
                # Nothing changed since our own last snapshot, whose tree our index describes.
                # (Without the quick look the index may be ahead of it: a process that died
                # between updating the index and recording its snapshot. git writes the tree.)
                assert previous is not None
                tree = previous.tree
            else:
                if seeded is not None:
                    seeded.trees_written()  # the unchanged folders' trees are stored by then
                tree = self._write_tree()
            snap = _Snapshot(tree, scan.modes, scan.skipped, scan.stats)
            commit = self._record(snap, previous_commit)
            self._look = (commit, _stamp(self.index), scan.recent())
        finally:
            scan.close()
            if seeded is not None:
                seeded.trees_written()
        return commit

    def _scan_all(self, scan: _Scan, seeded: Seeded | None) -> None:
        """A full look: git's stat comparison against our index, then one stat of every file
        (its exact permission bits), reading again what the index's time cannot vouch for
        (in an index seeded from the user's, hashed first: :func:`snapshot_seed.vouch`)."""
        try:
            # The second before the index was written, and after: git's stat comparison cannot
            # vouch for a file whose inode time is in the same second as its entry's.
            recent_after = (os.stat(self.index).st_mtime_ns // 10**9 - 1) * 10**9
        except OSError:
            recent_after = 0
        tracked, changed, others, nested = self._listing()
        mine = seeded is not None
        scan.tracked(tracked - changed, check_size=mine, recent_after=recent_after, hold=mine)
        if seeded is not None:
            from reasonix.safety.snapshot_seed import vouch

            vouch(self, scan, seeded)
        scan.candidates(changed, in_index=True)
        scan.candidates(others, in_index=False)
        self._folders = _folders_of(tracked | others)
        scan.nested(nested, self._folders)

    def _scan_changes(self, scan: _Scan, previous: _Snapshot, recent: Recent) -> None:
        """A quick look after our own last snapshot: git compares every file's stat with what
        our index recorded (in C, no file read) and lists the new files at the same time; only
        those, and the files too recent for git's stat to be trusted, are looked at."""
        changed, others, nested = self._changes()
        again = set(recent) - changed - scan.unchanged(recent)
        scan.carry(previous.modes, changed | again)
        scan.candidates(changed, in_index=True)
        scan.candidates(again, in_index=True, reread=True)
        scan.candidates(others, in_index=False)
        self._folders |= _folders_of(others)  # a folder emptied since has no .git of its own
        scan.nested(nested, self._folders)

    def _changes(self) -> tuple[set[str], set[str], list[str]]:
        """(changed, others, nested): the index's files whose stat or content differ from the
        index (``diff-files``), and what :meth:`_untracked` says, run side by side."""
        lister = subprocess.Popen(
            ["git", *_STORE_FLAGS, "ls-files", "-z", "-o", f"--exclude-from={self.exclude}"],
            cwd=self.workspace,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            dirty = self.run("diff-files", "-z", "--name-only", "--no-renames")
        finally:
            listed, err = lister.communicate(timeout=300)
        if lister.returncode != 0:
            raise _GitError(f"git ls-files failed: {err.decode('utf-8', 'replace').strip()}")
        changed = {n.decode("utf-8", "surrogateescape") for n in dirty.split(b"\0") if n}
        others, nested = _split_others(listed)
        return changed, others, nested

    def _update_index(self, scan: _Scan) -> None:
        """Removals, then additions. A step's few removals (the files it re-reads) ride on the
        command line of the one ``update-index`` that adds (its options apply in order), which
        saves a git process a step; many go through a call of their own."""
        remove = scan.remove + scan.reread
        first: tuple[str, ...] = ()
        if remove and (len(remove) > _FEW or not scan.add):
            self.run("update-index", "-z", "--force-remove", "--stdin", stdin=_nul(remove))
        elif remove:  # "./": a name that starts with "-" is not an option
            first = ("--force-remove", *(f"./{n}" for n in remove), "--no-force-remove")
        if scan.add:
            # Many new files (a first snapshot) go into one pack instead of a loose file each.
            bulk = ("-c", "core.bigFileThreshold=1") if len(scan.add) > 200 else ()
            names = _nul(sorted(scan.add))
            self.run(*bulk, "update-index", "-z", *first, "--add", "--stdin", stdin=names)

    def _write_tree(self, env: dict[str, str] | None = None) -> str:
        from reasonix.safety.snapshot_seed import borrowing

        # Borrowed blobs are not in our store (yet): git is told not to look for them, and
        # writes every tree into our store.
        missing_ok = ("--missing-ok",) if borrowing(self) else ()
        return self.run("write-tree", *missing_ok, env=env).decode().strip()

    def _record(self, snap: _Snapshot, previous_commit: str | None) -> str:
        """The snapshot's commit (the previous one when nothing differs), made the last."""
        previous = self.load(previous_commit) if previous_commit else None
        if previous is not None and snap == previous and previous_commit is not None:
            return previous_commit
        commit = self.commit(snap)
        self._meta_cache[commit] = snap
        tmp = self.dir / "last.tmp"
        tmp.write_text(commit + "\n", encoding="utf-8")
        os.replace(tmp, self.dir / "last")
        return commit

    def overlay(self, base: _Snapshot, images: Mapping[str, _Image | None]) -> str:
        """The commit of ``base`` with the given files' bytes instead (None: absent): the
        snapshot of a step that came while ``base`` was being taken. Caller holds the lock."""
        env = {**self.env(), "GIT_INDEX_FILE": str(self.dir / "index.early")}
        flags = ("-c", "core.splitIndex=false", "-c", "core.literalPathspecs=true")
        modes, skipped, lines = dict(base.modes), dict(base.skipped), []
        for name, image in sorted(images.items()):
            modes.pop(name, None)
            skipped.pop(name, None)
            sha, mode = "0" * 40, "0"
            if image is not None:
                sha = self.run("hash-object", "-w", "--stdin", stdin=image[1]).decode().strip()
                mode = "120000" if image[0] == _LINK else "100755" if image[0] & 0o100 else "100644"
                if image[0] != _LINK and image[0] not in (0o644, 0o755):
                    modes[name] = image[0]
            lines.append(f"{mode} {sha}\t{name}")
        try:
            self.run(*flags, "read-tree", base.tree, env=env)
            self.run(*flags, "update-index", "-z", "--index-info", stdin=_nul(lines), env=env)
            excluded = self.run(
                *flags, "ls-files", "-z", "-c", "-i", f"--exclude-from={self.exclude}",
                "--", *images, env=env,
            )  # fmt: skip
            if excluded:
                for name in excluded.decode("utf-8", "surrogateescape").split("\0"):
                    modes.pop(name, None)
                remove = ("update-index", "-z", "--force-remove", "--stdin")
                self.run(*flags, *remove, stdin=excluded, env=env)
            tree = self._write_tree(env)
        finally:
            (self.dir / "index.early").unlink(missing_ok=True)
        return self.commit(_Snapshot(tree, modes, skipped))

    def commit(self, snap: _Snapshot) -> str:
        """The snapshot's commit, written as a loose object without a git process: the bytes
        ``git commit-tree`` writes with our fixed identity and date. Caller holds the lock."""
        who = "reasonix <reasonix@localhost> 946684800 +0000"
        body = f"tree {snap.tree}\nauthor {who}\ncommitter {who}\n\n{snap.message()}".encode()
        raw = b"commit %d\0" % len(body) + body
        sha = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        path = self.git_dir / "objects" / sha[:2] / sha[2:]
        if not path.exists():
            path.parent.mkdir(mode=0o700, exist_ok=True)
            tmp = path.with_name(f"tmp_obj_{sha[2:]}")
            tmp.unlink(missing_ok=True)  # left by a process that died: read-only
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as out:
                out.write(zlib.compress(raw))
            os.replace(tmp, path)
        return sha

    def load(self, commit: str) -> _Snapshot | None:
        cached = self._meta_cache.get(commit)
        if cached is not None:
            return cached
        try:
            raw = self.run("cat-file", "commit", commit, reads=True).decode("utf-8", "replace")
        except _GitError:
            return None
        header, _, message = raw.partition("\n\n")
        tree = next(
            (line.split()[1] for line in header.splitlines() if line.startswith("tree ")), ""
        )
        if not tree:
            return None
        snap = _Snapshot.parse(tree, message)
        self._meta_cache[commit] = snap
        return snap

    # -- refs ----------------------------------------------------------------------------------

    @staticmethod
    def ref(session_id: str, seq: int) -> str:
        return f"refs/steps/{_session_file_name(session_id)}/{seq}"

    def set_refs(self, refs: Mapping[str, str]) -> None:
        """Written as git's loose refs (a loose ref outranks a packed one), without a git
        process: a step sets two. Caller holds the lock."""
        for ref, commit in refs.items():
            parts = ref.split("/")
            if (
                not re.fullmatch(r"[0-9a-f]{40}", commit)
                or parts[0] != "refs"
                or any(not part or part.startswith(".") or part.endswith(".lock") for part in parts)
            ):
                raise _GitError(f"not a ref to set: {ref} {commit}")
            path = self.git_dir / ref
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".lock")
            tmp.write_text(commit + "\n", encoding="ascii")
            os.replace(tmp, path)

    def delete_refs(self, refs: Iterable[str]) -> None:
        lines = "".join(f"delete {r}\n" for r in refs)
        if lines:
            self.run("update-ref", "--stdin", stdin=lines.encode())

    # -- reading a snapshot ----------------------------------------------------------------------

    def diff(self, old_tree: str, new_tree: str) -> list[tuple[str, str, str, str, str, str]]:
        """(status, path, old mode, old blob, new mode, new blob) for every path that differs."""
        out = self.run(
            "diff-tree", "-r", "-z", "--no-renames", "--raw", old_tree, new_tree, reads=True
        )
        fields = out.split(b"\0")
        rows = []
        i = 0
        while i + 1 < len(fields):
            head = fields[i].decode()
            if not head.startswith(":"):
                i += 1
                continue
            old_mode, new_mode, old_blob, new_blob, status = head[1:].split()
            name = fields[i + 1].decode("utf-8", "surrogateescape")
            rows.append((status[:1], name, old_mode, old_blob, new_mode, new_blob))
            i += 2
        return rows

    def blobs(self, shas: Sequence[str]) -> Iterator[tuple[str, bytes]]:
        """The content of each blob, streamed from one ``cat-file --batch``."""
        if not shas:
            return
        args = (*_GIT_FLAGS, "cat-file", "--batch")
        proc, feeder = fed_git(args, self.workspace, self.read_env(), shas)
        assert proc.stdout is not None
        try:
            for sha in shas:
                header = proc.stdout.readline().split()
                if len(header) != 3:
                    raise _GitError(f"the snapshot store lost object {sha}")
                size = int(header[2])
                data = proc.stdout.read(size)
                proc.stdout.read(1)
                yield sha, data
        finally:
            feeder.join(timeout=5)
            proc.stdout.close()
            proc.wait(timeout=30)

    def uncovered(self) -> list[str]:
        """Excluded paths present in the workspace now (folders end with ``/``)."""
        try:
            out = self.run(
                "ls-files", "-z", "-o", "-i", "--directory", f"--exclude-from={self.exclude}"
            )
        except _GitError:
            return []
        names = [n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n]
        ours = _rel(self.dir.parent.parent, self.workspace)
        return [n for n in names if n.rstrip("/") not in (".git", ours)]

    # -- size and pruning --------------------------------------------------------------------------

    def size_bytes(self) -> int:
        return _tree_size(self.dir)

    def gc(self) -> None:
        from reasonix.safety.snapshot_seed import settle_borrowed

        settle_borrowed(self, held=True)  # never prune while objects may be borrowed
        self.run("pack-refs", "--all")
        self.run("gc", "--prune=now", "--quiet")


def _folders_of(names: Iterable[str]) -> set[str]:
    """Every folder (not the workspace itself) on the paths ``names``."""
    folders: set[str] = set()
    for name in names:
        while "/" in name:
            name = name.rsplit("/", 1)[0]
            if name in folders:
                break
            folders.add(name)
    return folders


def _split_others(out: bytes) -> tuple[set[str], list[str]]:
    """(files, nested repositories) of ``ls-files -o -z`` output (a repository ends in /)."""
    others: set[str] = set()
    nested: list[str] = []
    for entry in out.split(b"\0"):
        if entry:
            name = entry.decode("utf-8", "surrogateescape")
            (nested.append if name.endswith("/") else others.add)(name)
    return others, nested


#: A file's permission bits (or the link type) and bytes (a symlink's: its target).
_Image = tuple[int, bytes]
#: A step during a background snapshot (a file tool's, a bash step whose writes are known): turn,
#: call, tool, its path or command, and the images of
#: the files such steps touched, as they were then.
_Early = tuple[int, str, str, str, dict[str, _Image | None]]


def _image(path: Path, limit: float) -> tuple[bool, _Image | None]:
    """(known, image) of a file now: an image, None where nothing is there, unknown for what a
    snapshot does not keep (a folder, a file too large or unreadable)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return True, (_LINK, os.fsencode(os.readlink(path)))
        if stat.S_ISREG(st.st_mode) and st.st_size <= limit * 1024 * 1024:
            return True, (stat.S_IMODE(st.st_mode), path.read_bytes())
    except FileNotFoundError:
        return True, None
    except OSError:
        pass
    return False, None


def _read_journal(path: Path) -> list[Step]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            out.append(Step.from_dict(json.loads(line)))
    return out


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What says a file was rewritten: (mtime, ctime, size, inode); None when absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _tree_size(path: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def checkpoint_store_size(data_dir: Path) -> tuple[int, int]:
    """(bytes, workspaces) of the snapshot store under ``data_dir``, for ``reasonix doctor``."""
    root = data_dir / "checkpoints"
    if not root.is_dir():
        return 0, 0
    folders = [p for p in root.iterdir() if (p / "git").is_dir()]
    return _tree_size(root), len(folders)


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    if len(items) > _SHOWN:
        shown += f" and {len(items) - _SHOWN} more"
    return shown


def _done_lines(
    r: _Restorer,
    renamed: list[tuple[str, str]],
    recreated: list[str],
    removed: list[str],
    held: Mapping[str, str] | None = None,
) -> list[str]:
    """The lines of a rewind's summary that say what it changed, or that nothing differed."""
    lines = []
    if renamed:
        lines.append(f"Moved back {_names([f'{old} -> {new}' for old, new in renamed])}.")
    if recreated:
        lines.append(f"Recreated {_names(recreated)} (deleted since).")
    if r.restored:
        lines.append(f"Restored {_names(r.restored)}.")
    if removed:
        lines.append(f"Removed {_names(removed)} (created since).")
    if r.modes:
        lines.append(f"Restored the permissions of {_names(r.modes)}.")
    for git in r.repositories:
        lines.append(f"{git}: a repository created since, removed.")
    lost = [n for n in r.restored if n in r.current.skipped]
    if lost:
        lines.append(
            f"{_names(lost)}: the version replaced was too large for a snapshot "
            "(max_file_mb) and is not kept."
        )
    held = held or {}
    theirs = [n for n in r.kept if n not in held]
    if theirs:
        lines.append(
            f"Left alone {_names(theirs)}: changed or created since the agent's last "
            "snapshot, so not the agent's work; your version is kept."
        )
    for who in sorted(set(held.values())):
        names = sorted(n for n, w in held.items() if w == who)
        lines.append(
            f"Left alone {_names(names)}: changed while {who} ran, so maybe the job's work, "
            f"maybe yours; not restored. `/rewind --force {' '.join(map(_quoted, names))}` "
            "puts back the version this rewind went to."
        )
    if not (lines or r.failed):
        lines.append("No file differed from the snapshot.")
    return lines


def _held(windows: Mapping[str, list[tuple[float, float]]], busy: Sequence[Busy]) -> dict[str, str]:
    """The paths that changed while something of the agent's ran: path -> the names of what
    ran then (its changes cannot be told from someone else's)."""
    out = {}
    for name, spans in windows.items():
        who = [b.name for b in busy if any(b.overlaps(a, z) for a, z in spans)]
        if who:
            out[name] = " and ".join(who)
    return out


def _inside(path: str, workspace: Path) -> str | None:
    """``path`` (relative to the workspace, or absolute) as a name inside it; None outside."""
    full = Path(os.path.normpath(workspace / path))
    if not full.is_relative_to(workspace) or full == workspace:
        return None
    return full.relative_to(workspace).as_posix()


def _quoted(name: str) -> str:
    import shlex

    return shlex.quote(name)


def _listed(lead: str, reasons: Mapping[str, str]) -> str:
    items = [f"{name} ({why})" for name, why in sorted(reasons.items())]
    more = f"; and {len(items) - _SHOWN} more." if len(items) > _SHOWN else "."
    return lead + "; ".join(items[:_SHOWN]) + more


# ---------------------------------------------------------------------------------------------
# The manager


class CheckpointManager:
    """Snapshots before each step of one session, and rewinds to them.

    ``data_dir`` is our data folder (the store goes in ``<data_dir>/checkpoints``); by default
    the platform's user data folder, or ``$REASONIX_DATA_DIR``. Thread-safe and safe to share
    a workspace with other processes (a file lock serialises work on its store). A failed
    snapshot never stops the step; see :attr:`last_error`.
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        data_dir: str | Path | None = None,
        session_id: str = "default",
        settings: CheckpointsConfig | None = None,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.settings = settings or CheckpointsConfig()
        self.session_id = session_id
        if data_dir is None:
            from reasonix.store import default_store_path

            data_dir = default_store_path().parent
        self.data_dir = Path(data_dir)
        self._store = _Store(self.data_dir / "checkpoints", self.workspace, self.settings)
        self.journal = self._store.sessions / f"{_session_file_name(session_id)}.jsonl"
        self.last_error: str | None = None
        self._lock = threading.RLock()
        self._ready = False
        self._since_prune = 0
        self._seq: int | None = None
        self._background: threading.Thread | None = None
        self._copy: threading.Thread | None = None  # copies borrowed objects (snapshot_seed)
        self._stepped = False  # a step snapshot was taken since the last background one
        self._soon: threading.Timer | None = None
        self._closed = False  # wait(pending=False) ran: no new background snapshot
        # File tools' steps during a background snapshot, recorded over it when it ends.
        self._early: list[_Early] | None = None
        self._early_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    @property
    def store_dir(self) -> Path:
        """This workspace's private snapshot store."""
        return self._store.dir

    def _prepare(self) -> None:
        if not self._ready:
            self._store.ensure()
            self._ready = True
            self._prune_locked()

    # -- taking snapshots off the critical path -----------------------------------------------

    def prepare_in_background(self) -> None:
        """Take a snapshot now, in a background thread, so that the next step's snapshot only
        has to look at what changed since (at session start: the first snapshot of a folder
        looks at every file). It is not a step: nothing is journaled. A file tool's step that
        comes meanwhile does not wait (:meth:`_early_step`), any other step does (the same
        lock); a failure is left for that step to report."""
        if not self.enabled:
            return
        with self._lock:
            if self._closed:
                return
            if self._background is not None and self._background.is_alive():
                return
            self._stepped = False
            thread = threading.Thread(target=self._refresh, name="reasonix-snapshot", daemon=True)
            self._background = thread
            with self._early_lock:
                self._early = []
            thread.start()

    def after_step(self) -> None:
        """A tool call ended (before the next model request): when it took a step snapshot,
        hash what it changed in the background, overlapped with the model's answer. It starts
        after a short pause that the next step cancels, so calls that come back to back (many
        writes in one answer) do not pay for a snapshot each in between."""
        if not self._stepped:
            return
        with self._lock:
            if self._soon is not None:
                self._soon.cancel()
            self._soon = threading.Timer(_SETTLE_S, self.prepare_in_background)
            self._soon.daemon = True
            self._soon.start()

    def wait(self, *, pending: bool = True) -> None:
        """Wait for a background snapshot, and the copy of borrowed objects, to finish; one
        that is due after a step starts now (with ``pending=False``, as a closing session does,
        it is dropped)."""
        if not pending:
            with self._lock:
                self._closed = True  # a timer firing now starts nothing
        soon = self._soon
        if soon is not None and soon.is_alive():
            soon.cancel()
            if pending:
                self.prepare_in_background()
        # The copy of borrowed objects too, where this session recorded steps that need them; a
        # session that recorded none leaves it to the next (it resumes where it stopped).
        keep = pending or self._seq is not None
        for thread in (self._background, self._copy if keep else None):
            if thread is not None:
                thread.join()

    def _refresh(self) -> None:
        with self._lock:
            try:
                self._prepare()
                with self._store.locked():
                    commit = self._store.snapshot()
                    self._store.set_refs({"refs/last": commit})  # keeps it through pruning
                    self._record_early(commit)
                self._copy_in_background()
            except (OSError, NotImplementedError, _GitError, subprocess.SubprocessError) as exc:
                # The next step's own snapshot tries again and reports a failure.
                if self._take_early():
                    self.last_error = f"the snapshot before a step failed: {exc}"
            finally:
                self._take_early()

    def _take_early(self) -> list[_Early]:
        with self._early_lock:
            early, self._early = self._early or [], None
        return early

    def _early_step(
        self, turn: int, call_id: str, tool: str, detail: str, names: Sequence[str], *,
        exact: bool = False,
    ) -> bool:  # fmt: skip
        """A file tool's step while a background snapshot runs does not wait for it, nor does a
        bash step whose every write is known (:mod:`reasonix.safety.snapshot_early`): the bytes
        now of the files such steps touch are kept, and the step's snapshot is that background
        one with them (:meth:`_record_early`), which the step's own files cannot have changed
        before this. False: no background snapshot runs (or a name is outside; ``exact``: or
        one of them is not a file a snapshot keeps, a folder, too large, unreadable)."""
        with self._early_lock:
            if self._early is None or not self.enabled:
                return False
            if any(name.startswith(("/", "../")) for name in names):
                return False
            images = {}
            for path in {*names, *(p for entry in self._early for p in entry[4])}:
                known, image = _image(self.workspace / path, self.settings.max_file_mb)
                if known:
                    images[path] = image
                elif exact and path in names:
                    return False
            self._early.append((turn, call_id, tool, detail, images))
            self._stepped = True
            return True

    def _record_early(self, commit: str) -> None:
        """The early steps' snapshots: the background one, which may have looked at the files
        after some of them, with the bytes each file had at each step (kept then, or by the
        next step that touched it: nothing of the agent's changed it in between)."""
        base = self._store.load(commit)
        assert base is not None
        early, overlays = self._take_early(), []
        later: dict[str, _Image | None] = {}
        for entry in reversed(early):
            later = {**later, **entry[4]}
            overlays.append(later)
        for (turn, call_id, tool, name, _), images in zip(early, reversed(overlays), strict=True):
            step = self._store.overlay(base, images) if images else commit
            self._append(turn, call_id, tool, name, step, "step", last=commit)

    def _copy_in_background(self) -> None:
        """A first snapshot seeded from the user's repository borrows its objects: copy them
        into our store now, in the background, without holding up the steps (the lock is
        taken only for the last few objects)."""
        from reasonix.safety.snapshot_seed import borrowing

        if (self._copy is not None and self._copy.is_alive()) or not borrowing(self._store):
            return
        thread = threading.Thread(target=self._settle, name="reasonix-snapshot-copy", daemon=True)
        self._copy = thread
        thread.start()

    def _settle(self) -> None:
        from reasonix.safety.snapshot_seed import settle_borrowed

        try:
            settle_borrowed(self._store)
        except (OSError, _GitError, subprocess.SubprocessError, ValueError) as exc:
            # Still borrowing: the next step, or the store's pruning, tries again.
            self.last_error = f"copying the repository's objects into the snapshot store: {exc}"

    # -- recording -----------------------------------------------------------------------------

    def before_write(self, ctx: Any, path: Path, tool: str = "edit") -> Step | None:
        """Called by the file tools before they change ``path`` (``ctx``: the tool context).
        None also for a step recorded once the background snapshot it came during ends."""
        name = _rel(path, self.workspace)
        if self._early_step(ctx.turn, ctx.call_id, tool, name, (name,)):
            return None
        return self.before_step(ctx.turn, ctx.call_id, tool, name)

    def before_command(self, ctx: Any, command: str) -> Step | None:
        """Called by ``bash`` before it runs ``command``: snapshot unless it plainly only
        reads. During a background snapshot, a command whose every write is known keeps those
        files' bytes and goes on (:meth:`_early_step`); None then too."""
        if command_is_read_only(command, self.workspace):
            return None
        if self._early is not None and self.enabled:
            from reasonix.safety.snapshot_early import exact_writes

            names = exact_writes(command, self.workspace)
            if names is not None and self._early_step(
                ctx.turn, ctx.call_id, "bash", command, names, exact=True
            ):
                return None
        return self.before_step(ctx.turn, ctx.call_id, "bash", command)

    def before_step(self, turn: int, call_id: str, tool: str, detail: str) -> Step | None:
        """Snapshot the workspace and record it as the state before this step. Never raises:
        a failed snapshot must not stop the step (the failure is kept in ``last_error``)."""
        if not self.enabled:
            return None
        soon = self._soon
        if soon is not None:
            soon.cancel()  # this step's own snapshot does the work now
        with self._lock:
            try:
                self._prepare()
                with self._store.locked():
                    commit = self._store.snapshot()
                    step = self._append(turn, call_id, tool, detail, commit, "step")
                    self._stepped = True
                    self._since_prune += 1
                    if self._since_prune >= 200:
                        self._prune_locked(held=True)
                self._copy_in_background()
                return step
            except (OSError, NotImplementedError, _GitError, subprocess.SubprocessError) as exc:
                self.last_error = f"the snapshot before this step failed: {exc}"
                return None

    def _entries(self) -> list[Step]:
        return _read_journal(self.journal)

    def _append(
        self, turn: int, call_id: str, tool: str, detail: str, commit: str, kind: str,
        last: str | None = None,
    ) -> Step:  # fmt: skip
        if self._seq is None:
            entries = self._entries()
            self._seq = entries[-1].seq if entries else 0
        self._seq += 1
        seq = self._seq
        step = Step(seq, turn, call_id, tool, detail[:500], commit, time.time(), kind)
        # refs/last keeps the snapshot our index describes alive through pruning.
        last = last or commit
        self._store.set_refs({self._store.ref(self.session_id, seq): commit, "refs/last": last})
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(json.dumps(step.to_dict()) + "\n")
        return step

    def _write_journal(self, path: Path, entries: list[Step]) -> None:
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(e.to_dict()) + "\n" for e in entries)
        os.replace(tmp, path)

    def steps(self) -> list[Step]:
        """The steps of this session that can be undone, oldest first."""
        with self._lock:
            return [e for e in self._entries() if e.kind == "step"]

    def turns(self) -> list[int]:
        """Executor turns that have snapshots, oldest first."""
        return sorted({s.turn for s in self.steps()})

    def changes_since_start(self) -> list[FileChange] | None:
        """What changed in the files since this session's first step: its snapshot against
        the files now, one :class:`FileChange` per path that differs (content, type or being
        there), in path order; empty when the files are as they were; None when no step of
        this session took a snapshot (or snapshots are off). Raises OSError when the store
        cannot be read."""
        if not self.enabled:
            return None
        with self._lock:
            steps = self.steps()
            if not steps:
                return None
            try:
                self._prepare()
                with self._store.locked():
                    first = self._store.load(steps[0].commit)
                    current = self._store.load(self._store.snapshot())
                    if first is None or current is None:
                        raise OSError("the snapshot store lost this session's first snapshot")
                    rows = self._store.diff(first.tree, current.tree)
                    wanted = [b for row in rows for b in (row[3], row[5]) if set(b) != {"0"}]
                    content = dict(self._store.blobs(sorted(set(wanted))))
            except (_GitError, subprocess.SubprocessError) as exc:
                raise OSError(f"reading the snapshots failed: {exc}") from exc
        return [
            FileChange(
                name,
                status,
                content.get(old_blob) if set(old_blob) != {"0"} else None,
                content.get(new_blob) if set(new_blob) != {"0"} else None,
                old_mode.startswith("12"),
                new_mode.startswith("12"),
            )
            for status, name, old_mode, old_blob, new_mode, new_blob in sorted(
                rows, key=lambda r: r[1]
            )
        ]

    # -- rewinding -----------------------------------------------------------------------------

    def rewind(self, turn: int, *, label: str = "", busy: Sequence[Busy] = ()) -> RewindResult:
        """Put the files back to how they were before executor turn ``turn``'s first step
        (turns after it included), and forget the steps from there on. ``label`` names the
        point in the summary (default ``before turn <turn>``); ``busy``: what of the agent's
        ran outside its steps (what changed meanwhile is left alone and named)."""
        with self._lock:
            first = next((s for s in self.steps() if s.turn >= turn), None)
            if first is None:
                text = "No step changed files in those turns; the files are as they were."
                if not self.enabled:
                    text = "Snapshots are off ([checkpoints] enabled = false); files unchanged."
                return RewindResult(turn, text=text)
            return self._rewind_to(first, label or f"before turn {turn}", busy)

    def force(self, paths: Sequence[str]) -> RewindResult:
        """``/rewind --force PATH``: right after a rewind, put ``paths`` back to the version
        that rewind went to, over what is there now (the rewind left them alone: changed while
        a job ran, or too large for a snapshot). The files as they are now go into the store
        first, as for any rewind."""
        with self._lock:
            entries = [e for e in self._entries() if e.kind in ("step", "after", "rewind")]
            if len(entries) < 2 or (entries[-2].kind, entries[-1].kind) != ("rewind", "after"):
                return RewindResult(
                    0,
                    text="Nothing to force: --force PATH works right after a rewind (before the "
                    "next step), on the files it left alone. Nothing was changed.",
                )
            names = set()
            for path in paths:
                name = _inside(path, self.workspace)
                if name is None:
                    return RewindResult(0, text=f"{path} is not inside the workspace.")
                names.add(name)
            return self._force(entries[-1], names)

    def _force(self, target: Step, names: set[str]) -> RewindResult:
        try:
            self._prepare()
            with self._store.locked():
                wanted = self._store.load(target.commit)
                now_commit = self._store.snapshot()
                current = self._store.load(now_commit)
                if wanted is None or current is None:
                    return RewindResult(0, text="The snapshot is gone (pruned); files unchanged.")
                self._append(target.turn, "", "rewind", target.detail, now_commit, "rewind")
                from reasonix.safety.snapshot_restore import _Restorer

                probe = _Restorer(self._store, wanted, current)
                others = probe.differing() - names
                restorer = _Restorer(
                    self._store, wanted, current, others, force=names, nested=False
                )
                restorer.run()
                restorer.kept = []  # left alone because not named, not as someone else's
                self._append(target.turn, "", "after", target.detail, target.commit, "after")
                self._store.set_refs({"refs/last": now_commit})
        except (OSError, _GitError, subprocess.SubprocessError) as exc:
            return RewindResult(target.turn, text=f"Putting the files back failed: {exc}")
        return self._result(target, target.detail, restorer, [])

    def undo(self, count: int = 1, *, busy: Sequence[Busy] = ()) -> RewindResult:
        """Put the files back to how they were before the last ``count`` steps that changed
        them (a step whose snapshot equals the files after it, like a test run, is not one).
        ``busy`` as for :meth:`rewind`."""
        with self._lock:
            target = self.restore_point(count)
            if target is None:
                return RewindResult(0, text="No step of this session changed files.")
            return self._rewind_to(target, "", busy)

    def restore_point(self, count: int) -> Step | None:
        """The step ``undo(count)`` goes back to: the ``count``-th most recent step that changed
        the files (None: no step did)."""
        changing = self.changing_steps()
        if not changing or count < 1:
            return None
        return changing[-min(count, len(changing))]

    def changing_steps(self) -> list[Step]:
        """The steps that changed the files, oldest first: those whose snapshot differs from
        the files after them (the next step's snapshot, the end of their turn, or now)."""
        with self._lock:
            entries = [e for e in self._entries() if e.kind in ("step", "after")]
            if not any(e.kind == "step" for e in entries):
                return []
            try:
                self._prepare()
                with self._store.locked():
                    now: str | None = self._store.snapshot()
                    states = [self._store.load(e.commit) for e in entries]
                    after_last = self._store.load(now) if now else None
            except (OSError, _GitError, subprocess.SubprocessError) as exc:
                self.last_error = f"reading the snapshots failed: {exc}"
                return [e for e in entries if e.kind == "step"]
            out = []
            for i, entry in enumerate(entries):
                if entry.kind != "step":
                    continue
                following = states[i + 1] if i + 1 < len(entries) else after_last
                if states[i] is None or following is None or states[i] != following:
                    out.append(entry)
            return out

    def after_turn(self, turn: int) -> None:
        """Record the files as the agent left them, at the end of a turn that took a snapshot:
        a later rewind compares with it, so a file someone else changes afterwards is left
        alone. Never raises (a failure is kept in ``last_error``)."""
        if not self.enabled:
            return
        with self._lock:
            entries = self._entries()
            if not entries or entries[-1].kind != "step":
                return  # no step since the last record: the files are the agent's as recorded
            try:
                self._prepare()
                with self._store.locked():
                    commit = self._store.snapshot()
                    self._append(turn, "", "after", "end of turn", commit, "after")
            except (OSError, _GitError, subprocess.SubprocessError) as exc:
                self.last_error = f"the snapshot at the end of the turn failed: {exc}"

    def _agent_state(self) -> tuple[_Snapshot | None, float]:
        """The files as the agent last left them, and when: the latest ``after`` record, or
        when a step came after it (a turn cut short before its end was recorded) that step's
        snapshot, so what changed since is treated as someone else's. None: no record at
        all."""
        entries = [e for e in self._entries() if e.kind in ("step", "after")]
        if not entries:
            return None, 0.0
        return self._store.load(entries[-1].commit), entries[-1].time

    def _foreign(self, agent: _Snapshot | None, current: _Snapshot) -> set[str]:
        """Paths whose current content, type or permissions differ from the agent's last
        snapshot of them, and repositories new since it: someone else changed or created them."""
        from reasonix.safety.snapshot_scan import repositories

        if agent is None:
            return set()
        names = {row[1] for row in self._store.diff(agent.tree, current.tree)}
        # a repository made since: a rewind removes only the agent's
        names |= repositories(current.skipped) - repositories(agent.skipped)
        for name in {*agent.modes, *current.modes}:
            if agent.modes.get(name) != current.modes.get(name):
                names.add(name)
        return names

    def _changed_between_turns(self, seq: int) -> dict[str, list[tuple[float, float]]]:
        """Paths someone else changed between two of the agent's turns from record ``seq`` on:
        those that differ between a turn's ``after`` record and the next step's snapshot. A
        rewind over several turns leaves them alone, as it does what changed since the last
        turn (the user's edit between turn 1 and turn 2 matched turn 2's record and would
        otherwise be overwritten by turn 1's snapshot). Each with when it changed (between
        which two records)."""
        entries = [e for e in self._entries() if e.kind in ("step", "after") and e.seq >= seq]
        names: dict[str, list[tuple[float, float]]] = {}
        for left, right in itertools.pairwise(entries):
            if left.kind != "after" or right.kind != "step" or left.commit == right.commit:
                continue
            before, after = self._store.load(left.commit), self._store.load(right.commit)
            if before is not None and after is not None:
                for name in self._foreign(before, after):
                    names.setdefault(name, []).append((left.time, right.time))
        return names

    def _rewind_to(self, target: Step, label: str, busy: Sequence[Busy] = ()) -> RewindResult:
        if not label:
            label = f"before step {target.seq} ({target.describe()})"
        try:
            self._prepare()
            with self._store.locked():
                wanted = self._store.load(target.commit)
                if wanted is None:
                    return RewindResult(
                        target.turn,
                        text=f"The snapshot {label} is gone (pruned); files unchanged.",
                    )
                agent, since = self._agent_state()
                now_commit = self._store.snapshot()
                current = self._store.load(now_commit)
                assert current is not None
                # The files as they are now stay in the store (a rewind's record and its ref),
                # so even what the rewind replaces can be had back.
                self._append(target.turn, "", "rewind", label, now_commit, "rewind")
                windows = self._changed_between_turns(target.seq)
                for name in self._foreign(agent, current):
                    windows.setdefault(name, []).append((since, time.time()))
                foreign = set(windows)
                held = _held(windows, busy)
                from reasonix.safety.snapshot_restore import _Restorer

                # A file too large for a snapshot that is still exactly as the agent left it
                # (the same stat) is the agent's: it may be restored over.
                mine = agent.stats if agent is not None else {}
                owned = {n for n, st in current.stats.items() if mine.get(n) == st} - foreign
                restorer = _Restorer(self._store, wanted, current, foreign, force=owned)
                restorer.run()
                self._drop_from(target.seq)
                # What the agent's files are now: the snapshot it went back to. A file kept as
                # someone else's still differs from it, so a later rewind keeps it too.
                self._append(target.turn, "", "after", label, target.commit, "after")
                self._store.set_refs({"refs/last": now_commit})  # what our index describes
                uncovered = self._store.uncovered()
                # The restored files are picked up by the next snapshot's stat check.
        except (OSError, _GitError, subprocess.SubprocessError) as exc:
            return RewindResult(target.turn, text=f"Rewinding the files failed: {exc}")
        return self._result(target, label, restorer, uncovered, held)

    def _drop_from(self, seq: int) -> None:
        entries = self._entries()
        gone = [e for e in entries if e.kind in ("step", "after") and e.seq >= seq]
        if not gone:
            return
        self._store.delete_refs(self._store.ref(self.session_id, e.seq) for e in gone)
        self._write_journal(self.journal, [e for e in entries if e not in gone])

    def _result(
        self,
        target: Step,
        label: str,
        r: _Restorer,
        uncovered: list[str],
        held: Mapping[str, str] | None = None,
    ) -> RewindResult:
        renamed = r.renamed()
        back = {new for _, new in renamed}
        gone = {old for old, _ in renamed}
        removed = [n for n in r.removed if n not in gone]
        recreated = [n for n in r.recreated if n not in back]
        covered = {**r.not_covered}
        for name in uncovered:
            covered.setdefault(name, "excluded by [checkpoints] exclude or the defaults")
        held = {n: w for n, w in (held or {}).items() if n in r.kept}
        lines = [
            f"Files put back to {label}.",
            *_done_lines(r, renamed, recreated, removed, held),
        ]
        if r.failed:
            lines.append(_listed("Not restored: ", r.failed))
        if covered:
            lines.append(_listed("Not covered by snapshots, left as they are: ", covered))
        return RewindResult(
            target.turn,
            tuple(r.restored),
            tuple(recreated),
            tuple(removed),
            tuple(renamed),
            tuple(r.modes),
            tuple(sorted(r.failed.items())),
            tuple(sorted(covered.items())),
            "\n".join(lines),
            tuple(r.kept),
            tuple(sorted(held.items())),
        )

    # -- pruning -------------------------------------------------------------------------------

    def prune(self, now: float | None = None) -> int:
        """Drop snapshots older than ``keep_days``, then the oldest while the store is over
        ``max_store_mb``. Returns how many were dropped."""
        with self._lock:
            self._prepare()
            return self._prune_locked(now=now)

    def _prune_locked(self, *, held: bool = False, now: float | None = None) -> int:
        self._since_prune = 0
        lock = contextlib.nullcontext() if held else self._store.locked()
        try:
            with lock:
                return self._prune(time.time() if now is None else now)
        except (OSError, _GitError, subprocess.SubprocessError) as exc:
            self.last_error = f"pruning the snapshot store failed: {exc}"
            return 0

    def _journals(self) -> dict[Path, list[Step]]:
        return {path: _read_journal(path) for path in sorted(self._store.sessions.glob("*.jsonl"))}

    def _prune(self, now: float) -> int:
        journals = self._journals()
        cutoff = now - self.settings.keep_days * 86400
        doomed: set[tuple[Path, int]] = {
            (path, e.seq) for path, entries in journals.items() for e in entries if e.time < cutoff
        }
        limit = self.settings.max_store_mb * 1024 * 1024
        dropped = self._drop(journals, doomed)
        if dropped:
            self._store.gc()
        while self._store.size_bytes() > limit:
            everything = sorted(
                ((e.time, path, e.seq) for path, entries in journals.items() for e in entries),
            )
            if not everything:
                break
            oldest = everything[: max(1, len(everything) // 4)]
            count = self._drop(journals, {(path, seq) for _, path, seq in oldest})
            dropped += count
            self._store.gc()
        return dropped

    def _drop(self, journals: dict[Path, list[Step]], doomed: set[tuple[Path, int]]) -> int:
        if not doomed:
            return 0
        refs = []
        for path, entries in journals.items():
            keep = [e for e in entries if (path, e.seq) not in doomed]
            if len(keep) == len(entries):
                continue
            refs += [self._store.ref(path.stem, e.seq) for e in entries if e not in keep]
            journals[path] = keep
            if keep:
                self._write_journal(path, keep)
            else:
                path.unlink(missing_ok=True)
        self._store.delete_refs(refs)
        return len(refs)

    def store_size(self) -> int:
        """Bytes this workspace's snapshots take."""
        return self._store.size_bytes() if self._store.dir.is_dir() else 0


#: The session's checkpoint manager in the file and shell tools' context.
CHECKPOINTS_KEY = StateKey("checkpoints", CheckpointManager)
