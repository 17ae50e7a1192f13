"""``reasonix acp`` as good as the terminal (issue 29), through the SDK's own client against
the real process: an edit's diff survives its completion, models per role in the editor's
picker (switched from the client, with the cost note), ``authMethods`` naming the configured
key variable, usage per phase (the planner's too, none repeated, the response's ``usage``
filled) and the planner gate's route in plain words."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from acp import schema as s

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.project import KEY_ENV, Project, project

__all__ = ["project"]


@pytest.mark.slow
async def test_edit_diff_survives_completion_and_auth_names_the_configured_variable(
    project: Project,
) -> None:
    (project.root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    project.ex.push(
        Reply.call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        Reply.text("Fixed."),
    )
    client = EditorClient(answers=["allow_once"])
    async with acp_agent(project, client) as conn:
        init = await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        names = [v.name for m in init.auth_methods for v in m.vars]
        assert names == [KEY_ENV]
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        reply = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("fix add")), 60
        )
    assert reply.stop_reason == "end_turn"
    assert (project.root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    (start,) = [u for u in client.of(s.ToolCallStart) if u.kind == "edit"]
    (done,) = [u for u in client.of(s.ToolCallProgress) if u.tool_call_id == start.tool_call_id]
    assert done.status == "completed"
    diffs = [c for c in done.content if isinstance(c, s.FileEditToolCallContent)]
    assert len(diffs) == 1, done.content
    assert diffs[0].new_text == "def add(a, b):\n    return a + b\n"


@pytest.mark.slow
async def test_model_switch_from_the_client_with_the_cost_note(project: Project) -> None:
    project.ex.push(Reply.text("On the new model."))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        options = {o.id: o for o in new.config_options or []}
        assert set(options) == {"model.executor", "model.planner"}
        executor = options["model.executor"]
        assert executor.category == "model" and executor.current_value == "deepseek-flash"
        other = next(o.value for o in executor.options if o.value != "deepseek-flash")
        switched = await conn.set_config_option(
            config_id="model.executor", session_id=new.session_id, value=other
        )
        now = {o.id: o.current_value for o in switched.config_options}
        assert now["model.executor"] == other
        await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("hi")), 60)
    assert f"now runs on {other}" in client.text() and "uncached" in client.text()
    assert project.ex.requests[-1].body["model"] == other


@pytest.mark.slow
async def test_usage_per_phase_not_repeated_and_in_the_response(project: Project) -> None:
    project.pl.push(
        Reply.call("submit_plan", {"objective": "Say hi", "steps": [{"title": "Say hi"}]})
    )
    project.ex.push(
        Reply.call("complete_step", {"step": "1", "evidence": "said hi"}),
        Reply.text("Hi."),
    )
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        reply = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("/plan say hi")), 60
        )
    usages = client.of(s.UsageUpdate)
    planner = [u for u in usages if u.field_meta["reasonix"]["role"] == "planner"]
    assert planner and all(u.used > 0 for u in planner)
    pairs = [(u.used, u.cost.amount) for u in usages]
    assert all(a != b for a, b in itertools.pairwise(pairs)), pairs
    assert reply.usage is not None and reply.usage.input_tokens > 0
    assert reply.usage.total_tokens == reply.usage.input_tokens + reply.usage.output_tokens
    thoughts = "".join(u.content.text for u in client.of(s.AgentThoughtChunk))
    assert "plan_and_execute" not in thoughts and "explicit" not in thoughts
    assert "The planner studies the task first" in thoughts
