"""Variants against the protection of what git's configuration names (issue 24's class 2, fixed
by deriving the protected list from the repository's own configuration).

1. The *user's* global configuration can name a folder of the work tree too: ``git config
   --global core.hooksPath .githooks`` is a common way to share hooks across one's
   repositories, and a relative hooks path is taken from each repository's top. Only the
   repository's own files are read, so ``.githooks/pre-commit`` is an ordinary file: a confined
   command creates it, ``write_file`` in auto-edit overwrites the user's own hook there (no
   question; the file keeps its executable bit), and the user's next ``git commit`` runs it
   outside the sandbox.
2. A hooks path that is a symlink in the work tree (``core.hooksPath = hooks``, ``hooks ->
   tools/hooks``): its target is protected, the link is not, so a confined command replaces the
   link by a folder of its own hooks.

Worked on main when written (recorded as strict xfails); fixed: the user's own git
configuration files are read for the paths they name in the work tree, and a symlink that a
setting names is protected as well as what it leads to. Controls: the same hooks run at ``git
commit`` when the user writes them (the probe sees a run); the repository's own relative
``core.hooksPath`` is protected (the fix these variants get around).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess

import pytest

from tests.security.support import Attack, Lab, lab

__all__ = ["lab"]

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)

HOOK = "#!/bin/sh\ntouch ../hook-ran\n"


def _git(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the user runs it: their HOME (and global config), no system config."""
    env = {**os.environ, "HOME": str(lab.home), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GIT_CONFIG_GLOBAL", None)
    return subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@u", *args],
        cwd=lab.root,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _repo(lab: Lab, *, global_hooks: str | None = None) -> None:
    if global_hooks is not None:
        (lab.home / ".gitconfig").write_text(f"[core]\n\thooksPath = {global_hooks}\n")
    (lab.root / "README").write_text("hello\n")
    _git(lab, "init", "-q")
    _git(lab, "add", "README")
    _git(lab, "commit", "-qm", "init")


def _commit_runs_hook(lab: Lab) -> bool:
    (lab.root / "README").write_text("changed\n")
    _git(lab, "commit", "-qam", "next")
    return (lab.tmp / "hook-ran").exists()


def _plant_by_bash(lab: Lab, folder: str, first: str = "") -> list[str]:
    b64 = base64.b64encode(HOOK.encode()).decode()
    command = (
        f"{first}mkdir -p {folder} && echo {b64} | base64 -d > {folder}/pre-commit && "
        f"chmod +x {folder}/pre-commit"
    )
    out = lab.attack([Attack("plant", "bash", {"command": command})], "--yes")
    assert out.proc.returncode == 0, out.proc.stderr
    return out.results


def _user_hook(lab: Lab, folder: str) -> None:
    """The user's own (harmless, executable) pre-commit hook in ``folder``."""
    hook = lab.root / folder / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\necho checking\n")
    hook.chmod(0o755)


def _plant_by_write_file(lab: Lab, path: str) -> list[str]:
    """Overwrite the user's hook with ``write_file`` (an existing file keeps its mode)."""
    out = lab.attack(
        [Attack("plant", "write_file", {"path": path, "content": HOOK})], "--mode", "auto-edit"
    )
    assert out.proc.returncode in (0, 3), out.proc.stderr
    return out.results


@pytest.mark.slow
def test_a_confined_command_cannot_plant_a_hook_the_global_hooks_path_runs(lab: Lab) -> None:
    _repo(lab, global_hooks=".githooks")
    results = _plant_by_bash(lab, ".githooks")
    assert not _commit_runs_hook(lab), results


@pytest.mark.slow
def test_write_file_asks_before_a_hook_the_global_hooks_path_runs(lab: Lab) -> None:
    _repo(lab, global_hooks=".githooks")
    _user_hook(lab, ".githooks")
    results = _plant_by_write_file(lab, ".githooks/pre-commit")
    assert not _commit_runs_hook(lab), results


def test_control_a_hook_in_the_global_hooks_path_runs_at_commit(lab: Lab) -> None:
    _repo(lab, global_hooks=".githooks")
    hook = lab.root / ".githooks" / "pre-commit"
    hook.parent.mkdir()
    hook.write_text(HOOK)
    hook.chmod(0o755)
    assert _commit_runs_hook(lab)


@pytest.mark.slow
def test_control_the_repositorys_own_relative_hooks_path_is_protected(lab: Lab) -> None:
    _repo(lab)
    _git(lab, "config", "core.hooksPath", ".githooks")
    _user_hook(lab, ".githooks")
    results = _plant_by_write_file(lab, ".githooks/pre-commit")
    assert "needs approval" in results[0], results
    results = _plant_by_bash(lab, ".githooks")
    assert not _commit_runs_hook(lab), results


@pytest.mark.slow
def test_a_confined_command_cannot_replace_a_hooks_path_symlink(lab: Lab) -> None:
    _repo(lab)
    (lab.root / "tools" / "hooks").mkdir(parents=True)
    (lab.root / "hooks").symlink_to("tools/hooks")
    _git(lab, "config", "core.hooksPath", "hooks")
    results = _plant_by_bash(lab, "hooks", first="rm hooks && ")
    assert not _commit_runs_hook(lab), results


def test_control_a_hook_in_the_symlinked_hooks_path_runs(lab: Lab) -> None:
    _repo(lab)
    (lab.root / "tools" / "hooks").mkdir(parents=True)
    (lab.root / "hooks").symlink_to("tools/hooks")
    _git(lab, "config", "core.hooksPath", "hooks")
    hook = lab.root / "tools" / "hooks" / "pre-commit"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    assert _commit_runs_hook(lab)
