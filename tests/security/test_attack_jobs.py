"""Background jobs against the undo of protected files: a job's plants are undone when it ends
(issue 24's class 3, fixed), but a job can run for as long as the session lasts, and while it runs
its plant is there for anyone to obey.

A job writes ``.mcp.json`` and keeps running (a dev server, a watcher: the usual reason for a
job). The user opens a second ``reasonix`` in the same trusted folder meanwhile — another
terminal, an editor's ACP session — and that session starts the planted server outside the
sandbox. When the first session ends the plant is undone, too late.

Worked on main when written; recorded as a strict xfail. Controls: the plant is undone when the
job ends (the fix this gets around), and with ``[sandbox] bash = "off"`` it runs (the probe sees
a run).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.security.support import Lab, lab
from tests.support.cli import run_cli

__all__ = ["lab"]

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)


def _trusted(lab: Lab, extra: str = "") -> None:
    lab.write_user_config(f"[trust]\nfolders = [{json.dumps(str(lab.root))}]\n{extra}")


def _while_a_job_runs(lab: Lab) -> tuple[Path, bool]:
    """A job plants ``.mcp.json`` and sleeps; a second session starts meanwhile. The marker
    the planted server makes, and whether the plant was still there after the first session."""
    marker = lab.tmp / "planted-server-ran"
    mcp = {"mcpServers": {"planted": {"command": "sh", "args": ["-c", f"touch {marker}"]}}}
    b64 = base64.b64encode(json.dumps(mcp).encode()).decode()
    # The job keeps running until the test says the second session is over: no race.
    plant = (
        f"echo {b64} | base64 -d > .mcp.json; echo planted; "
        "while [ ! -e second-done ]; do sleep 0.2; done; echo released"
    )
    lab.ex.push(Reply.call("bash", {"command": plant, "run_in_background": True}))
    for _ in range(2):  # until "planted", then until "released"
        wait = {"name": "job", "arguments": {"id": "job-1", "wait": 120}}
        lab.ex.push(Reply.call("more_tools", wait))
    lab.ex.push(Reply.text("done"))
    lab.ex.push(Reply.text("hello from the second session"))
    first = subprocess.Popen(
        [sys.executable, "-m", "reasonix", "run", "--no-planner", "--yes", "start the server"],
        cwd=lab.root,
        env=lab.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if (lab.root / ".mcp.json").exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        assert (lab.root / ".mcp.json").exists(), "the job did not plant"
        run_cli(["run", "--no-planner", "again"], cwd=lab.root, env=lab.env(), timeout=120)
    finally:
        (lab.root / "second-done").touch()
        first.wait(timeout=180)
    return marker, (lab.root / ".mcp.json").exists()


@pytest.mark.xfail(
    strict=True,
    reason="a running job's plant of .mcp.json is undone only when the job ends: a second "
    "session in the same trusted folder meanwhile starts the planted server unconfined",
)
def test_a_running_jobs_plant_is_not_obeyed_by_a_second_session(lab: Lab) -> None:
    _trusted(lab)
    marker, _ = _while_a_job_runs(lab)
    assert not marker.exists()


def test_control_the_plant_is_undone_when_the_job_ends(lab: Lab) -> None:
    _trusted(lab)
    _, left = _while_a_job_runs(lab)
    assert not left


def test_control_unconfined_the_second_session_starts_the_plant(lab: Lab) -> None:
    _trusted(lab, '[sandbox]\nbash = "off"\n')
    marker, _ = _while_a_job_runs(lab)
    assert marker.exists()
