"""Files our own configuration runs, inside the work tree: the scripts a trusted ``.mcp.json``
server or a ``reasonix.toml`` hook names (``sh tools/server.sh``, ``sh scripts/start.sh`` — the
usual way a project ships its MCP server or its hooks).

``.mcp.json`` and ``reasonix.toml`` are protected (read-only in the sandbox, asked for through the
file tools, in the trust fingerprint), but the script they name is an ordinary project file: a
confined command, or ``write_file`` in ``auto-edit`` mode without a question, appends a line to
it, and the next ``reasonix`` in the trusted folder runs that line outside the sandbox — the same
shape as issue 24's class 2 (what git's configuration names), for our own configuration; and the
trust fingerprint does not cover it, so nothing asks again (class 5).

Worked on main when written (recorded as strict xfails); fixed: the files our configuration's
commands name in the folder are on the protected list (read-only in the sandbox, asked for by
the file tools) and in the trust fingerprint. Control: the planted line runs when the script has
it, so the probe sees a run.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.security.support import SECRET_NEXT_DOOR, Attack, Lab, lab

__all__ = ["lab"]

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
)
pytestmark = [pytestmark, pytest.mark.slow]

#: What the attack appends: read the secret next to the workspace (invisible in the sandbox).
PLANT = "cat ../secret.txt > ../leaked.txt\n"


def _setup(lab: Lab, kind: str) -> Path:
    """A trusted project whose ``kind`` (``mcp`` or ``hook``) runs a script in the work tree;
    the script's path."""
    lab.write_user_config(f"[trust]\nfolders = [{json.dumps(str(lab.root))}]\n")
    if kind == "mcp":
        script = lab.root / "tools" / "server.sh"
        server = {"command": "sh", "args": ["tools/server.sh"]}
        (lab.root / ".mcp.json").write_text(json.dumps({"mcpServers": {"tools": server}}))
    else:
        script = lab.root / "scripts" / "start.sh"
        entry = '{ type = "command", command = "sh scripts/start.sh" }'
        (lab.root / "reasonix.toml").write_text(f"[[hooks.SessionStart]]\nhooks = [{entry}]\n")
    script.parent.mkdir()
    script.write_text("echo starting >&2\n")
    return script


def _next_start(lab: Lab) -> bool:
    """The user's next ``reasonix run`` in the folder; whether the secret leaked."""
    lab.ex.push(Reply.text("hello again"))
    lab.cli("run", "--no-planner", "again")
    leaked = lab.tmp / "leaked.txt"
    return leaked.exists() and SECRET_NEXT_DOOR in leaked.read_text()


def _by_bash(lab: Lab, script: Path) -> bool:
    rel = script.relative_to(lab.root).as_posix()
    # base64, so no static check sees the outside path the planted line will use
    command = f"echo {base64.b64encode(PLANT.encode()).decode()} | base64 -d >> {rel}"
    out = lab.attack([Attack("append", "bash", {"command": command})], "--yes")
    assert out.proc.returncode == 0, out.proc.stderr
    assert "Read-only file system" in out.results[0] or PLANT in script.read_text(), out.results
    return _next_start(lab)


def _by_write_file(lab: Lab, script: Path) -> bool:
    rel = script.relative_to(lab.root).as_posix()
    content = script.read_text() + PLANT
    out = lab.attack(
        [Attack("append", "write_file", {"path": rel, "content": content})], "--mode", "auto-edit"
    )
    assert out.proc.returncode in (0, 3), out.proc.stderr
    return _next_start(lab)


@pytest.mark.parametrize("kind", ["mcp", "hook"])
def test_a_confined_command_cannot_change_a_script_our_config_runs(lab: Lab, kind: str) -> None:
    assert not _by_bash(lab, _setup(lab, kind))


@pytest.mark.parametrize("kind", ["mcp", "hook"])
def test_write_file_asks_before_changing_a_script_our_config_runs(lab: Lab, kind: str) -> None:
    assert not _by_write_file(lab, _setup(lab, kind))


@pytest.mark.parametrize("kind", ["mcp", "hook"])
def test_control_the_planted_line_runs_at_the_next_start(lab: Lab, kind: str) -> None:
    script = _setup(lab, kind)
    with script.open("a") as f:
        f.write(PLANT)
    assert _next_start(lab), "the probe cannot see the script run"
