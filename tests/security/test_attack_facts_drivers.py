"""The environment facts (git branch and status, read before any approval and outside the
sandbox, in a folder nobody trusted) switch off every filter driver the repository defines by
passing ``-c filter.<name>.clean=`` for each. A driver whose name holds ``=`` cannot be named that
way: git splits ``-c`` at the first ``=``, so ``-c filter.a=b.clean=`` sets ``filter.a`` and the
driver ``a=b`` stays on. A ``.gitattributes`` (or ``info/attributes``) line ``* filter=a=b`` is
valid, so a planted repository whose changed file goes through that driver ran its clean command
at the first ``reasonix run``, before the model said a word.

Worked before the fix in this module's commit (the facts pass such drivers through git's
environment, ``GIT_CONFIG_COUNT``, which takes the key whole). Control: the same repository's
``git status`` with the flags the facts used before runs the driver, so the probe sees a run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.security.support import Lab, lab, record

__all__ = ["lab"]

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
#: Names a driver may have in a config file and an attributes line alike.
DRIVER_NAMES = ("a=b", "x=y=z")


def _planted(root: Path, marker: Path, driver: str) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
            cwd=root,
            check=True,
            capture_output=True,
            env={**os.environ, **GIT_ENV},
        )

    git("init", "-q", "-b", "main")
    (root / "notes.txt").write_text("one two\n")
    git("add", ".")
    git("commit", "-qm", "seed")
    probe = root.parent / "probe.sh"
    probe.write_text(f'#!/bin/sh\necho "ran $*" >> {marker}\ncat\n')
    probe.chmod(0o755)
    with (root / ".git" / "config").open("a") as f:
        f.write(f'[filter "{driver}"]\n\tclean = {probe} clean\n')
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text(f"*.txt filter={driver}\n")
    # Same size, new content, an old time: status must read the file through the filter.
    (root / "notes.txt").write_text("one six\n")
    os.utime(root / "notes.txt", (1, 1))


@pytest.mark.slow
@pytest.mark.parametrize("driver", DRIVER_NAMES)
def test_a_driver_named_with_equals_does_not_run_while_the_facts_are_read(
    lab: Lab, driver: str, request: pytest.FixtureRequest
) -> None:
    marker = lab.tmp / "ran.txt"
    _planted(lab.root, marker, driver)
    lab.ex.push(Reply.text("Hello."))
    proc = lab.cli("run", "--no-planner", "hi")
    assert proc.returncode == 0, proc.stderr
    ran = marker.exists()
    record(request, "environment facts in a planted repository", 1, int(ran))
    assert not ran, marker.read_text()
    first = str(lab.ex.requests[0].messages[-1]["content"])
    assert "- git: branch main" in first, first


@pytest.mark.parametrize("driver", DRIVER_NAMES)
def test_control_the_old_flags_leave_the_driver_on(lab: Lab, driver: str) -> None:
    marker = lab.tmp / "ran.txt"
    _planted(lab.root, marker, driver)
    off = [a for what in ("clean", "smudge", "process") for a in ("-c", f"filter.{driver}.{what}=")]
    subprocess.run(
        ["git", "-c", "core.fsmonitor=false", *off, "status", "--porcelain"],
        cwd=lab.root,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        check=False,
    )
    assert "ran clean" in marker.read_text()
