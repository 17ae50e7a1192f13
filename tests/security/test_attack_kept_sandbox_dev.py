"""Attacks on the kept sandbox (safety/session_sandbox.py) through the real CLI: one step plants
something in the sandbox, the next step must find the sandbox as a fresh one would be.

Holds: bubblewrap's ``/dev`` is a writable tmpfs; a step that replaces ``/dev/fd`` with a folder
of its own files (which the next step's process substitution, ``<(...)``, would read through
``/dev/fd/63`` and run) leaves a sandbox the supervisor reports changed, and the next step gets a
fresh one. A POSIX message queue (``mq_open``), which outlives its command in the IPC namespace,
is seen in the sandbox's own ``/dev/mqueue`` and the sandbox is replaced the same way. Holds
too: ``/tmp`` and the home folder are emptied; a ``setsid`` daemon of
the first step is gone. Control: with ``REASONIX_SANDBOX=per-call`` every step has a fresh
``/dev`` and the probe sees the honest output; the plant step itself reports that it worked.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from tests.security.support import (
    Attack,
    Lab,
    kill_all,
    lab,
    processes_with_arg,
    record,
    still_running,
)

__all__ = ["lab"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
    ),
]

KIND = "kept sandbox: state left for the next command"

PLANT_DEV_FD = """rm -f /dev/fd && mkdir /dev/fd && printf 'echo EVIL-PLANT\\n' > /dev/fd/63
ls /dev/fd/63 && echo planted-fd
"""
LOOK_DEV_FD = "cat <(echo honest-hello); source <(echo echo honest-safe)"

PLANT_FILES = """setsid sleep 3141.5 &
echo x > ~/.planted-home
echo y > /tmp/planted-tmp
mkfifo /tmp/planted-fifo
echo planted-files
"""
#: a POSIX message queue lives in the IPC namespace without any process holding it
MQ = """import ctypes, os, sys
rt = ctypes.CDLL("librt.so.1", use_errno=True)
flags = os.O_RDWR | (os.O_CREAT if sys.argv[1] == "plant" else 0)
fd = rt.mq_open(b"/reasonix-attack-q", flags, 0o600, None)
if sys.argv[1] == "plant":
    print("planted-mq", fd >= 0 and rt.mq_send(fd, b"EVIL-MQ", 7, 0) == 0)
else:
    buf = ctypes.create_string_buffer(9000)
    n = rt.mq_receive(fd, buf, 9000, None) if fd >= 0 else -1
    print("received", n > 0 and buf.raw[:n])
"""
LOOK_FILES = "ls -A ~ /tmp; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"


def _two_steps(lab: Lab, plant: str, look: str, **env: str) -> list[str]:
    (lab.root / "plant.sh").write_text(plant)
    (lab.root / "look.sh").write_text(look)
    outcome = lab.attack(
        [
            Attack("plant", "bash", {"command": "sh plant.sh"}),
            Attack("look", "bash", {"command": "bash look.sh"}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    return outcome.results


def test_break_replaced_dev_fd_reaches_the_next_command(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    plant, look = _two_steps(lab, PLANT_DEV_FD, LOOK_DEV_FD)
    assert "planted-fd" in plant, plant  # the plant itself worked
    worked = "EVIL-PLANT" in look
    record(request, KIND, 1, int(worked))
    assert not worked, look
    assert "honest-hello" in look and "honest-safe" in look, look


def _mq_steps(lab: Lab, **env: str) -> list[str]:
    (lab.root / "mq.py").write_text(MQ)
    return _two_steps(lab, "python3 mq.py plant\n", "python3 mq.py look", **env)


def test_break_message_queue_reaches_the_next_command(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    plant, look = _mq_steps(lab)
    assert "planted-mq True" in plant, plant
    worked = "EVIL-MQ" in look
    record(request, KIND, 1, int(worked))
    assert not worked, look


def test_control_per_call_message_queue_is_gone(lab: Lab) -> None:
    plant, look = _mq_steps(lab, REASONIX_SANDBOX="per-call")
    assert "planted-mq True" in plant, plant
    assert "received False" in look, look


def test_holds_home_tmp_and_daemons_are_gone(lab: Lab, request: pytest.FixtureRequest) -> None:
    plant, look = _two_steps(lab, PLANT_FILES, LOOK_FILES)
    assert "planted-files" in plant, plant
    worked = any(m in look for m in ("planted-home", "planted-tmp", "planted-fifo", "3141.5"))
    record(request, KIND, 1, int(worked))
    assert not worked, look


#: kill the supervisor itself (the command's parent in the sandbox) after starting a daemon
KILL_SUPERVISOR = """setsid sleep 2718.7 >/dev/null 2>&1 </dev/null &
for p in /proc/[0-9]*; do
  case "$(tr '\\0' ' ' < $p/cmdline)" in *python*-c*) kill -9 "${p#/proc/}";; esac
done
"""


def test_holds_a_killed_supervisor_leaves_no_daemon_behind(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    try:
        _, look = _two_steps(lab, KILL_SUPERVISOR, "echo second-step-ran")
        left = still_running("2718.7")
        record(request, KIND, 1, int(bool(left)))
        assert not left, f"a daemon outlived its sandbox: {left}"
        assert "second-step-ran" in look, look
    finally:
        kill_all(still_running("2718.7"))


def test_control_the_probe_sees_a_daemon_left_running() -> None:
    """Every run kills its commands' daemons, even unconfined, so the control starts the same
    daemon outside reasonix: the probe finds a survivor when there is one."""
    daemon = subprocess.Popen(["sleep", "2718.7"], start_new_session=True)
    try:
        for _ in range(400):  # until the child has exec'd (a bound on a hang, not a timing)
            if processes_with_arg("2718.7"):
                break
            time.sleep(0.05)
        assert processes_with_arg("2718.7"), "the probe cannot see a surviving daemon"
    finally:
        daemon.kill()
        daemon.wait()


def test_control_per_call_dev_fd_is_fresh(lab: Lab) -> None:
    plant, look = _two_steps(lab, PLANT_DEV_FD, LOOK_DEV_FD, REASONIX_SANDBOX="per-call")
    assert "planted-fd" in plant, plant
    assert "EVIL-PLANT" not in look and "honest-hello" in look, look


def test_control_without_the_sandbox_the_probe_sees_a_plant(lab: Lab) -> None:
    """Unconfined, the home folder is the real one: the plant is seen (the probe works)."""
    lab.write_user_config('[sandbox]\nbash = "off"\nallow_unconfined = true\n')
    _, look = _two_steps(lab, PLANT_FILES.replace("setsid sleep 3141.5 &\n", ""), LOOK_FILES)
    assert "planted-home" in look, look
