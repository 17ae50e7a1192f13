"""The session façade's commands in-process against fake servers: config wiring, persistence
through session listeners, rewind (files + both conversations + store), modes, clear/resume,
repair of a cut-off session, and the demo scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.agent.agent import INTERRUPTED_CALL, INTERRUPTED_TURN
from reasonix.app import AgentSession, demo
from reasonix.app.assembly import effort_options
from reasonix.app.persistence import repair_messages
from reasonix.config import load_config
from reasonix.errors import ConfigError, SessionStoreError
from reasonix.events import CollectingSink
from reasonix.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Reply
from tests.support.project import project_toml
from tests.support.sessions import ENV, open_session


async def test_config_reaches_the_wire_and_store(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer], store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.text("hi"))
    sink = CollectingSink()
    rt = await open_session(tmp_path, servers, store, {"executor.effort": "off"}, sink=sink)
    try:
        outcome = await rt.run_turn("hello")
    finally:
        await rt.aclose()
    assert outcome.result.text == "hi"
    body = ex.requests[0].body
    assert body["model"] == "deepseek-flash"
    assert body["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in body
    assert ex.requests[0].headers["authorization"] == "Bearer sk-test"
    assert {"read_file", "edit_file", "bash", "complete_step"} <= {
        t["function"]["name"] for t in body["tools"]
    }
    stored = store.load_messages(rt.session_id, "executor")
    assert [m.to_wire() for m in stored] == [
        *ex.requests[0].messages,
        {"role": "assistant", "content": "hi", "reasoning_content": ""},
    ]
    kinds = [e["kind"] for e in store.load_events(rt.session_id)]
    assert kinds[0] == "turn_mark"
    assert "usage" in kinds
    assert store.usage_summary(rt.session_id)["executor"].requests == 1
    assert "gate_decided" in sink.kinds()


def test_effort_options() -> None:
    config = load_config(Path("/nonexistent-project"), environ={}, user_config="/nonexistent")
    assert effort_options(config.executor) == (True, "high")


async def test_rewind_restores_files_and_both_conversations(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer], store: SessionStore
) -> None:
    ex, _ = servers
    rt = await open_session(tmp_path, servers, store)
    try:
        assert rt.set_mode("yolo") == "Permission mode: yolo"
        ex.push(
            Reply.call("write_file", {"path": "a.txt", "content": "one\n"}),
            Reply.text("wrote one"),
        )
        await rt.run_turn("write one")
        after_first = len(rt.controller.executor.session)
        ex.push(
            Reply.call("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "two"}),
            Reply.text("now two"),
        )
        await rt.run_turn("make it two")
        assert (tmp_path / "a.txt").read_text() == "two\n"

        text = rt.history.rewind()
        assert "turn 2" in text
        assert (tmp_path / "a.txt").read_text() == "one\n"
        assert len(rt.controller.executor.session) == after_first
        stored = store.load_messages(rt.session_id, "executor")
        assert stored == list(rt.controller.executor.session.snapshot())

        text = rt.history.rewind(1)
        assert not (tmp_path / "a.txt").exists()
        assert len(rt.controller.executor.session) == 0
        assert store.load_messages(rt.session_id, "executor") == []
        assert rt.history.rewind().startswith("Nothing to rewind")

        ex.push(Reply.text("fresh start"))
        out = await rt.run_turn("hello again")
        assert out.result.text == "fresh start"
        assert ex.last_request.messages[1] == {"role": "user", "content": "hello again"}
    finally:
        await rt.aclose()


async def test_modes_clear_resume_and_slash_helpers(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer], store: SessionStore
) -> None:
    ex, _ = servers
    rt = await open_session(tmp_path, servers, store)
    try:
        with pytest.raises(ConfigError):
            rt.set_mode("sometimes")
        assert "ask" in rt.set_mode()
        ex.push(Reply.text("first"))
        await rt.run_turn("one")
        first_id = rt.session_id
        assert "executor" in rt.usage.cost_table()
        assert rt.todo() == "The todo list is empty."
        assert (await rt.compact()).startswith(("Compacted", "Not compacted"))
        msg = await rt.history.clear()
        assert first_id in msg
        assert rt.session_id != first_id
        assert len(rt.controller.executor.session) == 0
        assert [s.id for s in rt.history.sessions()] == [rt.session_id, first_id]

        msg = await rt.history.resume(first_id)
        assert "3 executor" in msg
        ex.push(Reply.text("second"))
        await rt.run_turn("two")
        first = {"role": "assistant", "content": "first", "reasoning_content": ""}
        assert ex.last_request.messages[:3] == [*ex.requests[0].messages, first]
        with pytest.raises(SessionStoreError):
            await rt.history.resume("missing")
        assert rt.mcp.status()[0].startswith("No MCP servers")
    finally:
        await rt.aclose()


def test_repair_messages_appends_what_a_killed_turn_missed() -> None:
    call = ToolCall("c1", "bash", "{}")
    cut_in_tools = [
        SystemMessage("s"),
        UserMessage("u"),
        AssistantMessage(content="", reasoning_content="r", tool_calls=(call,)),
    ]
    (fix,) = repair_messages(cut_in_tools)
    assert isinstance(fix, ToolMessage)
    assert fix.tool_call_id == "c1"
    assert fix.content == INTERRUPTED_CALL
    (fix,) = repair_messages([SystemMessage("s"), UserMessage("u")])
    assert fix == AssistantMessage(content=INTERRUPTED_TURN)
    assert repair_messages([SystemMessage("s"), UserMessage("u"), AssistantMessage("a")]) == []
    assert repair_messages([]) == []


async def test_demo_scenario_runs_one_dual_model_turn(tmp_path: Path, store: SessionStore) -> None:
    async with (
        FakeDeepSeekServer(demo.executor_script()) as ex,
        FakeDeepSeekServer(demo.planner_script()) as pl,
    ):
        sink = CollectingSink()
        outcome = await demo.run_scenario(
            tmp_path / "p", store, sink, executor_url=ex.base_url, planner_url=pl.base_url
        )
        ex.assert_exhausted()
        pl.assert_exhausted()
    result = outcome.result
    assert result.ok, result.text
    assert str(result.route) == "plan_and_execute"
    assert set(result.cost_by_role) == {"executor", "planner"}
    assert "return a + b" in (tmp_path / "p" / "calc.py").read_text()
    accepted = [e for e in sink.events if e.kind == "step_completed"]
    assert [getattr(e, "accepted", None) for e in accepted] == [True]
    assert not outcome.denials


async def test_compaction_keeps_the_full_transcript_in_the_store(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer], store: SessionStore
) -> None:
    from reasonix.agent.compaction import SUMMARY_HEADER, SUMMARY_INSTRUCTION

    ex, _ = servers

    def answer(request: object) -> Reply:
        last = request.messages[-1]  # type: ignore[attr-defined]
        if last.get("content") == SUMMARY_INSTRUCTION:
            return Reply.text("Summary: five questions were answered.")
        return Reply.text("answer " + "words " * 40)

    ex.handler = answer
    rt = await open_session(tmp_path, servers, store, {"planner.enabled": False})
    try:
        for i in range(6):
            await rt.run_turn(f"question number {i} " + "padding " * 40)
        before = store.load_messages(rt.session_id, "executor")
        assert (await rt.compact()).startswith("Compacted")
        live = store.load_messages(rt.session_id, "executor")
        archived_rows = store.load_archived(rt.session_id, "executor")
        archived = [m for _, m in archived_rows]
    finally:
        await rt.aclose()
    assert live == list(rt.controller.executor.session.snapshot())
    assert isinstance(live[1], UserMessage)
    assert live[1].content.startswith(SUMMARY_HEADER)
    # every message that left the live session is still in the store, in order
    assert {reason for reason, _ in archived_rows} == {"compaction"}
    removed = before[1 : len(before) - (len(live) - 3)]
    assert archived[: len(removed)] == removed


@pytest.mark.slow
async def test_project_mcp_json_servers_are_started_and_toml_wins_on_a_name(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer], store: SessionStore
) -> None:
    import json
    import sys

    from reasonix.app.assembly import mcp_server_configs

    time_server = str(Path(sys.executable).parent / "mcp-server-time")
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "clock": {"command": time_server, "args": ["--local-timezone", "UTC"]},
                    "dup": {"command": "from-json"},
                }
            }
        )
    )
    extra = '\n[[mcp.servers]]\nname = "dup"\ncommand = "from-toml"\nenabled = false\n'
    (tmp_path / "reasonix.toml").write_text(project_toml(*servers, extra=extra))
    config = load_config(tmp_path, environ=ENV, user_config=tmp_path / "no-user.toml")
    found = {s.name: s.command for s in mcp_server_configs(config, tmp_path, ENV)}
    assert found == {"dup": "from-toml", "clock": time_server}
    rt = await AgentSession.open(config, tmp_path, store=store, environ=ENV)
    try:
        names = rt.controller.executor.tools.names
    finally:
        await rt.aclose()
    assert "mcp__clock__get_current_time" in names
