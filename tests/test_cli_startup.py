"""The interactive app's start: the prompt is on the screen before the session has opened, a
slow MCP server is named while it starts ("starting MCP servers (1)…"), and the first task waits
for it, so the first request already carries the server's tools (one tool set per session)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
import pytest

from reasonix.testing import Reply
from tests.support.mcp import FAKE
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def _slow_server_toml(gate: Path) -> str:
    """One MCP server that answers nothing until ``gate`` exists."""
    args = [FAKE, "--wait-for", str(gate)]
    return (
        "\n[[mcp.servers]]\n"
        'name = "slow"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(args)}\n"
        "startup_timeout = 120\n"
    )


def test_prompt_appears_before_a_slow_mcp_server_has_answered(
    project: Project, tmp_path: Path
) -> None:
    gate = tmp_path / "mcp-may-answer"
    project.write_toml(_slow_server_toml(gate))
    project.ex.push(Reply.text("All set."))
    env = project.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="120")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    try:
        # The server cannot have answered (the gate does not exist): both must show anyway.
        child.expect(r"starting MCP servers \(1\)…")
        child.expect("›")
        assert not gate.exists()
        child.sendline("hello")
        child.expect("waiting for the session to open")
        assert project.ex.requests == []  # the task waits for the servers' tools
        gate.write_text("")
        child.expect("All set.")
        child.expect("›")
        child.sendline("/exit")
        child.expect("saved")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    tools = [t["function"]["name"] for t in project.ex.requests[0].body["tools"]]
    assert "mcp__slow__echo" in tools, tools
