"""Consent that tells the whole truth, through the real CLI.

The trust question (interactive ``reasonix`` in a folder it does not trust) must list every item
that would take effect: each hook with its event and command (``reasonix.toml`` and
``.claude/settings.json``), each MCP server with its command, custom commands with their shell
lines, skills, agent profiles and settings. Before the fix it listed settings and the
``.mcp.json`` server names only (``reasonix.toml`` hooks as an empty heading, no
``.claude/settings.json`` hook, no command, skill or profile), and "yes" started the
SessionStart hooks it had not shown. Nothing may run before the answer; the control is the
answer itself: after "yes" the hooks do run, so the probe sees them.

The fingerprint of a remembered "yes" must cover every byte of everything loaded. Before the fix
it read at most 4 MiB and 200 files, skipped ``.claude/agents`` and hashed a symlinked folder as
a link: a command file past the 200th, a byte past 4 MiB, a new agent profile, a file in a
symlinked skills folder and the script an MCP server runs from the folder each changed what
loads or runs without a new question. Each now makes the next
``reasonix run`` treat the folder as untrusted; the control changes a file that is not loaded
and the folder stays trusted (the probe tells the two apart). A symlink out of the folder cannot
be remembered at all.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pexpect
import pytest

from reasonix.config.trust import TRUST_FILE, TrustStore
from reasonix.testing import Reply
from tests.security.support import Lab, lab, record

__all__ = ["lab"]

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pty"),
    pytest.mark.slow,
]

NOT_TRUSTED = "This folder is not trusted"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _every_kind(lab: Lab) -> None:
    """A repository with one item of each kind; the hooks and the server leave markers in the
    lab's parent folder when they run."""
    root = lab.root
    _write(
        root / "reasonix.toml",
        '[permissions]\nmode = "auto-edit"\n\n[[hooks.SessionStart]]\n'
        'hooks = [{ type = "command", command = "touch ../toml-hook-ran" }]\n',
    )
    settings = {
        "hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": "touch ../claude-ran"}]}]
        }
    }
    _write(root / ".claude" / "settings.json", json.dumps(settings))
    server = {"mcpServers": {"planted": {"command": "sh", "args": ["-c", "touch ../mcp-ran"]}}}
    _write(root / ".mcp.json", json.dumps(server))
    _write(
        root / ".claude" / "commands" / "deploy.md",
        "---\ndescription: ship it\n---\nStatus: !`touch ../command-ran`\n",
    )
    _write(
        root / ".claude" / "skills" / "helper" / "SKILL.md",
        "---\nname: helper\ndescription: helps with the release\n---\nSteps.\n",
    )
    _write(
        root / ".claude" / "agents" / "reviewer.md",
        "---\nname: reviewer\ndescription: reviews diffs\n---\nReview the diff.\n",
    )


def _spawn(lab: Lab) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "reasonix"],
        cwd=str(lab.root),
        env=lab.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="160"),
        encoding="utf-8",
        timeout=60,
        dimensions=(80, 200),
    )


def _markers(lab: Lab) -> list[str]:
    return sorted(p.name for p in lab.tmp.glob("*-ran"))


EXPECTED = (
    "SessionStart: touch ../toml-hook-ran  [reasonix.toml]",
    "SessionStart: touch ../claude-ran  [.claude/settings.json]",
    "planted: runs sh -c touch ../mcp-ran  [.mcp.json]",
    "/deploy  [.claude/commands/deploy.md] runs: touch ../command-ran",
    "helper: helps with the release  [.claude/skills/helper]",
    "reviewer: reviews diffs  [.claude/agents/reviewer.md]",
    "permissions.mode",
)


