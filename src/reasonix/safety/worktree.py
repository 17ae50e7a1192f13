"""Isolated copies of the workspace for writer subagents, their diffs, and applying them.

A writer child (``task`` with ``read_only: false``) edits a private copy of the workspace, never
the workspace itself. :func:`make_worktree` records the workspace as it is now (tracked and
untracked files, the user's uncommitted changes included; what its ``.gitignore`` files ignore
and the folders of :data:`~reasonix.safety.checkpoints.DEFAULT_EXCLUDE` are left out) in a
private git object store under our data folder, and checks that tree out into a folder next to
it. Nothing is written to the user's repository, and the workspace need not be a repository.

When the child is done, :meth:`Worktree.diff` records the copy the same way and compares the
two trees; :meth:`Worktree.apply` applies that patch to the workspace (refusing, with git's
reason, when the workspace changed under it since), so the parent decides what lands.

Git runs as the checkpoint code runs it: an allowlisted environment, no system or global
configuration, hooks and fsmonitor off, every content-transforming attribute unset, so a hook or
``core.fsmonitor`` planted in the repository never runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from reasonix.safety.checkpoints import _GIT_FLAGS, _IDENTITY, DEFAULT_EXCLUDE

#: The checkpoint store's attribute line less ``-diff``: the parent reads this diff as text
#: (binary files still come out as git's binary patches).
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"

__all__ = ["Worktree", "WorktreeError", "make_worktree"]


class WorktreeError(RuntimeError):
    """A git step of a writer child's copy failed (the message says which and why)."""


@dataclass(frozen=True)
class WorktreeDiff:
    """What a child changed: ``patch`` (git's binary-safe unified diff), ``stat`` (one line per
    file), the number of files and their paths (relative to the workspace)."""

    patch: str
    stat: str
    files: int
    names: tuple[str, ...] = ()


class Worktree:
    """A private copy of ``workspace`` at ``path``, with its own object store at ``store``."""

    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace = workspace
        self.home = home
        self.path = home / "tree"
        self.store = home / "git"
        self.base = ""
        self.applied = False

    def _env(self, work_tree: Path, index: str) -> dict[str, str]:
        from reasonix.safety.environment import git_environment

        env = git_environment()
        env.setdefault("PATH", os.defpath)
        env.update(_IDENTITY)
        env.update(
            {
                "GIT_DIR": str(self.store),
                "GIT_WORK_TREE": str(work_tree),
                "GIT_INDEX_FILE": str(self.home / index),
                "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_ATTR_NOSYSTEM": "1",
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home),
            }
        )
        return env

    def _git(
        self,
        work_tree: Path,
        index: str,
        *args: str,
        stdin: bytes | None = None,
        bare: bool = False,
    ) -> str:
        env = self._env(work_tree, index)
        if bare:  # git init of the store itself
            del env["GIT_DIR"], env["GIT_WORK_TREE"]
        try:
            proc = subprocess.run(
                ["git", *_GIT_FLAGS, *args],
                cwd=work_tree,
                env=env,
                input=stdin,
                capture_output=True,
                timeout=300,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise WorktreeError(f"git {args[0]} could not run: {exc}") from None
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise WorktreeError(f"git {args[0]} failed: {err}")
        return proc.stdout.decode("utf-8", "surrogateescape")

    def _record(self, work_tree: Path, index: str) -> str:
        """The tree of ``work_tree`` as it is now (git's ignore rules and our exclusions)."""
        self._git(work_tree, index, "add", "-A", "--", ".")
        return self._git(work_tree, index, "write-tree").strip()

    def create(self) -> None:
        for folder in (self.home.parent, self.home):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
        template = self.home / "template"
        template.mkdir(mode=0o700, exist_ok=True)
        init = ("init", "-q", "--bare", f"--template={template}", str(self.store))
        self._git(self.workspace, "base-index", *init, bare=True)
        shutil.rmtree(template, ignore_errors=True)
        info = self.store / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
        (info / "exclude").write_text("\n".join(DEFAULT_EXCLUDE) + "\n", encoding="utf-8")
        self.base = self._record(self.workspace, "base-index")
        self.path.mkdir(mode=0o700)
        self._git(self.path, "index", "read-tree", self.base)
        self._git(self.path, "index", "checkout-index", "-a", "-f")

    def diff(self) -> WorktreeDiff:
        """What the child changed in its copy, against the workspace as it was copied. A
        rename is a delete and an add (``--no-renames``): the patch, the stat and the names
        all show the path it left (the parent asks about a protected one)."""
        new = self._record(self.path, "index")
        trees = ("--no-textconv", "--no-renames", self.base, new)
        patch = self._git(self.path, "index", "diff", "--binary", "--no-ext-diff", *trees)
        stat = self._git(self.path, "index", "diff", "--stat=100", *trees)
        names = self._git(self.path, "index", "diff", "--name-only", "-z", *trees)
        listed = tuple(n for n in names.split("\0") if n)
        return WorktreeDiff(patch, stat.rstrip(), len(listed), listed)

    def apply(self, patch: str) -> None:
        """Apply ``patch`` to the workspace's files. Raises WorktreeError (nothing changed)
        when it does not apply cleanly, e.g. the workspace changed those lines since."""
        if not patch.strip():
            raise WorktreeError("the subagent changed nothing")
        self._git(self.workspace, "apply-index", "apply", "--check", "-", stdin=patch.encode())
        self._git(self.workspace, "apply-index", "apply", "-", stdin=patch.encode())
        self.applied = True

    def remove(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


def make_worktree(workspace: Path, root: Path, name: str) -> Worktree:
    """A private copy of ``workspace`` under ``root/name`` (see the module docstring). Raises
    WorktreeError when git is missing or fails."""
    tree = Worktree(workspace, root / name)
    if tree.home.exists():
        shutil.rmtree(tree.home, ignore_errors=True)
    try:
        tree.create()
    except BaseException:
        tree.remove()
        raise
    return tree
