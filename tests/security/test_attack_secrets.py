"""Attack on the agent's own key through the real CLI: an unconfined bash command reading its
parent's memory.

The key leaves the agent's environment at start-up, but the process still holds it in memory
for the HTTP client. A command run by the ``bash`` tool is the agent's child, of the same user,
so it could open ``/proc/$PPID/mem`` and search it for ``Bearer sk-``: the key went into the
tool result and on to the provider. The agent now marks itself non-dumpable once it holds the
keys, which closes ``/proc/<pid>/mem``, ``ptrace`` and core dumps to other processes of the user.

A process with ``CAP_SYS_PTRACE`` can still read it (a root shell, usually), so when the tests run
as root the CLI runs with that capability dropped from its bounding set, as an ordinary user's
would be. The control runs the same probe under a parent that holds a key and does not protect
itself: the probe finds it there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.slow,
]

KEY_ENV = "REASONIX_FAKE_KEY"
KEY = "sk-agent-memory-5e1f0c9a7b"
FLAGS = ("--trust", "--yes", "--no-planner", "--output-format", "json")

# Searches every readable mapping of its parent for "Bearer sk-" (built at run time, so the
# command line itself holds no copy) and prints what follows.
PROBE = """\
import os, sys
needle = (sys.argv[1] + " sk-").encode()
ppid = os.getppid()
try:
    maps = open(f"/proc/{ppid}/maps").read().splitlines()
    with open(f"/proc/{ppid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if "r" not in perms or end - start > 1 << 28:
                continue
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except OSError:
                continue
            at = chunk.find(needle)
            if at >= 0:
                print("FOUND", chunk[at : at + 48].decode("latin-1"))
                break
except OSError as exc:
    print("cannot read the parent:", exc.strerror)
"""


def _without_ptrace() -> list[str]:
    """A prefix that runs a program without ``CAP_SYS_PTRACE`` when we are root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop CAP_SYS_PTRACE")
    return [setpriv, "--bounding-set", "-sys_ptrace", "--"]


def _env(tmp: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "LANG": "C.UTF-8",
        "REASONIX_CONFIG_DIR": str(tmp / "cfg"),
        "REASONIX_DATA_DIR": str(tmp / "data"),
        "NO_COLOR": "1",
        "PYTHONUNBUFFERED": "1",
        KEY_ENV: KEY,
    }


def test_bash_cannot_read_the_key_from_the_agents_memory(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "home").mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        (root / "reasonix.toml").write_text(
            fake_project_toml(ex.base_url, pl.base_url, key_env=KEY_ENV, max_steps=5)
        )
        command = f"{sys.executable} {probe} Bearer"
        ex.push(Reply.call("bash", {"command": command}), Reply.text("done"))
        proc = subprocess.run(
            [*_without_ptrace(), sys.executable, "-m", "reasonix", "run", *FLAGS, "look around"],
            cwd=root,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert len(ex.requests) == 2, "the bash call did not run"
        results = [m["content"] for m in ex.requests[1].messages if m["role"] == "tool"]
        assert results and "FOUND" not in results[0], results
        for request in ex.requests:
            assert KEY not in request.raw_body.decode("utf-8", "replace")


def test_control_the_probe_finds_a_key_in_an_unprotected_parent(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    parent = (
        "import subprocess, sys\n"
        f"held = 'Bearer' + ' ' + {KEY!r}\n"
        f"subprocess.run([sys.executable, {str(probe)!r}, 'Bearer'])\n"
    )
    proc = subprocess.run(
        [*_without_ptrace(), sys.executable, "-c", parent],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert f"FOUND Bearer {KEY}" in proc.stdout, proc.stdout + proc.stderr
