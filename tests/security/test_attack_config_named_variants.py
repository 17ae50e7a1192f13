"""Variants against the protection of the scripts our own configuration runs (fixed in 12c6852:
a word of a hook's or an MCP server's command that names an existing file of the folder makes
that file protected, read-only in the sandbox and hashed by the trust fingerprint).

The words are read as paths from the folder's top, and only files that exist count, so these
ordinary ways to name a script were not seen (each through a confined command, ``--yes``, in a
folder the user trusts; the next ``reasonix`` ran the script outside the sandbox):

- ``.mcp.json`` with ``"cwd": "tools"`` and ``"args": ["server.sh"]``: the script is
  ``tools/server.sh``, the word names ``server.sh`` at the top;
- a hook written as Claude Code's documentation shows it, ``sh "$CLAUDE_PROJECT_DIR"/scripts/
  check.sh``: the word starts with a variable;
- a hook that runs an optional local script, ``[ -f scripts/local.sh ] && sh scripts/local.sh ||
  true``: not there when the list is made, so not protected when a command creates it;
- ``sh -c 'cd scripts && sh ./start.sh'``: the script is named relative to another folder;
- ``sh scripts/quiet.sh>/dev/null``: the words were split at blanks and a few operators, so the
  word was ``scripts/quiet.sh>/dev/null`` (a ``>``, ``<`` or ``&`` written without a blank); the
  shell lexer reads the command now, as it does for the permission rules.

Worked on main when written (recorded as strict xfails); fixed: words are read from a server's
``cwd`` and from the folders other words name, ``$CLAUDE_PROJECT_DIR`` is the folder, a ``-c``
script's words count, and a path not there yet is protected too. Control: the protected form
(``sh scripts/start.sh``) holds against the same plant.
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

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
    pytest.mark.slow,
]


def _hook(lab: Lab, command: str) -> None:
    entry = {"type": "command", "command": command}
    settings = {"hooks": {"SessionStart": [{"hooks": [entry]}]}}
    (lab.root / ".claude").mkdir(exist_ok=True)
    (lab.root / ".claude" / "settings.json").write_text(json.dumps(settings))


def _existing(lab: Lab, rel: str) -> str:
    (lab.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (lab.root / rel).write_text("echo starting >&2\n")
    return rel


#: name -> (set-up, the script the plant appends to)
CASES = {
    "mcp cwd": lambda lab: (
        (lab.root / ".mcp.json").write_text(
            json.dumps(
                {"mcpServers": {"t": {"command": "sh", "args": ["server.sh"], "cwd": "tools"}}}
            )
        ),
        _existing(lab, "tools/server.sh"),
    )[1],
    "CLAUDE_PROJECT_DIR": lambda lab: (
        _hook(lab, 'sh "$CLAUDE_PROJECT_DIR"/scripts/check.sh'),
        _existing(lab, "scripts/check.sh"),
    )[1],
    "optional script": lambda lab: (
        _hook(lab, "[ -f scripts/local.sh ] && sh scripts/local.sh || true"),
        "scripts/local.sh",
    )[1],
    "another folder": lambda lab: (
        _hook(lab, "sh -c 'cd scripts && sh ./start.sh'"),
        _existing(lab, "scripts/start.sh"),
    )[1],
    "redirection glued on": lambda lab: (
        _hook(lab, "sh scripts/quiet.sh>/dev/null"),
        _existing(lab, "scripts/quiet.sh"),
    )[1],
}


def _plant_and_start(lab: Lab, rel: str) -> bool:
    lab.write_user_config(f"[trust]\nfolders = [{json.dumps(str(lab.root))}]\n")
    # Absolute paths: a script may run from a subfolder (a cwd, a cd).
    plant = f"cat {lab.tmp}/secret.txt > {lab.tmp}/leaked.txt\n"
    b64 = base64.b64encode(plant.encode()).decode()
    folder = str(Path(rel).parent)
    command = f"mkdir -p {folder} && echo {b64} | base64 -d >> {rel}"
    out = lab.attack([Attack("append", "bash", {"command": command})], "--yes")
    assert out.proc.returncode == 0, out.proc.stderr
    lab.ex.push(Reply.text("hello again"))
    lab.cli("run", "--no-planner", "again")
    leaked = lab.tmp / "leaked.txt"
    return leaked.exists() and SECRET_NEXT_DOOR in leaked.read_text()


@pytest.mark.parametrize("case", list(CASES))
def test_a_confined_command_cannot_change_a_script_our_config_runs(lab: Lab, case: str) -> None:
    assert not _plant_and_start(lab, CASES[case](lab))


def test_control_the_plain_form_is_protected(lab: Lab) -> None:
    _hook(lab, "sh scripts/start.sh")
    assert not _plant_and_start(lab, _existing(lab, "scripts/start.sh"))
