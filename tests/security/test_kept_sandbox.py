"""One sandbox for a run's bash steps, through the real CLI: the steps share the sandbox (the
same PID namespace init), yet each step finds it as a fresh one would be: no process a previous
step left behind (a ``setsid`` daemon included), no file it planted in the sandbox's home or
``/tmp``, and a repository a previous step created is as read-only as in a new sandbox.
Controls: with ``REASONIX_SANDBOX=per-call`` each step has its own init (the probe tells the
two apart); with ``[sandbox] bash = "off"`` the plant in the home folder is seen by the next
step (the probe sees a break)."""

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

PS = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"
INIT = "cut -d' ' -f22 /proc/1/stat"


#: What the plant step runs (a script: the permission check asks before a command line that
#: visibly writes outside the workspace).
PLANT = """setsid sleep 2718.5 &
echo x > ~/.planted
echo y > /tmp/planted
"""


def _steps(lab: Lab, *flags: str, **env: str) -> list[str]:
    (lab.root / "plant.sh").write_text(PLANT)
    outcome = lab.attack(
        [
            Attack(
                "plant",
                "bash",
                {"command": f"{INIT}; sh plant.sh"},
            ),
            Attack("look", "bash", {"command": f"{INIT}; ls -A ~ /tmp; {PS}"}),
            Attack("init", "bash", {"command": "git init -q . && echo inited"}),
            Attack("write", "bash", {"command": "echo '[alias]' >> .git/config"}),
        ],
        "--mode",
        "yolo",
        *flags,
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    return outcome.results


def test_steps_share_one_sandbox_that_each_finds_clean(lab: Lab) -> None:
    plant, look, init, _ = _steps(lab)
    assert "inited" in init
    assert plant.split()[0] == look.split()[0]  # one init: one sandbox for both steps
    assert ".planted" not in look and "planted" not in look
    assert "reasonix-supervisor" in look and "sleep 2718.5" not in look  # the init: ours
    assert "[alias]" not in (lab.root / ".git" / "config").read_text()


def test_control_per_call_sandboxes_have_their_own_init(lab: Lab) -> None:
    plant, look, _, _ = _steps(lab, REASONIX_SANDBOX="per-call")
    assert plant.split()[0] != look.split()[0]
    assert "[alias]" not in (lab.root / ".git" / "config").read_text()


def test_control_without_the_sandbox_the_plant_is_seen(lab: Lab) -> None:
    lab.write_user_config('[sandbox]\nbash = "off"\nallow_unconfined = true\n')
    _, look, _, _ = _steps(lab)
    assert ".planted" in look


def _job_between_steps(lab: Lab, **env: str) -> list[str]:
    outcome = lab.attack(
        [
            Attack("front", "bash", {"command": f"{INIT}; echo before"}),
            Attack("job", "bash", {"command": "echo hi > out.txt", "run_in_background": True}),
            Attack("wait", "more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 10}}),
            Attack("look", "bash", {"command": f"{INIT}; cat out.txt"}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    return outcome.results


@pytest.mark.parametrize("mode", ["kept", "per-call"])
def test_a_background_jobs_write_lands_beside_the_kept_sandbox(lab: Lab, mode: str) -> None:
    """A job runs in a sandbox of its own while the kept one lives: what it writes to the
    workspace lands, and the next front step (in the kept sandbox, or a fresh one) reads it."""
    front, job, wait, look = _job_between_steps(
        lab, **({"REASONIX_SANDBOX": "per-call"} if mode == "per-call" else {})
    )
    assert "Started background job job-1" in job, job
    assert "[job-1: exited" in wait and "exit code 0" in wait, wait
    assert (lab.root / "out.txt").read_text() == "hi\n"
    assert look.splitlines()[1:] == ["hi"], look
    same_init = front.split()[0] == look.split()[0]
    assert same_init == (mode == "kept"), (front, look)  # the mode is the one asked for
