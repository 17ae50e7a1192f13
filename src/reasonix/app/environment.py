"""Facts about where the agent runs, for the tail of a session's first user turn.

The model works better knowing the OS, the shell, the folder, the git branch and what is
uncommitted, and today's date. They change over time, so they never go into the system prompt
(whose bytes must stay the same for the cache); the session façade appends them to the first
user message of each role's conversation, where they are part of history from then on.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from reasonix.safety.environment import QUIET_GIT, git_environment

__all__ = ["FACTS_HEADING", "environment_facts", "without_environment"]

#: the first line of the facts block
FACTS_HEADING = "Environment (at the start of this session):"

#: git's answer is a nicety: never let a slow or broken repository hold up the first turn
_GIT_TIMEOUT = 3.0


def environment_facts(
    workspace: Path,
    *,
    now: _dt.datetime | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """A short block of facts about ``workspace`` and this machine, for the model."""
    env = os.environ if environ is None else environ
    when = now or _dt.datetime.now().astimezone()
    shell = Path(env.get("SHELL", "") or "/bin/sh").name
    system = platform.system() or "unknown OS"
    release = platform.release()
    lines = [
        FACTS_HEADING,
        f"- OS: {system} {release}".rstrip(),
        f"- shell: {shell} (the bash tool runs commands with bash)",
        f"- folder: {workspace}",
        f"- date: {when:%Y-%m-%d %A}",
        f"- git: {_git_summary(workspace)}",
    ]
    return "\n".join(lines)


def without_environment(text: str) -> str:
    """A first user message as the user wrote it: the facts block appended to it cut off."""
    head, found, _ = text.partition(f"\n{FACTS_HEADING}")
    # The facts follow the text after a blank line, or another tail note after a newline.
    return head.removesuffix("\n") if found else text


#: Settings that keep a planted repository from running anything while the facts are read:
#: these commands run before any approval and outside the sandbox, in a folder that may not be
#: the user's (a ``core.fsmonitor`` program, hooks, submodules).
_SAFE_GIT = (
    *QUIET_GIT,
    "-c", "core.untrackedCache=false",
    "--no-optional-locks",  # status does not rewrite the index (no post-index-change hook)
)  # fmt: skip


def _git_summary(workspace: Path) -> str:
    """The branch and what is uncommitted, in two gits where the folder is a repository (its
    filter drivers, then ``status --branch``): a batch starts many sessions at once, and each
    git is a process start."""

    def git(*args: str, flags: tuple[str, ...] = ()) -> str | None:
        try:
            proc = subprocess.run(
                ["git", *_SAFE_GIT, *flags, *args],
                cwd=workspace,
                env=git_environment(),
                capture_output=True,
                text=True,
                timeout=_GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None

    # `git status` runs a filter driver's clean command on changed files (to compare their
    # content): every driver the configuration defines is switched off for this call. ``-c``
    # splits at the first "=", so a driver whose name holds one (``[filter "a=b"]``, valid in
    # an attributes line) cannot be switched off that way: then there is no status at all.
    drivers = git("config", "-z", "--get-regexp", r"^filter\.") or ""
    names = {entry.split("\n", 1)[0].rsplit(".", 1)[0] for entry in drivers.split("\0") if entry}
    if any("=" in name for name in names):
        return _branch_only(git)
    off = tuple(
        arg
        for name in sorted(names)
        for what in ("clean", "smudge", "process")
        for arg in ("-c", f"{name}.{what}=")
    )
    status = git("status", "--porcelain", "--branch", "--ignore-submodules=all", flags=off)
    if status is None or not status.startswith("## "):  # not a repository, or status failed
        return _branch_only(git)
    header, _, rest = status.partition("\n")
    branch = _branch_of(header[3:])
    entries = [line for line in rest.splitlines() if line.strip()]
    untracked = sum(1 for e in entries if e.startswith("??"))
    changed = len(entries) - untracked
    if not entries:
        return f"branch {branch}, clean"
    parts = []
    if changed:
        parts.append(f"{changed} changed")
    if untracked:
        parts.append(f"{untracked} untracked")
    shown = ", ".join(e[3:] for e in entries[:8]) + (", …" if len(entries) > 8 else "")
    return f"branch {branch}, {' and '.join(parts)} file(s): {shown}"


def _branch_only(git: Callable[..., str | None]) -> str:
    """The branch alone (no status could be read), or that this is no repository."""
    if git("rev-parse", "--is-inside-work-tree") is None:
        return "not a git repository"
    return f"branch {(git('branch', '--show-current') or '').strip() or '(detached HEAD)'}"


def _branch_of(header: str) -> str:
    """The branch named by ``status --branch``'s first line (after its ``## ``): ``main``,
    ``main...origin/main [ahead 1]``, ``No commits yet on main``, ``HEAD (no branch)``."""
    for unborn in ("No commits yet on ", "Initial commit on "):
        if header.startswith(unborn):
            return header[len(unborn) :].strip() or "(detached HEAD)"
    if header.startswith("HEAD (no branch)"):
        return "(detached HEAD)"
    # A branch name holds no "..." and no space (git refuses both in a ref name).
    return header.split("...", 1)[0].split(" ", 1)[0] or "(detached HEAD)"
