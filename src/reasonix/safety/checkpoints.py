"""Per-turn checkpoints of the files the tools change, and rewinding to them.

Before the first write to a file in a turn (``write_file``, ``edit_file``, ``multi_edit``,
``delete_file``), the file tools call :meth:`CheckpointManager.record`, which saves the file's
bytes and mode, or the fact that it did not exist (and which parent folders the write is about to
create). :meth:`CheckpointManager.rewind` puts back every file changed at or after a turn, so the
caller can truncate the conversation to the same point.

What ``bash`` changes is not tracked file by file (a command can touch anything). When the
workspace is in a git repository the ``bash`` tool calls :meth:`before_command` before the first
command of a turn, which stores a snapshot commit of the working tree (tracked and untracked
files, not ignored ones) under ``refs/reasonix/checkpoints/<turn>`` without touching the user's
index, branch or stash. ``rewind(turn, restore_commands=True)`` restores it too.

A rewind never writes or deletes through a folder that has become a symlink since the file was
recorded (a command could have pointed it outside the workspace); such files are reported as not
restored.

Checkpoints live in memory; with ``store_dir`` they are also written to disk (one folder per
turn plus content-addressed blobs) and loaded again by a new manager on the same folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from reasonix.tools.state import StateKey

GIT_REF_PREFIX = "refs/reasonix/checkpoints/"
_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "reasonix",
    "GIT_AUTHOR_EMAIL": "reasonix@localhost",
    "GIT_COMMITTER_NAME": "reasonix",
    "GIT_COMMITTER_EMAIL": "reasonix@localhost",
}


@dataclass(frozen=True, slots=True)
class FileCheckpoint:
    """A file as it was before a turn first changed it. ``content`` None: it did not exist."""

    path: Path
    content: bytes | None
    mode: int | None = None
    created_dirs: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class RewindResult:
    """What :meth:`CheckpointManager.rewind` did; ``text`` is a summary for the user or model."""

    turn: int
    restored: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    git_restored: bool = False
    git_ref: str | None = None
    text: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass
class _Turn:
    files: dict[str, FileCheckpoint] = field(default_factory=dict)
    git_ref: str | None = None
    ran_commands: bool = False


class CheckpointManager:
    """Saves files before each turn changes them and restores them on :meth:`rewind`.

    Thread-safe: the file tools run in worker threads.
    """

    def __init__(
        self, workspace: str | Path, *, store_dir: str | Path | None = None, git: bool = True
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.use_git = git
        self.last_git_error: str | None = None
        self._turns: dict[int, _Turn] = {}
        self._lock = threading.RLock()
        if self.store_dir is not None:
            self._load()

    # -- recording -----------------------------------------------------------------------------

    def record(self, turn: int, path: Path) -> None:
        """Save ``path`` (a resolved path) as it is now, unless this turn already saved it."""
        key = str(path)
        with self._lock:
            entry = self._turns.setdefault(turn, _Turn())
            if key in entry.files:
                return
            if path.is_file():
                snap = FileCheckpoint(path, path.read_bytes(), path.stat().st_mode & 0o7777)
            elif path.exists():
                return  # a folder: writing to it fails anyway, nothing to save
            else:
                missing: list[Path] = []
                parent = path.parent
                while not parent.exists() and parent != parent.parent:
                    missing.append(parent)
                    parent = parent.parent
                snap = FileCheckpoint(path, None, None, tuple(missing))
            entry.files[key] = snap
            self._save_turn(turn)

    def turns(self) -> list[int]:
        """Turns that have checkpoints, oldest first."""
        with self._lock:
            return sorted(self._turns)

    def changed_files(self, turn: int) -> list[Path]:
        """Files saved before ``turn`` changed them."""
        with self._lock:
            entry = self._turns.get(turn)
            return [snap.path for snap in entry.files.values()] if entry else []

    def git_ref(self, turn: int) -> str | None:
        """The git snapshot ref taken before ``turn``'s first command, if any."""
        with self._lock:
            entry = self._turns.get(turn)
            return entry.git_ref if entry else None

    def before_command(self, turn: int) -> str | None:
        """Called by ``bash`` before it runs a command: the first time in a turn, snapshot the
        workspace in git (if it is a repository). Returns the snapshot ref, if there is one.
        Never raises: a failed snapshot must not stop the command; see ``last_git_error``."""
        with self._lock:
            entry = self._turns.setdefault(turn, _Turn())
            first = not entry.ran_commands
            entry.ran_commands = True
            if first and self.use_git and entry.git_ref is None:
                try:
                    entry.git_ref = self._git_snapshot(turn)
                except (OSError, subprocess.SubprocessError) as exc:
                    self.last_git_error = str(exc)
            self._save_turn(turn)
            return entry.git_ref

    # -- rewinding -----------------------------------------------------------------------------

    def rewind(self, turn: int, *, restore_commands: bool = False) -> RewindResult:
        """Restore every file changed at or after ``turn`` to how it was before ``turn``.

        With ``restore_commands`` and a git snapshot from one of those turns, the working tree
        is first put back to that snapshot (undoing what ``bash`` changed in git-visible files).
        The checkpoints of the rewound turns are dropped; git snapshot refs are kept.
        """
        with self._lock:
            later = sorted(t for t in self._turns if t >= turn)
            entries = [self._turns[t] for t in later]
            git_ref = next((e.git_ref for e in entries if e.git_ref), None)
            command_turns = [t for t, e in zip(later, entries, strict=True) if e.ran_commands]
            notes: list[str] = []
            git_restored = False
            if restore_commands and git_ref:
                try:
                    self._git_restore(git_ref)
                    git_restored = True
                except (OSError, subprocess.SubprocessError) as exc:
                    notes.append(f"Restoring the git snapshot {git_ref} failed: {exc}")
            restored: list[str] = []
            removed: list[str] = []
            skipped: list[str] = []
            seen: set[str] = set()
            for entry in entries:
                for key, snap in entry.files.items():
                    if key in seen:
                        continue
                    seen.add(key)
                    outcome = self._restore_file(snap)
                    {"restored": restored, "removed": removed, "skipped": skipped}[outcome].append(
                        self._display(snap.path)
                    )
            if skipped:
                notes.append(
                    f"Not restored: {', '.join(skipped)}: a folder on the path is now a symlink "
                    "that leads elsewhere, and a rewind never writes through it."
                )
            for t in later:
                del self._turns[t]
                self._drop_turn(t)
            text = self._summary(turn, restored, removed, command_turns, git_ref, git_restored)
            if notes:
                text += "\n" + "\n".join(notes)
            return RewindResult(
                turn, tuple(restored), tuple(removed), git_restored, git_ref, text.strip()
            )

    def _restore_file(self, snap: FileCheckpoint) -> str:
        """Put one file back: ``restored``, ``removed``, or ``skipped`` when a folder on its path
        has become a symlink since (writing or deleting through it could reach outside the
        workspace)."""
        path = snap.path
        if os.path.realpath(path.parent) != str(path.parent):
            return "skipped"
        if snap.content is None:
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.is_dir():
                shutil.rmtree(path)
            for folder in snap.created_dirs:  # deepest first, as recorded
                if os.path.realpath(folder) != str(folder):
                    break
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only if empty: never remove what someone else put there
            return "removed"
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        # A new temporary file (O_EXCL): a symlink planted at a fixed name cannot catch the write.
        prefix = f".{path.name[:200]}."
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=".reasonix-restore", dir=path.parent)
        tmp = Path(name)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(snap.content)
                os.fchmod(out.fileno(), snap.mode if snap.mode is not None else 0o644)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return "restored"

    def _display(self, path: Path) -> str:
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    @staticmethod
    def _summary(
        turn: int,
        restored: list[str],
        removed: list[str],
        command_turns: list[int],
        git_ref: str | None,
        git_restored: bool,
    ) -> str:
        lines = [f"Rewound file changes to before turn {turn}."]
        if restored:
            lines.append(f"Restored {len(restored)} file(s): {', '.join(restored)}.")
        if removed:
            lines.append(f"Removed {len(removed)} file(s) created since: {', '.join(removed)}.")
        if not restored and not removed:
            lines.append("No file-tool changes were recorded in those turns.")
        if command_turns:
            turns = ", ".join(str(t) for t in command_turns)
            lines.append(
                f"bash commands ran in turn(s) {turns}; their changes are not tracked file by "
                "file" + (" and were restored from the git snapshot." if git_restored else ".")
            )
        else:
            lines.append("Changes made by bash commands are not tracked file by file.")
        if git_ref and not git_restored:
            lines.append(
                f"A git snapshot of the workspace before those commands is at {git_ref}; "
                "rewind with restore_commands=True to restore it (git-visible files only)."
            )
        elif git_restored:
            lines.append(f"Files ignored by git are not covered by the snapshot {git_ref}.")
        return "\n".join(lines)

    # -- git safety net ------------------------------------------------------------------------

    def _git(
        self, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
    ) -> str:
        from reasonix.safety.environment import git_environment

        # The allowlisted environment: no key, no GIT_DIR/GIT_CONFIG_* steering from outside.
        run_env = {**git_environment(), **(env or {})}
        proc = subprocess.run(
            ["git", *args],
            cwd=self.workspace,
            env=run_env,
            input=stdin,
            capture_output=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise subprocess.SubprocessError(f"git {args[0]} failed: {err}")
        return proc.stdout.decode("utf-8", "surrogateescape").strip()

    def is_git_repo(self) -> bool:
        """Whether the workspace is inside a git working tree (and git is installed)."""
        try:
            return self._git("rev-parse", "--is-inside-work-tree") == "true"
        except (OSError, subprocess.SubprocessError):
            return False

    def _scratch_index(self, tmp: str) -> dict[str, str]:
        """A private index file seeded from the real one (so unchanged files hash fast), leaving
        the user's staging area alone."""
        real_index = Path(self._git("rev-parse", "--git-path", "index"))
        if not real_index.is_absolute():
            real_index = self.workspace / real_index
        scratch = os.path.join(tmp, "index")
        if real_index.exists():
            shutil.copyfile(real_index, scratch)
        return {"GIT_INDEX_FILE": scratch}

    def _worktree_tree(self, tmp: str) -> str:
        env = self._scratch_index(tmp)
        self._git("add", "-A", "--", ".", env=env)
        return self._git("write-tree", env=env)

    def _git_snapshot(self, turn: int) -> str | None:
        if not self.is_git_repo():
            return None
        with tempfile.TemporaryDirectory(prefix="reasonix-ckpt-") as tmp:
            tree = self._worktree_tree(tmp)
        parents: list[str] = []
        with contextlib.suppress(subprocess.SubprocessError):
            parents = ["-p", self._git("rev-parse", "--verify", "-q", "HEAD")]
        message = f"reasonix checkpoint before the commands of turn {turn}"
        commit = self._git("commit-tree", tree, *parents, "-m", message, env=_GIT_IDENTITY)
        ref = f"{GIT_REF_PREFIX}{turn}"
        self._git("update-ref", ref, commit)
        return ref

    def _git_restore(self, ref: str) -> None:
        with tempfile.TemporaryDirectory(prefix="reasonix-ckpt-") as tmp:
            current = self._worktree_tree(tmp)
            diff = self._git(
                "diff-tree", "-r", "-z", "--relative", "--no-renames", "--name-status",
                f"{ref}^{{tree}}", current,
            )  # fmt: skip
            fields = [f for f in diff.split("\0") if f]
            added: list[str] = []
            restore: list[str] = []
            for status, name in zip(fields[0::2], fields[1::2], strict=True):
                (added if status == "A" else restore).append(name)
            for name in added:
                target = self.workspace / name
                if target.is_symlink() or target.is_file():
                    target.unlink()
                # Folders the commands created for these files go too, if nothing else is in them.
                for folder in target.parents:
                    if folder == self.workspace or not folder.is_relative_to(self.workspace):
                        break
                    try:
                        folder.rmdir()
                    except OSError:
                        break
            if restore:
                env = {"GIT_INDEX_FILE": os.path.join(tmp, "restore-index")}
                self._git("read-tree", f"{ref}^{{tree}}", env=env)
                paths = "\0".join(restore).encode("utf-8", "surrogateescape") + b"\0"
                self._git("checkout-index", "-f", "-z", "--stdin", env=env, stdin=paths)

    # -- on-disk store -------------------------------------------------------------------------

    def _turn_file(self, turn: int) -> Path:
        assert self.store_dir is not None
        return self.store_dir / f"turn-{turn}.json"

    def _save_turn(self, turn: int) -> None:
        if self.store_dir is None:
            return
        entry = self._turns[turn]
        blobs = self.store_dir / "blobs"
        blobs.mkdir(parents=True, exist_ok=True)
        files = []
        for snap in entry.files.values():
            blob = None
            if snap.content is not None:
                blob = hashlib.sha256(snap.content).hexdigest()
                blob_path = blobs / blob
                if not blob_path.exists():
                    blob_path.write_bytes(snap.content)
            files.append(
                {
                    "path": str(snap.path),
                    "blob": blob,
                    "mode": snap.mode,
                    "created_dirs": [str(d) for d in snap.created_dirs],
                }
            )
        data = {
            "turn": turn,
            "git_ref": entry.git_ref,
            "ran_commands": entry.ran_commands,
            "files": files,
        }
        tmp = self._turn_file(turn).with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self._turn_file(turn))

    def _drop_turn(self, turn: int) -> None:
        if self.store_dir is not None:
            self._turn_file(turn).unlink(missing_ok=True)

    def _load(self) -> None:
        assert self.store_dir is not None
        if not self.store_dir.is_dir():
            return
        for item in sorted(self.store_dir.glob("turn-*.json")):
            data = json.loads(item.read_text(encoding="utf-8"))
            entry = _Turn(git_ref=data.get("git_ref"), ran_commands=bool(data.get("ran_commands")))
            for f in data.get("files", []):
                blob = f.get("blob")
                content = (self.store_dir / "blobs" / blob).read_bytes() if blob else None
                path = Path(f["path"])
                entry.files[str(path)] = FileCheckpoint(
                    path, content, f.get("mode"), tuple(Path(d) for d in f.get("created_dirs", []))
                )
            self._turns[int(data["turn"])] = entry


#: The session's checkpoint manager in the file and shell tools' context.
CHECKPOINTS_KEY = StateKey("checkpoints", CheckpointManager)