def test_the_trust_question_lists_every_item_and_nothing_runs_before_the_answer(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    _every_kind(lab)
    child = _spawn(lab)
    try:
        child.expect(r"Trust this folder\?")
        question = " ".join(str(child.before).replace("\r", "").split())
        ran_before = _markers(lab)
        missing = [item for item in EXPECTED if " ".join(item.split()) not in question]
        child.sendline("y")
        child.expect("›")
        # The control: "yes" runs the hooks it showed, so the probe can see them run.
        for _ in range(2400):  # a generous bound for the hooks to run on a loaded machine
            if {"toml-hook-ran", "claude-ran"} <= set(_markers(lab)):
                break
            time.sleep(0.05)
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    record(request, "consent", len(EXPECTED) + 1, len(missing) + bool(ran_before))
    assert ran_before == [], ran_before
    assert missing == [], question
    assert {"toml-hook-ran", "claude-ran"} <= set(_markers(lab))
    assert "command-ran" not in _markers(lab)  # a command's line runs only when it is used


# ---------------------------------------------------------------------------------------------
# The fingerprint of a remembered "yes"


def _remembered(lab: Lab) -> None:
    _write(lab.root / "reasonix.toml", '[permissions]\nmode = "auto-edit"\n')
    for k in range(250):
        _write(lab.root / ".claude" / "commands" / f"a{k:03}.md", f"command {k}\n")
    _write(lab.root / ".claude" / "commands" / "zz-last.md", "the last command\n")
    _write(lab.root / ".reasonix" / "big.txt", "x" * (5 * 1024 * 1024) + "tail\n")
    real = lab.root / "shared-skills" / "helper"
    _write(real / "SKILL.md", "---\nname: helper\ndescription: helps\n---\nSteps.\n")
    (lab.root / ".agents").mkdir()
    (lab.root / ".agents" / "skills").symlink_to("../shared-skills")
    _write(lab.root / "README.md", "an ordinary file\n")
    server = {"mcpServers": {"tool": {"command": "sh", "args": ["-c", "exec sh tools/serve.sh"]}}}
    _write(lab.root / ".mcp.json", json.dumps(server))
    _write(lab.root / "tools" / "serve.sh", "exit 0\n")
    assert TrustStore(lab.config_dir / TRUST_FILE).remember(lab.root) is None


def _trusted_now(lab: Lab) -> bool:
    lab.ex.push(Reply.text("hello"))
    proc = lab.cli("run", "--no-planner", "hello")
    assert proc.returncode == 0, proc.stderr
    return NOT_TRUSTED not in proc.stderr


CHANGES = {
    "a command past the 200th file": lambda root: _write(
        root / ".claude" / "commands" / "zz-last.md", "!`touch ../planted`\n"
    ),
    "a byte past 4 MiB": lambda root: _write(
        root / ".reasonix" / "big.txt", "x" * (5 * 1024 * 1024) + "TAIL\n"
    ),
    "a new agent profile": lambda root: _write(
        root / ".claude" / "agents" / "evil.md", "---\nname: evil\ndescription: e\n---\nDo it.\n"
    ),
    "the script a server runs": lambda root: _write(
        root / "tools" / "serve.sh", "touch ../planted; exit 0\n"
    ),
    "a skill in a symlinked folder": lambda root: _write(
        root / "shared-skills" / "helper" / "SKILL.md",
        "---\nname: helper\ndescription: run ../planted first\n---\nSteps.\n",
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_changing_any_loaded_byte_asks_again(
    lab: Lab, change: str, request: pytest.FixtureRequest
) -> None:
    _remembered(lab)
    assert _trusted_now(lab)
    CHANGES[change](lab.root)
    still = _trusted_now(lab)
    record(request, "consent", 1, int(still))
    assert not still, f"{change}: the folder stayed trusted"


def test_control_a_file_that_is_not_loaded_keeps_the_trust(lab: Lab) -> None:
    _remembered(lab)
    _write(lab.root / "README.md", "changed\n")
    assert _trusted_now(lab)


def test_a_symlink_out_of_the_folder_cannot_be_remembered(lab: Lab) -> None:
    outside = lab.tmp / "outside-commands"
    _write(outside / "x.md", "!`touch ../planted`\n")
    _write(lab.root / "reasonix.toml", '[permissions]\nmode = "auto-edit"\n')
    (lab.root / ".claude").mkdir()
    (lab.root / ".claude" / "commands").symlink_to(outside)
    problem = TrustStore(lab.config_dir / TRUST_FILE).remember(lab.root)
    assert problem is not None and "outside the folder" in problem
    assert not _trusted_now(lab)
