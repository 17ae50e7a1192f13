"""An isolated copy of a task's repository, and the diff the task made in it.

The source is never modified: a local folder is copied whole (its uncommitted work included,
symlinks kept as links), a git URL is cloned. Before the agent runs, the copy gets a baseline:
the copy's own git history when it is a repository (the diff is then relative to its ``HEAD``,
so a clean checkout gives exactly the task's change, as SWE-bench expects), or a fresh private
repository with one commit of everything for a plain folder. Our git commands run with the
allowlisted environment, hooks off, no system or global config, and never inside a repository
the task made below the copy's root (whose own configuration could name a program).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from reasonix.errors import ReasonixError
from reasonix.safety.environment import git_environment

__all__ = ["WorkspaceError", "diff", "prepare_copy"]

#: Folders a copy leaves out: they are rebuilt by the task's own setup if it needs them.
SKIPPED = (".venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache")


class WorkspaceError(ReasonixError):
    """The task's repository could not be copied or cloned."""


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args]
    env = git_environment()
    env["GIT_CONFIG_GLOBAL"] = "/dev/null"
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if check and proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[-500:]}")
    return proc


def prepare_copy(repo: str, is_url: bool, target: Path) -> Path:
    """Make ``target`` a private copy of ``repo`` with a diff baseline; returns ``target``."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if is_url:
        _git(target.parent, "clone", "--quiet", repo, str(target))
    else:
        try:
            shutil.copytree(repo, target, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED))
        except (OSError, shutil.Error) as exc:
            raise WorkspaceError(f"cannot copy {repo}: {exc}") from None
    if not (target / ".git").exists():
        _git(target, "init", "--quiet")
        _git(target, "add", "-A")
        _git(
            target,
            "-c",
            "user.name=reasonix batch",
            "-c",
            "user.email=batch@reasonix.invalid",
            "commit",
            "--quiet",
            "--allow-empty",
            "-m",
            "baseline before the task",
        )
    return target


def diff(copy: Path) -> str:
    """Everything that differs from the copy's ``HEAD``: edits, new files (also untracked
    ones), deletions, mode changes; binary files as git binary patches."""
    _git(copy, "add", "-A", "--intent-to-add")
    # ``dirty`` keeps a repository the task made below the root as its commit line, without
    # the ``git status`` inside it that would obey its own configuration here, on the host.
    return _git(copy, "diff", "--binary", "--ignore-submodules=dirty", "HEAD").stdout
