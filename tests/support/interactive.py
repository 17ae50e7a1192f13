"""The interactive app in a pseudo-terminal (pexpect) for end-to-end tests."""

from __future__ import annotations

import sys
import time

import pexpect

from tests.support.project import Project


def spawn(project: Project, *args: str, **env_extra: str) -> pexpect.spawn:
    """``reasonix *args`` in a 40x120 pseudo-terminal; ``env_extra`` joins its environment."""
    env = project.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="120", **env_extra)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", *args],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=60,  # each expect's bound: generous, for a loaded machine
        dimensions=(40, 120),
    )
    return child


def quit_app(child: pexpect.spawn) -> None:
    """``/exit`` and wait for the app to end."""
    child.sendline("/exit")
    child.expect(pexpect.EOF, timeout=30)


def wait_for(predicate: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")
