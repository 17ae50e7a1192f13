"""``ask`` over ACP (the real ``python -m reasonix acp`` driven by the ACP SDK's own client):
an editor that shows no forms gets the questions as the turn's last message, the turn ends with
``needs_input`` in its metadata, and the next prompt is delivered as the open call's result."""

from __future__ import annotations

import asyncio

from reasonix.testing import Reply
from tests.test_acp import EditorClient, acp_agent, text
from tests.test_ask_headless import QUESTIONS
from tests.test_cli_support import Project, project

__all__ = ["project"]


async def test_a_question_ends_the_turn_and_the_next_prompt_answers_it(project: Project) -> None:
    project.ex.push(Reply.call("ask", {"questions": QUESTIONS}), Reply.text("Going with SQLite."))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        first = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("set up storage")), 60
        )
        shown = client.text()
        second = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("1, no extras")), 60
        )
    assert first.stop_reason == "end_turn"
    meta = (first.field_meta or {})["reasonix"]
    assert meta["stop_reason"] == "needs_input" and meta["questions"] == QUESTIONS
    assert "[Database] Which database should the service use?" in shown
    assert "  1. SQLite: one file, no server" in shown
    assert second.stop_reason == "end_turn"
    assert (second.field_meta or {})["reasonix"]["questions"] == []
    answered = project.ex.requests[1].messages
    call_id = answered[-2]["tool_calls"][0]["id"]
    assert answered[-1] == {
        **answered[-1],
        "role": "tool",
        "tool_call_id": call_id,
    }
    assert "1, no extras" in answered[-1]["content"]
    assert "Going with SQLite." in client.text()
