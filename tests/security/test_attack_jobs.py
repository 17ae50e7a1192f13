"""Background jobs against the undo of protected files: a job's plants are undone when it ends
(issue 24's class 3, fixed), but a job can run for as long as the session lasts, and while it runs
its plant is there for anyone to obey.

A job writes ``.mcp.json`` and keeps running (a dev server, a watcher: the usual reason for a
job). The user opens a second ``reasonix`` in the same trusted folder meanwhile — another
terminal, an editor's ACP session — and that session starts the planted server outside the
sandbox. When the first session ends the plant is undone, too late.

Also: a write of a protected file that a file tool was approved to make while a job runs makes
the job's guard forget that path *and every protected folder holding it*, so what the job writes
there afterwards stays — the approved file replaced by the job (the user approved ``{}``; a
server landed), or a sibling: approving a harmless ``.claude/commands/notes.md`` let the job's
``.claude/settings.json`` with a ``SessionStart`` hook survive, and the next ``reasonix`` ran the
hook outside the sandbox.

Worked on main when written (recorded as strict xfails); fixed: a running job's guard keeps a
record in the user's config folder (``running-jobs/``) and a session that finds a protected file
the record says was absent when the job started treats the folder as untrusted while it is
there; an approved write is kept with exactly its approved bytes, and the job's other creations
around it are still undone. Controls: the plant is undone when the job ends, and with
``[sandbox] bash = "off"`` it runs (the probe sees a run).

Also: a step snapshotted while the job's plant was there, then ``reasonix rewind`` to before it,
recreated the ``.mcp.json`` the guard had undone ("Recreated .mcp.json (deleted since)"). A
rewind no longer recreates a protected file; the control is an ordinary file the agent deleted,
which the same rewind does bring back.
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
from tests.security.support import Attack, Lab, lab
from tests.support.cli import run_cli

__all__ = ["lab"]

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)
pytestmark = [pytestmark, pytest.mark.slow]


def _trusted(lab: Lab, extra: str = "") -> None:
    lab.write_user_config(f"[trust]\nfolders = [{json.dumps(str(lab.root))}]\n{extra}")


def _while_a_job_runs(lab: Lab, *, background: bool = True) -> tuple[Path, bool]:
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
    if background:
        lab.ex.push(Reply.call("bash", {"command": plant, "run_in_background": True}))
        for _ in range(2):  # until "planted", then until "released"
            wait = {"name": "job", "arguments": {"id": "job-1", "wait": 120}}
            lab.ex.push(Reply.call("more_tools", wait))
    else:  # a long command in front: the same window
        lab.ex.push(Reply.call("bash", {"command": plant, "timeout": 170}))
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


def test_a_running_jobs_plant_is_not_obeyed_by_a_second_session(lab: Lab) -> None:
    _trusted(lab)
    marker, _ = _while_a_job_runs(lab)
    assert not marker.exists()


def test_a_long_foreground_commands_plant_is_not_obeyed_by_a_second_session(lab: Lab) -> None:
    _trusted(lab)
    marker, left = _while_a_job_runs(lab, background=False)
    assert not marker.exists()
    assert not left  # and the undo at its end still happens


def test_control_the_plant_is_undone_when_the_job_ends(lab: Lab) -> None:
    _trusted(lab)
    _, left = _while_a_job_runs(lab)
    assert not left


def test_control_unconfined_the_second_session_starts_the_plant(lab: Lab) -> None:
    _trusted(lab, '[sandbox]\nbash = "off"\n')
    marker, _ = _while_a_job_runs(lab)
    assert marker.exists()


# ---------------------------------------------------------------------------------------------
# An approved write makes the job's guard forget what it planted


def _approved_meanwhile(lab: Lab, approved: str, planted: str, text: str) -> list[str]:
    """A job waits until ``approved`` exists (a write the user approves, harmless), then writes
    ``text`` to ``planted``; the job's guard is then told about the approved write. The tool
    results."""
    b64 = base64.b64encode(text.encode()).decode()
    job = (
        f"while [ ! -e {approved} ]; do sleep 0.1; done; mkdir -p $(dirname {planted}); "
        f"echo {b64} | base64 -d > {planted}; echo replaced"
    )
    calls = [
        Attack("a job that waits", "bash", {"command": job, "run_in_background": True}),
        Attack("a write the user approves", "write_file", {"path": approved, "content": "{}\n"}),
        Attack("wait", "more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 120}}),
    ]
    out = lab.attack(calls, "--yes")
    assert out.proc.returncode == 0, out.proc.stderr
    return out.results


def _server_json(marker: Path) -> str:
    return json.dumps(
        {"mcpServers": {"planted": {"command": "sh", "args": ["-c", f"touch {marker}"]}}}
    )


def _settings_json(marker: Path) -> str:
    hook = {"type": "command", "command": f"touch {marker}"}
    return json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}})


def _next_start(lab: Lab) -> None:
    lab.ex.push(Reply.text("hello again"))
    lab.cli("run", "--no-planner", "again")


def test_a_job_cannot_replace_an_approved_config_file(lab: Lab) -> None:
    _trusted(lab)
    marker = lab.tmp / "replaced-server-ran"
    results = _approved_meanwhile(lab, ".mcp.json", ".mcp.json", _server_json(marker))
    _next_start(lab)
    assert not marker.exists(), results


def test_a_job_cannot_plant_next_to_an_approved_file(lab: Lab) -> None:
    _trusted(lab)
    marker = lab.tmp / "sibling-hook-ran"
    approved = ".claude/commands/notes.md"
    results = _approved_meanwhile(lab, approved, ".claude/settings.json", _settings_json(marker))
    _next_start(lab)
    assert not marker.exists(), results


def test_control_without_the_approved_write_the_sibling_is_undone(lab: Lab) -> None:
    """The same job, its approved file made by the test instead of a file tool: the guard
    undoes the plant (and the folder), so nothing runs."""
    _trusted(lab)
    marker = lab.tmp / "sibling-hook-ran"
    b64 = base64.b64encode(_settings_json(marker).encode()).decode()
    job = (
        "while [ ! -e go ]; do sleep 0.1; done; mkdir -p .claude; "
        f"echo {b64} | base64 -d > .claude/settings.json; echo replaced"
    )
    calls = [
        Attack("a job that waits", "bash", {"command": job, "run_in_background": True}),
        Attack("go", "write_file", {"path": "go", "content": "go\n"}),
        Attack("wait", "more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 120}}),
    ]
    out = lab.attack(calls, "--yes")
    assert out.proc.returncode == 0, out.proc.stderr
    assert "replaced" in "".join(out.results), out.results
    _next_start(lab)
    assert not marker.exists()
    assert not (lab.root / ".claude").exists()


def test_control_unconfined_the_sibling_runs(lab: Lab) -> None:
    _trusted(lab, '[sandbox]\nbash = "off"\n')
    marker = lab.tmp / "sibling-hook-ran"
    _approved_meanwhile(
        lab, ".claude/commands/notes.md", ".claude/settings.json", _settings_json(marker)
    )
    _next_start(lab)
    assert marker.exists()


# ---------------------------------------------------------------------------------------------
# A rewind to a snapshot taken while a job's plant was there


def _rewind_after_a_plant(lab: Lab, name: str, *, agent_deletes: bool = False) -> Path:
    """A job writes ``name`` and keeps running; a step is snapshotted meanwhile (the plant in
    it); the job is stopped (its guard undoes a protected plant; with ``agent_deletes`` the
    agent deletes the file instead); then ``reasonix rewind`` to before that step."""
    lab.write_user_config(f"[trust]\nfolders = [{json.dumps(str(lab.root))}]\n")
    (lab.root / "a.txt").write_text("a\n")
    server = {"mcpServers": {"p": {"command": "sh", "args": ["-c", "true"]}}}
    b64 = base64.b64encode(json.dumps(server).encode()).decode()
    plant = f"echo {b64} | base64 -d > {name}; echo planted; sleep 60"
    job = {"name": "job", "arguments": {"id": "job-1"}}
    calls = [
        Attack("plant", "bash", {"command": plant, "run_in_background": True}),
        Attack("wait", "more_tools", {**job, "arguments": {"id": "job-1", "wait": 20}}),
        Attack("a step", "write_file", {"path": "a.txt", "content": "b\n"}),
        Attack("stop", "more_tools", {**job, "arguments": {"id": "job-1", "action": "kill"}}),
    ]
    if agent_deletes:
        calls.append(Attack("delete", "delete_file", {"path": name}))
    out = lab.attack(calls, "--yes")
    assert "planted" in out.results[1], out.results
    assert not (lab.root / name).exists(), out.results
    proc = lab.cli("rewind", "--steps", "2" if agent_deletes else "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (lab.root / "a.txt").read_text() == "a\n", proc.stdout
    return lab.root / name


def test_a_rewind_does_not_recreate_a_plant_the_guard_undid(lab: Lab) -> None:
    assert not _rewind_after_a_plant(lab, ".mcp.json").exists()


def test_control_a_rewind_recreates_an_ordinary_file_deleted_since(lab: Lab) -> None:
    """The probe sees a recreation: the same snapshot brings back an ordinary file the agent
    deleted since."""
    assert _rewind_after_a_plant(lab, "servers.json", agent_deletes=True).exists()
