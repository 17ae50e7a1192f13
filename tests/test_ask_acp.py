"""``ask`` over ACP (the real ``python -m reasonix acp`` driven by the ACP SDK's own client):
an editor that shows forms gets the questions as one form (``elicitation/create``) and its
answers reach the model as the call's result; an editor that does not gets the questions as the
turn's last message, the turn ends with ``needs_input`` in its metadata, and the next prompt is
delivered as the open call's result."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from acp import schema as s
from acp import spawn_agent_process

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.project import Project, project
from tests.support.questions import QUESTIONS

__all__ = ["project"]

pytestmark = pytest.mark.slow


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


class FormEditor(EditorClient):
    """An editor that shows forms: it fills each one from ``content``."""

    def __init__(self, content: dict[str, Any]) -> None:
        super().__init__()
        self.content = content
        self.forms: list[tuple[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.forms.append((message, mode))
        return s.AcceptElicitationResponse(action="accept", content=self.content)


async def test_an_editor_that_shows_forms_answers_in_one(project: Project) -> None:
    project.ex.push(Reply.call("ask", {"questions": QUESTIONS}), Reply.text("Postgres it is."))
    client = FormEditor({"q1": "Postgres", "q2": ["Metrics", "Tracing"], "q2_other": "no UI"})
    log = (project.root.parent / "acp-stderr.log").open("ab")
    forms = s.ClientCapabilities(
        elicitation=s.ElicitationCapabilities(form=s.ElicitationFormCapabilities())
    )
    try:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "reasonix",
            "acp",
            env=project.env(),
            cwd=project.root,
            transport_kwargs={"stderr": log.fileno(), "shutdown_timeout": 30.0},
            use_unstable_protocol=True,
        ) as (conn, _process):
            await asyncio.wait_for(
                conn.initialize(protocol_version=1, client_capabilities=forms), 30
            )
            new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
            reply = await asyncio.wait_for(
                conn.prompt(session_id=new.session_id, prompt=text("set up storage")), 60
            )
    finally:
        log.close()
    assert reply.stop_reason == "end_turn"
    assert (reply.field_meta or {})["reasonix"]["stop_reason"] == "done"
    ((message, mode),) = client.forms
    assert "Which database should the service use?" in message
    fields = mode.requested_schema.properties
    assert [o.const for o in fields["q1"].one_of] == ["SQLite", "Postgres"]
    assert fields["q2"].type == "array"
    result = project.ex.requests[1].messages[-1]
    assert result["role"] == "tool"
    assert result["content"] == (
        "The user answered:\n"
        "- Which database should the service use? -> Postgres\n"
        "- Which extras do you want? -> Metrics; Tracing; (their own words) no UI"
    )
    assert "Postgres it is." in client.text()
