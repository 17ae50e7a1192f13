"""A bash command proved to only read runs without a question in ``ask`` mode, through the
real frontends: ``reasonix run`` (headless, where a question would be a refusal) and ``reasonix
acp`` driven by the ACP SDK's own client (where it would be a ``session/request_permission``).
In each, a command that changes something is the control: it still asks (headless: refused)."""

from __future__ import annotations

import asyncio

import pytest
from acp import schema as s

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def _tool_results(project: Project) -> list[str]:
    last = project.ex.requests[-1].messages
    return [m["content"] for m in last if m["role"] == "tool"]


def test_run_in_ask_mode_runs_ls_and_still_refuses_rm(project: Project) -> None:
    (project.root / "marker-file.txt").write_text("x\n")
    project.ex.push(
        Reply.call("bash", {"command": "ls -la"}),
        Reply.call("bash", {"command": "rm marker-file.txt"}),
        Reply.text("Listed; could not remove."),
    )
    proc = project.run("run", "--no-planner", "--output-format", "json", "tidy up")
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    listing, removal = _tool_results(project)
    assert "marker-file.txt" in listing and "needs approval" not in listing
    assert "needs approval" in removal and "rm marker-file.txt" in removal
    assert (project.root / "marker-file.txt").exists()
    (result,) = json_lines(proc.stdout)
    assert [d["subject"] for d in result["permission_denials"]] == ["rm marker-file.txt"]


async def test_acp_runs_ls_without_asking_and_asks_for_rm(project: Project) -> None:
    (project.root / "build").mkdir()
    (project.root / "marker-file.txt").write_text("x\n")
    project.ex.push(
        Reply.call("bash", {"command": "ls -la"}),
        Reply.call("bash", {"command": "rm -r build"}),
        Reply.text("Listed; did not remove build/."),
    )
    client = EditorClient(answers=["deny"])
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        assert new.modes is not None and new.modes.current_mode_id == "ask"
        reply = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("look, then clean")), 60
        )
    assert reply.stop_reason == "end_turn"
    ls_call, rm_call = [u for u in client.of(s.ToolCallStart) if u.kind == "execute"]
    # one question, for rm; none for ls
    assert [c.tool_call_id for c in client.permission_calls] == [rm_call.tool_call_id]
    statuses = {u.tool_call_id: u.status for u in client.of(s.ToolCallProgress)}
    assert statuses[ls_call.tool_call_id] == "completed"
    assert statuses[rm_call.tool_call_id] == "failed"
    listing = _tool_results(project)[0]
    assert "marker-file.txt" in listing
    assert (project.root / "build").is_dir()
