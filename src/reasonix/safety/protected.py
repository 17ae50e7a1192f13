"""What a confined command may not change in its writable workspace: the files that make code run
later, outside the sandbox.

The workspace is writable by design, but a few files in it are read by programs that run
unconfined afterwards, without anyone reviewing them: reasonix's own configuration
(``reasonix.toml``, ``.mcp.json``, ``.reasonix/``, ``.claude/`` — in a folder the user trusts,
the next run starts the MCP servers and hooks they name, outside any sandbox) and the
repository's git machinery (``.git/config`` and ``.git/hooks``, which the user's own ``git
status`` or ``git commit`` obeys: ``core.fsmonitor``, a ``pre-commit`` hook). A command in the
sandbox could otherwise plant one of them and escape it the next time the user runs git or
reasonix.

So :func:`bind_arguments` makes those that exist read-only inside the sandbox (and binds
``.git`` onto itself so it cannot be renamed away and replaced), and :class:`CreationGuard`
removes after the call those the command created (a ``.git`` it created only when that
repository names a program or holds a hook: ``git init`` stays) and restores a symlink among
them it changed. :meth:`CreationGuard.finish` says what it undid, for the tool result.

Not covered: the same names in subfolders (a run started from a subfolder reads its own
``.mcp.json``), nested repositories a command creates below the workspace root, and every
ordinary file of the project (a ``Makefile``, a test, ``package.json``): those are the work
itself and show in ``git diff``.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reasonix.safety.git_repository import git_dir_obstacle, has_hooks

#: Our own configuration, at a workspace root.
OWN_CONFIG: tuple[str, ...] = ("reasonix.toml", ".mcp.json", ".reasonix", ".claude")
#: Inside ``.git``: what makes git run a program (the configuration, hooks, the git folders of
#: submodules and linked worktrees, and the file that points a repository at another one's
#: configuration).
GIT_MACHINERY: tuple[str, ...] = (
    "config",
    "config.worktree",
    "hooks",
    "modules",
    "worktrees",
    "commondir",
)


def protected_paths(root: Path) -> list[Path]:
    """The protected paths of one workspace root, ``.git`` itself included."""
    git = root / ".git"
    return [*(root / name for name in OWN_CONFIG), git, *(git / name for name in GIT_MACHINERY)]


def bind_arguments(roots: Sequence[Path]) -> list[str]:
    """bubblewrap options (after the roots are bound) that make the protected paths that exist
    read-only; symlinks are left to :class:`CreationGuard`, since nothing can be mounted on
    one."""
    args: list[str] = []
    for root in roots:
        git = root / ".git"
        if git.is_dir() and not git.is_symlink():
            # A mount point cannot be renamed: the .git the protections below sit in stays.
            args += ["--bind", str(git), str(git)]
        for path in protected_paths(root):
            if path == git and git.is_dir() and not git.is_symlink():
                continue
            if path.is_symlink() or not path.exists():
                continue
            if not _inside_real(path, root):
                continue
            args += ["--ro-bind", str(path), str(path)]
    return args


def _inside_real(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or real.is_relative_to(root)


@dataclass
class CreationGuard:
    """The state of the protected paths before a confined call, to undo what it created."""

    roots: tuple[Path, ...]
    absent: list[Path] = field(default_factory=list)
    links: dict[Path, str] = field(default_factory=dict)

    @classmethod
    def start(cls, roots: Sequence[Path]) -> CreationGuard:
        """Record which protected paths are absent and which are symlinks."""
        guard = cls(tuple(Path(os.path.realpath(r)) for r in roots))
        for root in guard.roots:
            for path in protected_paths(root):
                if path.is_symlink():
                    guard.links[path] = os.readlink(path)
                elif not os.path.lexists(path):
                    guard.absent.append(path)
        return guard

    def finish(self) -> list[str]:
        """Undo what the call created among the protected paths; the names of what was undone."""
        undone: list[str] = []
        kept: set[Path] = set()
        for path in self.absent:
            if not os.path.lexists(path) or path.parent.is_symlink() or path.parent in kept:
                continue
            # A repository the command made is kept unless it names a program.
            if (
                path.name == ".git"
                and not path.is_symlink()
                and path.is_dir()
                and git_dir_obstacle(path) is None
                and not has_hooks(path)
            ):
                kept.add(path)
                continue
            if path.name in ("modules", "worktrees") and not _offending(path, path.parent):
                continue
            _remove(path)
            undone.append(self._name(path))
        for path, target in self.links.items():
            if path.is_symlink() and os.readlink(path) == target:
                continue
            if os.path.lexists(path):
                _remove(path)
            os.symlink(target, path)
            undone.append(self._name(path))
        return undone

    def _name(self, path: Path) -> str:
        for root in self.roots:
            if path.is_relative_to(root):
                return str(path.relative_to(root))
        return str(path)


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
