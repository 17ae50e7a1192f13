"""What an editor shows when ``reasonix acp`` asks for a command's approval.

In the terminal an approval shows the command exactly as it will run, and why it asks (for a
command no snapshot can undo, that it is irreversible). Over ACP the ``session/request_permission``
carried the tool call's title only — ``bash`` and the command cut at 120 characters, a newline
and all — plus the raw arguments, which editors keep out of sight: a command whose dangerous
part comes after 120 characters of harmless text was approved from a title that did not show
it, and the reason it asked (irreversible: the target is outside the workspace) never reached
the editor at all.

Worked before the fix in this module's commit (the question's content now carries the command
as it will run and the reason). Control: a short command is whole in the title, so the probe
reads what the editor shows.
"""

from __future__ import annotations

import asyncio

import pytest
from acp import schema as s

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

LONG = (
    "echo 'formatting every source file of the project before the tests run, as CONTRIBUTING "
    "asks'; true; true; true; touch ../acp-tail-ran"
)
OUTSIDE = "rm -rf ../elsewhere"


def _shown(call: s.ToolCallUpdate) -> str:
    """What an editor shows of a permission question: its title and its text content."""
    parts = [call.title or ""]
    for item in call.content or []:
        inner = getattr(item, "content", None)
        if isinstance(inner, s.TextContentBlock):
            parts.append(inner.text)
    return "\n".join(parts)


async def _asked(project: Project, *commands: str) -> list[str]:
    for command in commands:
        project.ex.push(Reply.call("bash", {"command": command}))
    project.ex.push(Reply.text("done"))
    client = EditorClient(answers=[])  # every question rejected
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("go")), 60)
    return [_shown(call) for call in client.permission_calls]


async def test_the_editor_is_shown_the_whole_command_and_why(project: Project) -> None:
    (project.root.parent / "elsewhere").mkdir()
    long_shown, outside_shown = await _asked(project, LONG, OUTSIDE)
    assert "touch ../acp-tail-ran" in long_shown, long_shown
    assert "no snapshot can undo" in outside_shown, outside_shown
    assert not (project.root.parent / "acp-tail-ran").exists()


async def test_control_a_short_command_is_in_the_title(project: Project) -> None:
    (shown,) = await _asked(project, "touch short-ran")
    assert "touch short-ran" in shown
