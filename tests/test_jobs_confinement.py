"""A background job is confined exactly like a foreground ``bash`` command, through the real
CLI: neither can read the secret next to the workspace or the home folder's key, nor write
outside the workspace. The control runs the same calls with ``[sandbox] bash = "off"`` and
proves the probes see the reads and the write succeed there."""

from __future__ import annotations

import shutil

import pytest

from reasonix.testing import Reply
from tests.security.support import SECRET_NEXT_DOOR, SSH_KEY, Lab, lab

__all__ = ["lab"]

pytestmark = pytest.mark.slow

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)

PROBE = (
    "cat ../secret.txt; cat ~/.ssh/id_rsa; "
    "python3 -c \"open('../written-by-{who}.txt', 'w').write('x')\"; echo probe-finished"
)


def run_probes(lab: Lab) -> dict[str, str]:
    """One run: the probe in front, then as a job whose whole output is read back (the job
    writes it in one piece, so one read that waits for output gets all of it)."""
    job = f'out=$({{ {PROBE.format(who="job")}; }} 2>&1); printf "%s\\n" "$out"'
    lab.ex.push(
        Reply.call("bash", {"command": PROBE.format(who="front")}),
        Reply.call("bash", {"command": job, "run_in_background": True}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 60}}),
        Reply.text("done"),
    )
    first = len(lab.ex.requests)
    proc = lab.cli("run", "--yes", "--no-planner", "--output-format", "json", "probe")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    texts = []
    for req in lab.ex.requests[first + 1 :]:
        last = req.messages[-1]
        texts.append(str(last.get("content", "")) if last.get("role") == "tool" else "")
    front, started, job = texts
    assert "Started background job job-1" in started
    assert "probe-finished" in front and "probe-finished" in job, (front, job)
    return {"front": front, "job": job}


def worked(lab: Lab, who: str, text: str) -> list[str]:
    found = []
    if SECRET_NEXT_DOOR in text:
        found.append("read ../secret.txt")
    if SSH_KEY in text:
        found.append("read ~/.ssh/id_rsa")
    if (lab.tmp / f"written-by-{who}.txt").exists():
        found.append("write outside the workspace")
    return found


@needs_bwrap
def test_a_job_can_do_nothing_a_foreground_command_cannot(lab: Lab) -> None:
    out = run_probes(lab)
    assert worked(lab, "front", out["front"]) == []
    assert worked(lab, "job", out["job"]) == []


def test_control_unconfined_the_same_probes_see_every_break(lab: Lab) -> None:
    lab.write_user_config('[sandbox]\nbash = "off"\n')
    out = run_probes(lab)
    every = ["read ../secret.txt", "read ~/.ssh/id_rsa", "write outside the workspace"]
    assert worked(lab, "front", out["front"]) == every
    assert worked(lab, "job", out["job"]) == every


FORKS = (
    "for i in $(seq 200); do /bin/sleep 31.4159 & done 2>/dev/null; "
    "jobs -r | wc -l > forks.txt; echo counted"
)


def forks_in_a_job(lab: Lab) -> int:
    lab.ex.push(
        Reply.call("bash", {"command": FORKS, "run_in_background": True}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 60}}),
        Reply.text("done"),
    )
    proc = lab.cli("run", "--yes", "--no-planner", "--output-format", "json", "fork")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Held to the bound, even the count's own pipe may fail to start: no count is none.
    counted = lab.root / "forks.txt"
    return int(counted.read_text().strip() or 0) if counted.exists() else 0


@needs_bwrap
def test_a_job_is_held_to_the_process_bound(lab: Lab) -> None:
    lab.write_user_config("[sandbox]\nmax_processes = 64\n")
    assert forks_in_a_job(lab) < 200


def test_control_unconfined_the_fork_probe_sees_every_process(lab: Lab) -> None:
    lab.write_user_config('[sandbox]\nbash = "off"\nmax_processes = 64\n')
    assert forks_in_a_job(lab) == 200
