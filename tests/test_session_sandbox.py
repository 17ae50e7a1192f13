"""The kept sandbox (:mod:`reasonix.safety.session_sandbox`) against real bubblewrap: one
sandbox serves many commands, and it is replaced whenever a fresh one would differ (a protected
file replaced on the host, a repository created by a command) or when the supervisor dies. The
controls subclass :meth:`SessionSandbox.reusable` to keep the old sandbox regardless, and show
that each probe then sees the stale sandbox."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from reasonix.config.schema import SandboxConfig
from reasonix.safety.confinement import confinement_for
from reasonix.safety.session_sandbox import SandboxUnavailable, SessionSandbox
from reasonix.tools.builtin.shell import ShellOptions, ShellTool, command_env

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None
    or confinement_for(SandboxConfig(bash="bwrap")).confiner.name != "bwrap",
    reason="bubblewrap (bwrap) cannot make a sandbox here; CI installs it",
)


class StaleSandbox(SessionSandbox):
    """The control: keeps its first sandbox whatever changed."""

    def reusable(self, args: object, fingerprint: object, now: object) -> bool:
        return True


#: Prints the command line of every process the sandbox holds.
PS = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"
#: What the supervisor's command line holds (the bootstrap it runs).
SUPERVISOR_LINE = "reasonix-supervisor"


def _sandbox(root: Path, kind: type[SessionSandbox] = SessionSandbox) -> SessionSandbox:
    confiner = confinement_for(SandboxConfig(bash="bwrap")).confiner
    assert confiner.name == "bwrap"
    return kind(confiner, root, (root,))  # type: ignore[arg-type]


async def _run(box: SessionSandbox, command: str) -> tuple[int, str]:
    read_fd, write_fd = os.pipe()
    argv = ["/bin/sh", "-c", command]
    run = await box.run(argv, command_env(ShellOptions()), write_fd, limit=60, grace=1)
    with os.fdopen(read_fd, "rb") as f:
        return run.code, f.read().decode()


def test_commands_share_one_sandbox_and_find_it_clean(tmp_path: Path) -> None:
    async def go() -> list[tuple[int, str]]:
        box = _sandbox(tmp_path)
        try:
            return [
                await _run(box, "cut -d' ' -f22 /proc/1/stat"),
                await _run(box, "setsid sleep 300 & touch ~/.gitconfig /tmp/left; echo ok"),
                await _run(box, "cut -d' ' -f22 /proc/1/stat; " + PS),
                await _run(box, "ls -A ~ /tmp"),
            ]
        finally:
            assert box.started == 1
            box.close()

    first, planted, second, listing = asyncio.run(go())
    assert planted == (0, "ok\n")
    start, processes = second[1].split("\n", 1)
    assert first[1].strip() == start  # the same sandbox's init
    assert SUPERVISOR_LINE in processes and "sleep 300" not in processes  # the sleeper is gone
    assert ".gitconfig" not in listing[1] and "left" not in listing[1]


def test_a_repository_a_command_creates_is_protected_in_the_next_command(tmp_path: Path) -> None:
    async def go(kind: type[SessionSandbox]) -> tuple[int, str]:
        root = tmp_path / kind.__name__
        root.mkdir()
        box = _sandbox(root, kind)
        try:
            code, _ = await _run(box, "git init -q .")
            assert code == 0
            return await _run(box, "echo '[core]' >> .git/config && echo written")
        finally:
            box.close()

    code, out = asyncio.run(go(SessionSandbox))
    assert code != 0 and "written" not in out
    assert "[core]\n" not in (tmp_path / "SessionSandbox" / ".git" / "config").read_text()[-8:]
    # Control: the sandbox made before the repository existed lets the command write it.
    code, out = asyncio.run(go(StaleSandbox))
    assert code == 0 and "written" in out


def test_a_protected_file_replaced_on_the_host_stays_read_only(tmp_path: Path) -> None:
    async def go(kind: type[SessionSandbox]) -> str:
        root = tmp_path / kind.__name__
        root.mkdir()
        (root / "reasonix.toml").write_text("old = 1\n")
        box = _sandbox(root, kind)
        try:
            assert (await _run(box, "cat reasonix.toml"))[1] == "old = 1\n"
            new = root / "reasonix.toml.tmp"
            new.write_text("new = 2\n")
            new.replace(root / "reasonix.toml")  # how editors and our file tools write
            await _run(box, "echo 'evil = 3' >> reasonix.toml")
            return (root / "reasonix.toml").read_text()
        finally:
            box.close()

    assert asyncio.run(go(SessionSandbox)) == "new = 2\n"
    # Control: the old sandbox's read-only mount went with the replaced file.
    assert asyncio.run(go(StaleSandbox)) == "new = 2\nevil = 3\n"


def test_the_supervisor_is_the_init_and_no_command_can_stop_or_kill_it(tmp_path: Path) -> None:
    # pid 1 gets from inside its namespace only the signals it handles: kill -STOP $PPID made a
    # call hang to its timeout while the supervisor was a process like any other.
    async def go() -> tuple[tuple[int, str], tuple[int, str], tuple[int, str], int]:
        box = _sandbox(tmp_path)
        try:
            init = await _run(box, "tr '\\0' ' ' < /proc/1/cmdline; echo; echo $PPID")
            stopped = await _run(
                box, "setsid sleep 300 & kill -STOP $PPID; kill -9 $PPID; kill -INT 1; echo went on"
            )
            after = await _run(box, PS)
            return init, stopped, after, box.started
        finally:
            box.close()

    (_, init), (code, out), (after_code, processes), started = asyncio.run(go())
    line, parent = init.rstrip("\n").rsplit("\n", 1)
    assert SUPERVISOR_LINE in line and parent == "1"
    assert code == 0 and out == "went on\n"
    assert after_code == 0 and "sleep 300" not in processes and started == 1


def _kill_supervisor(bwrap: subprocess.Popen[bytes]) -> None:
    """SIGKILL the supervisor (the outer bubblewrap's child, pid 1 inside) and wait for its
    sandbox to end."""
    children = Path(f"/proc/{bwrap.pid}/task/{bwrap.pid}/children")
    os.kill(int(children.read_text().split()[0]), signal.SIGKILL)
    bwrap.wait(timeout=30)


def test_a_supervisor_killed_from_outside_takes_its_sandbox_and_the_next_gets_a_new_one(
    tmp_path: Path,
) -> None:
    async def go() -> tuple[tuple[int, str], int]:
        box = _sandbox(tmp_path)
        try:
            await _run(box, "setsid sleep 300 &")
            kept = box._box
            assert kept is not None
            await asyncio.to_thread(_kill_supervisor, kept.proc)
            after = await _run(box, PS)
            return after, box.started
        finally:
            box.close()

    (after_code, processes), started = asyncio.run(go())
    assert after_code == 0 and SUPERVISOR_LINE in processes and "sleep 300" not in processes
    assert started == 2


def test_the_bash_tool_uses_the_kept_sandbox_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    confiner = confinement_for(SandboxConfig(bash="bwrap")).confiner

    def starts(tool: ShellTool) -> set[str]:
        async def go() -> set[str]:
            out = set()
            for _ in range(3):
                run = await tool.run_command("cut -d' ' -f22 /proc/1/stat")
                out.add(run.output.strip())
            return out

        try:
            return asyncio.run(go())
        finally:
            tool.close()

    assert len(starts(ShellTool(tmp_path, options=ShellOptions(confiner=confiner)))) == 1
    off = ShellOptions(confiner=confiner, kept_sandbox=False)
    assert len(starts(ShellTool(tmp_path, options=off))) == 3
    monkeypatch.setenv("REASONIX_SANDBOX", "per-call")
    assert len(starts(ShellTool(tmp_path, options=ShellOptions(confiner=confiner)))) == 3


def test_a_command_in_the_kept_sandbox_has_the_signal_handling_of_a_fresh_shell(
    tmp_path: Path,
) -> None:
    # The supervisor is Python, which ignores SIGPIPE and SIGXFSZ: a command it started
    # inherited that (`yes | head -1` then printed "Broken pipe"); a per-call sandbox's
    # bubblewrap starts the shell with no signal ignored. Compared with that one.
    confiner = confinement_for(SandboxConfig(bash="bwrap")).confiner
    probe = "yes | head -1; grep SigIgn /proc/self/status"

    def output(kept: bool) -> str:
        tool = ShellTool(tmp_path, options=ShellOptions(confiner=confiner, kept_sandbox=kept))
        try:
            return asyncio.run(tool.run_command(probe)).output
        finally:
            tool.close()

    fresh = output(False)
    assert fresh == "y\nSigIgn:\t0000000000000000"
    assert output(True) == fresh


@pytest.mark.parametrize("why", ["busy", "broken"])
def test_a_sandbox_that_cannot_run_the_command_still_closes_its_output(
    tmp_path: Path, why: str
) -> None:
    # The shell tool then runs the command in a sandbox of its own; its reader of the first
    # pipe waited for an end that never came (and the pipe's write end leaked) when the kept
    # sandbox was busy or broken.
    box = _sandbox(tmp_path)
    if why == "busy":
        assert box._lock.acquire(blocking=False)
    else:
        box.broken = "the supervisor did not start"
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        with pytest.raises(SandboxUnavailable):
            asyncio.run(box.run(["/bin/true"], {}, write_fd, limit=5, grace=1))
        assert os.read(read_fd, 1) == b""  # the end: nothing holds the write end open
        assert box.started == 0
    finally:
        os.close(read_fd)
        box.close()
