"""The session façade as a remote frontend uses it: a turn as an async stream of events plus a
result, approvals answered by id, interrupting a turn, plan approval, and the notices the
façade adds (a failed git snapshot). Real HTTP to the fake DeepSeek servers, real files, real
git, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.app import (
    AgentSession,
    ApprovalAnswered,
    ApprovalRequested,
    PlanApprovalRequested,
    Turn,
)
from reasonix.errors import SessionError
from reasonix.events import (
    CollectingSink,
    Event,
    GateDecided,
    NoticeEvent,
    TextDeltaEvent,
    ToolResultEvent,
    TurnEnded,
    UsageEvent,
    UsageSource,
)
from reasonix.messages import Usage
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.sessions import Servers, open_session


async def answer_each(
    session: AgentSession, turn: Turn, choices: list[tuple[str, str]]
) -> list[Event]:
    """Read the whole stream, answering each approval question with the next choice."""
    seen: list[Event] = []
    async for event in turn:
        seen.append(event)
        if isinstance(event, ApprovalRequested | PlanApprovalRequested):
            choice, reason = choices.pop(0)
            session.answer_approval(event.id, choice, reason)  # type: ignore[arg-type]
    return seen


async def test_a_turn_streams_its_events_then_gives_its_result(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.text("hello there"))
    sink = CollectingSink()
    session = await open_session(tmp_path, servers, store, sink=sink)
    try:
        turn = session.start_turn("hi")
        streamed = [event async for event in turn]
        outcome = await turn.result()
    finally:
        await session.aclose()
    assert outcome.result.text == "hello there"
    assert not outcome.interrupted
    assert outcome.requests == 1
    assert isinstance(streamed[0], GateDecided)
    assert isinstance(streamed[-1], TurnEnded)
    assert "".join(e.text for e in streamed if isinstance(e, TextDeltaEvent)) == "hello there"
    assert any(isinstance(e, UsageEvent) for e in streamed)
    # The frontend's sink saw the same events, in the same order.
    assert [e for e in sink.events if e in streamed] == streamed


async def test_a_stream_read_late_loses_nothing(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.text("late reader"))
    session = await open_session(tmp_path, servers, store)
    try:
        turn = session.start_turn("hi")
        outcome = await turn.result()
        streamed = [event async for event in turn]
        again = [event async for event in turn]
    finally:
        await session.aclose()
    assert outcome.result.text == "late reader"
    assert isinstance(streamed[-1], TurnEnded)
    assert again == []


async def test_remote_approvals_are_events_answered_by_id(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(
        Reply.call("write_file", {"path": "a.txt", "content": "one\n"}),
        Reply.call("write_file", {"path": "b.txt", "content": "two\n"}),
        Reply.text("done"),
    )
    session = await open_session(tmp_path, servers, store, remote_approvals=True)
    try:
        assert session.mode == "ask"
        turn = session.start_turn("write two files")
        seen = await answer_each(
            session, turn, [("allow_once", ""), ("deny", "b.txt is not wanted")]
        )
        outcome = await turn.result()
    finally:
        await session.aclose()
    asked = [e for e in seen if isinstance(e, ApprovalRequested)]
    assert [(q.tool, q.arguments["path"]) for q in asked] == [
        ("write_file", "a.txt"),
        ("write_file", "b.txt"),
    ]
    assert asked[0].id != asked[1].id
    assert asked[0].session_rules  # what "allow for the session" would add
    answered = [(e.id, e.choice) for e in seen if isinstance(e, ApprovalAnswered)]
    assert answered == [(asked[0].id, "allow_once"), (asked[1].id, "deny")]
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert not (tmp_path / "b.txt").exists()
    # The denial's reason went back to the model as the tool result.
    denied = [e for e in seen if isinstance(e, ToolResultEvent) and e.is_error]
    assert "b.txt is not wanted" in denied[0].content
    assert outcome.refused
    assert [d.tool for d in outcome.denials] == ["write_file"]
    assert "b.txt is not wanted" in str(ex.requests[2].messages[-1]["content"])


async def test_allow_for_the_session_is_not_asked_again(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(
        Reply.call("bash", {"command": "touch one"}),
        Reply.call("bash", {"command": "touch one"}),
        Reply.text("done"),
    )
    session = await open_session(tmp_path, servers, store, remote_approvals=True)
    try:
        turn = session.start_turn("echo twice")
        seen = await answer_each(session, turn, [("allow_session", "")])
        outcome = await turn.result()
    finally:
        await session.aclose()
    assert len([e for e in seen if isinstance(e, ApprovalRequested)]) == 1
    results = [e for e in seen if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in results] == [False, False]
    assert not outcome.refused


async def test_answering_what_is_not_waiting_says_so(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    remote = await open_session(tmp_path, servers, store, remote_approvals=True)
    try:
        with pytest.raises(SessionError, match="no approval 'approval-7' is waiting"):
            remote.answer_approval("approval-7", "allow_once")
        with pytest.raises(SessionError, match="allow_once, allow_session, deny"):
            remote.answer_approval("approval-1", "sure")  # type: ignore[arg-type]
    finally:
        await remote.aclose()
    in_place = await open_session(tmp_path, servers, store)
    try:
        with pytest.raises(SessionError, match="remote_approvals=True"):
            in_place.answer_approval("approval-1", "deny")
    finally:
        await in_place.aclose()


async def test_interrupt_ends_the_turn_and_keeps_a_valid_session(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.call("write_file", {"path": "a.txt", "content": "one\n"}))
    session = await open_session(tmp_path, servers, store, remote_approvals=True)
    try:
        turn = session.start_turn("write a file")
        with pytest.raises(SessionError, match="a turn is running"):
            session.start_turn("another")
        seen: list[Event] = []
        async for event in turn:
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                assert session.waiting_approvals == [event.id]
                assert session.interrupt()
        outcome = await turn.result()
        assert outcome.interrupted
        assert outcome.result.stop_reason == "cancelled"
        assert session.waiting_approvals == []
        assert not session.interrupt()  # nothing runs now
        assert [e.choice for e in seen if isinstance(e, ApprovalAnswered)] == ["cancelled"]
        assert not (tmp_path / "a.txt").exists()

        # The next turn is a valid continuation (the fake server rejects what DeepSeek would).
        ex.push(Reply.text("continuing"))
        after = await session.run_turn("carry on")
        assert after.result.text == "continuing"
        assert not after.interrupted
        stored = store.load_messages(session.session_id, "executor")
        assert stored == list(session.controller.executor.session.snapshot())
    finally:
        await session.aclose()


async def test_closing_interrupts_a_running_turn(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.call("write_file", {"path": "a.txt", "content": "one\n"}))
    session = await open_session(tmp_path, servers, store, remote_approvals=True)
    turn = session.start_turn("write a file")
    async for event in turn:
        if isinstance(event, ApprovalRequested):
            break
    await session.aclose()
    outcome = await turn.result()
    assert outcome.interrupted
    assert not store.in_use(session.session_id)


async def test_a_plan_that_needs_approval_is_asked_remotely_then_approved_later(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, pl = servers
    pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": "Write the note",
                "steps": [{"title": "Write note.txt"}],
                "requires_approval": True,
            },
        )
    )
    session = await open_session(tmp_path, servers, store, remote_approvals=True)
    try:
        turn = session.start_turn("write a note", plan=True)
        seen = await answer_each(session, turn, [("deny", "")])
        declined = await turn.result()
        assert declined.result.stop_reason == "plan_declined"
        assert declined.refused
        (question,) = [e for e in seen if isinstance(e, PlanApprovalRequested)]
        assert "Write note.txt" in question.markdown
        assert session.pending_plan is not None
        assert ex.requests == []

        ex.push(
            Reply.call("write_file", {"path": "note.txt", "content": "n\n"}),
            Reply.call("complete_step", {"step": "1", "evidence": "wrote note.txt"}),
            Reply.text("written"),
        )
        session.set_mode("auto-edit")
        approved = await session.approve_plan().result()
        assert approved.result.text == "written"
        assert (tmp_path / "note.txt").exists()
        assert session.pending_plan is None
        with pytest.raises(SessionError, match="no plan is waiting"):
            session.approve_plan()
    finally:
        await session.aclose()


async def test_a_failed_git_snapshot_is_reported_once(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    # A file where the snapshot store's folder should be: every snapshot fails.
    (store.path.parent / "checkpoints").write_text("in the way\n")
    ex, _ = servers
    ex.push(Reply.call("bash", {"command": "touch one"}), Reply.text("ran it"))
    ex.push(Reply.call("bash", {"command": "touch two"}), Reply.text("ran it again"))
    sink = CollectingSink()
    session = await open_session(tmp_path, servers, store, {"permissions.mode": "yolo"}, sink=sink)
    try:
        turn = session.start_turn("run a command")
        streamed = [event async for event in turn]
        await turn.result()
        await session.run_turn("and another")
    finally:
        await session.aclose()
    notices = [e for e in sink.of_type(NoticeEvent) if e.code == "snapshot_failed"]
    assert len(notices) == 1
    assert "File exists" in notices[0].message
    assert "/rewind" in notices[0].message
    assert notices[0] in streamed
    assert "snapshot_failed" in str(store.load_events(session.session_id))


async def test_the_facade_answers_the_frontends_questions(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.text("one"))
    session = await open_session(tmp_path, servers, store)
    try:
        assert session.models() == {"executor": "deepseek-flash", "planner": "deepseek-v4-pro"}
        assert not session.resumed
        assert not session.running
        await session.run_turn("first")
        assert set(session.usage.cost()) == {"executor"}
        assert session.usage.cost()["executor"].requests == 1
        assert session.message_count("executor") == 3
        assert session.message_count("planner") == 0
        assert [u.role for u in session.usage.context_use()] == ["executor", "planner"]
        assert [info.id for info in session.history.sessions()] == [session.session_id]
        first = session.session_id
    finally:
        await session.aclose()
    again = await open_session(tmp_path, servers, store, continue_last=True)
    try:
        assert again.session_id == first
        assert again.resumed
    finally:
        await again.aclose()


async def test_an_approver_and_remote_approvals_exclude_each_other(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    class Never:
        async def approve(self, request: object) -> object:
            raise AssertionError("not asked")

    with pytest.raises(SessionError, match="not both"):
        await open_session(tmp_path, servers, store, approver=Never(), remote_approvals=True)


async def test_cost_has_a_row_for_every_source_that_spent_including_subagents(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    ex.push(Reply.text("one"))
    session = await open_session(tmp_path, servers, store)
    try:
        await session.run_turn("first")
        # A delegated child session reports its usage under its own source.
        child = Usage(prompt_tokens=100, cache_hit_tokens=64, cache_miss_tokens=36)
        session.controller.sink.emit(
            UsageEvent("subagent", UsageSource.SUBAGENT, "deepseek-v4-flash", child, 0.001)
        )
        cost = session.usage.cost()
        assert set(cost) == {"executor", "subagent"}
        assert cost["subagent"].usage == child
        assert "subagent" in session.usage.cost_table()
    finally:
        await session.aclose()
