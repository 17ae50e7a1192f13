"""A user's git repository with a remote it can push to, for the floor's and the reviewer's
push tests: the remote is a bare repository ``remote.git`` inside the workspace (the sandbox has
no network, and lets a push reach it there), also named ``origin``. (No tests here.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

REMOTE = "remote.git"


def git(cwd: Path, *args: str) -> str:
    """git in ``cwd`` with a fixed identity and no system or user configuration; its output."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def remote_git(root: Path, *args: str) -> str:
    """git run on the remote (``remote.git``) of the repository in ``root``."""
    return git(root, f"--git-dir={REMOTE}", *args)


def repository_with_remote(root: Path, message: str = "the user's work") -> None:
    """In ``root``: a repository on ``main`` with one commit (``message``), pushed to its remote
    ``remote.git`` (``origin``), whose ``main`` then holds it."""
    git(root, "init", "-q", "--bare", REMOTE)
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    git(root, "remote", "add", "origin", REMOTE)
    git(root, "push", "-q", "origin", "HEAD:main")
