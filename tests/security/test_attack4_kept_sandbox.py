"""attacker4: the kept sandbox (safety/session_sandbox.py) through the real CLI: one command
plants, the next must find the sandbox as a fresh one would be.

B6 (fixed): the supervisor's reset compared what was there at start by mode, size, mtime and
inode (and a link's target), not by extended attributes of ``/tmp`` and the home folder (tmpfs
keeps ``user.*`` attributes and POSIX ACLs, e.g. a default ACL that sets the mode of every file
the next command creates there); now they are part of an entry's state, and a change discards
the sandbox. Control: ``REASONIX_SANDBOX=per-call`` gives every
command a fresh ``/tmp`` and home, and the same look finds nothing; the plant step reports it
worked.

B22 (fixed: the supervisor compares its limits after each command, and a change discards the
sandbox): the command's parent in a kept sandbox is the supervisor, a process of the same user, so
``prlimit --pid $PPID`` lowers its limits (a 100-byte file size here), and every later command
the supervisor starts inherits them. Control: per call, the next command has its own limits.
"""

from __future__ import annotations

import shutil

import pytest

from tests.security.support import Attack, Lab, lab

__all__ = ["lab"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
    ),
]

PLANT = """import os
for where in ("/tmp", os.path.expanduser("~")):
    os.setxattr(where, "user.plant", b"EVIL-XATTR")
print("planted-xattr")
"""
LOOK = """import os
for where in ("/tmp", os.path.expanduser("~")):
    try:
        print(where, os.getxattr(where, "user.plant"))
    except OSError as exc:
        print(where, "none", exc.errno)
"""


def _two_steps(lab: Lab, **env: str) -> tuple[str, str]:
    (lab.root / "plant.py").write_text(PLANT)
    (lab.root / "look.py").write_text(LOOK)
    outcome = lab.attack(
        [
            Attack("plant", "bash", {"command": "python3 plant.py"}),
            Attack("look", "bash", {"command": "python3 look.py"}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    plant, look = outcome.results
    assert "planted-xattr" in plant, plant
    return plant, look


def test_break_an_attribute_on_tmp_reaches_the_next_command(lab: Lab) -> None:
    _, look = _two_steps(lab)
    assert "EVIL-XATTR" not in look, look


def test_control_per_call_the_attribute_is_gone(lab: Lab) -> None:
    _, look = _two_steps(lab, REASONIX_SANDBOX="per-call")
    assert "EVIL-XATTR" not in look and "none" in look, look


# -- B22: a command lowers the supervisor's own limits, and every later command inherits them -----

#: The command's parent in a kept sandbox is the supervisor (same user): prlimit reaches it.
LOWER = "prlimit --pid $PPID --fsize=100:100 && echo lowered-limit"
WRITE = "head -c 5000 /dev/zero > big.bin; echo size=$(wc -c < big.bin)"


def _limit_steps(lab: Lab, **env: str) -> tuple[str, str]:
    outcome = lab.attack(
        [
            Attack("lower", "bash", {"command": LOWER}),
            Attack("write", "bash", {"command": WRITE}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    lower, write = outcome.results
    assert "lowered-limit" in lower, lower
    return lower, write


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is missing")
def test_break_a_lowered_limit_reaches_the_next_command(lab: Lab) -> None:
    _, write = _limit_steps(lab)
    assert "size=5000" in write, f"the next command's file was cut: {write}"


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is missing")
def test_control_per_call_the_next_command_has_its_limits(lab: Lab) -> None:
    _, write = _limit_steps(lab, REASONIX_SANDBOX="per-call")
    assert "size=5000" in write, write


# -- B22's note: a command stops the supervisor (kill -STOP $PPID) -------------------------------

#: The supervisor is the command's parent in a kept sandbox; a short timeout bounds a hang.
STOP = {"command": "kill -STOP $PPID; echo sent-stop", "timeout": 20}


def _stop_steps(lab: Lab, **env: str) -> tuple[str, str]:
    outcome = lab.attack(
        [Attack("stop", "bash", STOP), Attack("next", "bash", {"command": "echo next-runs"})],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    stop, following = outcome.results
    return stop, following


def test_a_command_cannot_stop_the_supervisor_and_the_next_command_runs(lab: Lab) -> None:
    """Fixed (lead, attacker5 B1's fix): the supervisor is the sandbox's init, and the kernel
    gives pid 1 only the signals it handles, so ``kill -STOP $PPID`` changes nothing: the call
    ends at once (no wait for its timeout) and the next command runs in the same sandbox."""
    stop, following = _stop_steps(lab)
    assert "sent-stop" in stop and "timed out" not in stop, stop
    assert "next-runs" in following, following


def test_control_per_call_the_stop_reaches_no_supervisor(lab: Lab) -> None:
    stop, following = _stop_steps(lab, REASONIX_SANDBOX="per-call")
    assert "sent-stop" in stop and "supervisor" not in stop, stop
    assert "next-runs" in following, following
