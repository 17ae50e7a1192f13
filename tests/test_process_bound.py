"""The kernel's bound on a confined command's processes (a pids cgroup), tried with a real fork
loop: the bound the sandbox relies on for an agent running as root."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Forks twenty sleeping children, stops at the first refused fork, prints how many started and
# kills them (the cgroup's close kills them too).
FORKS = """
import os, signal, time
kids = []
for _ in range(20):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print(len(kids), flush=True)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
"""

pytestmark = pytest.mark.slow


def test_pids_cgroup_refuses_the_fork_past_its_bound() -> None:
    """The kernel bound, which a fast fork loop cannot outrun as it can a watchdog (and which
    holds for root, whom RLIMIT_NPROC does not bound)."""
    from reasonix.safety.confinement import PidsCgroup

    group = PidsCgroup.create(8)
    if group is None:
        pytest.skip("this machine does not let the agent create a pids cgroup")
    try:
        out = subprocess.run(
            group.wrap([sys.executable, "-c", FORKS]), capture_output=True, text=True, timeout=60
        )
        started = int(out.stdout.strip())
        assert started < 8, out.stderr
        assert group.hit_bound()
    finally:
        group.close()
    assert not group.path.exists()
    # the control: without the cgroup the same loop starts all twenty
    free = subprocess.run([sys.executable, "-c", FORKS], capture_output=True, text=True, timeout=60)
    assert free.stdout.strip() == "20", free.stderr
