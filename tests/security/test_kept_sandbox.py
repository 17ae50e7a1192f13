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
    assert "bwrap" in look and "sleep 2718.5" not in look
    assert "[alias]" not in (lab.root / ".git" / "config").read_text()


def test_control_per_call_sandboxes_have_their_own_init(lab: Lab) -> None:
    plant, look, _, _ = _steps(lab, REASONIX_SANDBOX="per-call")
    assert plant.split()[0] != look.split()[0]
    assert "[alias]" not in (lab.root / ".git" / "config").read_text()


def test_control_without_the_sandbox_the_plant_is_seen(lab: Lab) -> None:
    lab.write_user_config('[sandbox]\nbash = "off"\nallow_unconfined = true\n')
    _, look, _, _ = _steps(lab)
    assert ".planted" in look
