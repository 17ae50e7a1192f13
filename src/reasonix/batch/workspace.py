"""An isolated copy of a task's repository, and the diff the task made in it.

The source is never modified: a local folder is copied whole (its uncommitted work included,
symlinks kept as links), a git URL is cloned. A local repository's history is not copied per
task: the batch makes one shallow bare clone of its ``HEAD`` (:func:`baseline_for`, shared by
every task from that repository and made while Ray starts), each task's copy is a clone of that
(one small pack copied, no hard links into anything shared) with the source's work tree copied
over it. Before the agent runs, the copy gets a baseline:
the copy's own git history when it is a repository (the diff is then relative to its ``HEAD``,
so a clean checkout gives exactly the task's change, as SWE-bench expects), or a fresh private
repository with one commit of everything for a plain folder. Our git commands run with the
allowlisted environment, hooks off, no system or global config, and never inside a repository
the task made below the copy's root (whose own configuration could name a program).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from reasonix.errors import ReasonixError
from reasonix.safety.environment import QUIET_GIT, git_environment

__all__ = ["WorkspaceError", "baseline_for", "diff", "prepare_baselines", "prepare_copy"]

#: Folders a copy leaves out: they are rebuilt by the task's own setup if it needs them.
SKIPPED = (".venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache")


class WorkspaceError(ReasonixError):
    """The task's repository could not be copied or cloned."""


#: What every git of ours runs with: no hooks, no fsmonitor, and no automatic maintenance (a
#: commit in a new copy otherwise starts a ``git maintenance run`` process of its own).
_GIT_OPTIONS = (
    *QUIET_GIT,
    "-c", "maintenance.auto=false",
    "-c", "gc.auto=0",
)  # fmt: skip


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["git", *_GIT_OPTIONS, *args]
    env = git_environment()
    env["GIT_CONFIG_GLOBAL"] = "/dev/null"
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if check and proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[-500:]}")
    return proc


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def baseline_for(repo: str, cache: Path) -> Path | None:
    """The shared shallow bare clone of the local repository ``repo`` at its current ``HEAD``
    in ``cache``, made on first use (under a lock: tasks in several processes ask at once);
    None where ``repo`` is not a repository with a commit, or the clone fails (the task then
    copies the work tree into a private repository of its own). A linked worktree or a
    submodule's checkout (its ``.git`` a file naming the git folder) is cloned as a folder is."""
    source = Path(os.path.realpath(repo))
    dot_git = source / ".git"
    if dot_git.is_symlink() or not (dot_git.is_dir() or dot_git.is_file()):
        return None
    head = _git(source, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    sha = head.stdout.strip()
    if head.returncode != 0 or not sha:
        return None
    key = hashlib.sha256(str(source).encode()).hexdigest()[:16] + "-" + sha[:16]
    target = cache / f"{key}.git"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with _locked(cache / f"{key}.lock"):
            if not (target / "HEAD").exists():
                part = cache / f"{key}.part"
                shutil.rmtree(part, ignore_errors=True)
                url = "file://" + str(source)
                _git(
                    cache, "clone", "--quiet", "--bare", "--depth", "1", "--no-tags", url, str(part)
                )
                os.replace(part, target)
    except (WorkspaceError, OSError):
        return None
    return target


def prepare_baselines(repos: Iterable[str], cache: Path) -> None:
    """Make the shared clones of the local repositories ``repos`` ahead of their tasks."""
    for repo in dict.fromkeys(repos):
        baseline_for(repo, cache)


def _work_tree(src: str) -> Callable[[str, list[str]], set[str]]:
    """The ``ignore`` of a copy: the source's own ``.git`` (a folder, or the file of a linked
    worktree that names the user's git folder: git in the copy would then write the user's
    index) and the skipped folders (a nested repository's ``.git`` is copied)."""
    root = os.path.realpath(src)
    skip = shutil.ignore_patterns(*SKIPPED)

    def ignore(folder: str, names: list[str]) -> set[str]:
        out = set(skip(folder, names))
        if os.path.realpath(folder) == root:
            out.add(".git")
        return out

    return ignore


def _from_baseline(repo: str, baseline: Path, target: Path) -> bool:
    try:
        _git(
            target.parent,
            "clone",
            "--quiet",
            "--no-checkout",
            "--no-hardlinks",
            str(baseline),
            str(target),
        )
        _git(target, "remote", "remove", "origin")
        shutil.copytree(repo, target, symlinks=True, ignore=_work_tree(repo), dirs_exist_ok=True)
        _git(target, "reset", "--quiet")  # the index at HEAD, the work tree as copied
    except (WorkspaceError, OSError, shutil.Error):
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


def prepare_copy(repo: str, is_url: bool, target: Path, baseline: Path | None = None) -> Path:
    """Make ``target`` a private copy of ``repo`` with a diff baseline; returns ``target``.
    With ``baseline`` (:func:`baseline_for`) a local repository's history is not copied."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if is_url:
        _git(target.parent, "clone", "--quiet", repo, str(target))
    elif baseline is not None and _from_baseline(repo, baseline, target):
        pass
    else:
        keep_git = (Path(repo) / ".git").is_dir() and not (Path(repo) / ".git").is_symlink()
        ignore = shutil.ignore_patterns(*SKIPPED) if keep_git else _work_tree(repo)
        try:
            shutil.copytree(repo, target, symlinks=True, ignore=ignore)
        except (OSError, shutil.Error) as exc:
            raise WorkspaceError(f"cannot copy {repo}: {exc}") from None
    if not (target / ".git").is_dir():
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
    ones), deletions, mode changes; binary files as git binary patches. Git is pointed at the
    copy's own ``.git`` folder: a task that replaced it with a file naming another repository
    (the user's) gets an error, never a write there."""
    dot_git = copy / ".git"
    if dot_git.is_symlink() or not dot_git.is_dir():
        raise WorkspaceError(f"the task replaced its copy's .git ({dot_git}): no diff was taken")
    here = ("--git-dir", str(dot_git), "--work-tree", str(copy))
    _git(copy, *here, "add", "-A", "--intent-to-add")
    # ``dirty`` keeps a repository the task made below the root as its commit line, without
    # the ``git status`` inside it that would obey its own configuration here, on the host.
    return _git(copy, *here, "diff", "--binary", "--ignore-submodules=dirty", "HEAD").stdout
