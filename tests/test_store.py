from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reasonix.errors import SessionStoreError
from reasonix.events import (
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolCallEvent,
    TurnStarted,
    UsageEvent,
    UsageSource,
)
from reasonix.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    message_to_dict,
)
from reasonix.store import SessionStore, StoreSink, default_store_path

SRC = Path(__file__).resolve().parents[1] / "src"


def all_kinds() -> list[Message]:
    return [
        SystemMessage("You are reasonix.\nBe brief."),
        UserMessage("Fix the bug in `parse()` — ünïcödé, 中文, emoji 🚀, and a lone \udcff byte"),
        AssistantMessage(
            content="",
            reasoning_content="Need to read the file first.",
            tool_calls=(
                ToolCall("call_1", "read_file", '{"path": "src/a.py"}'),
                ToolCall("call_2", "bash", '{"command":"ls -la","timeout":  5}'),
            ),
        ),
        ToolMessage("call_1", "def parse():\n    return 1\n", name="read_file"),
        ToolMessage("call_2", "ls: cannot access: No such file", name="bash", is_error=True),
        AssistantMessage(content="Done.", reasoning_content="All good."),
        AssistantMessage(content="No reasoning here."),
        AssistantMessage(content="", reasoning_content="", tool_calls=(ToolCall("c", "t", ""),)),
    ]


def test_round_trip_of_every_message_kind(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, title="round trip", executor_model="deepseek-v4-flash")
    messages = all_kinds()
    for seq, message in enumerate(messages):
        store.append_message(sid, "executor", seq, message)
    store.append_message(sid, "planner", 0, UserMessage("plan it"))
    store.close()

    with SessionStore(store.path) as again:
        loaded = again.load_messages(sid, "executor")
        assert loaded == messages
        assert [message_to_dict(m) for m in loaded] == [message_to_dict(m) for m in messages]
        wire = [json.dumps(m.to_wire(), ensure_ascii=False) for m in messages]
        assert [json.dumps(m.to_wire(), ensure_ascii=False) for m in loaded] == wire
        assert again.load_messages(sid, "planner") == [UserMessage("plan it")]
        info = again.get_session(sid)
        assert info is not None
        assert info.message_counts == {"executor": len(messages), "planner": 1}
        assert info.executor_model == "deepseek-v4-flash"
        assert info.title == "round trip"


def test_appends_are_idempotent_and_conflicts_refused(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    store.append_message(sid, "executor", 0, UserMessage("a"))
    store.append_message(sid, "executor", 1, AssistantMessage("b"))
    store.append_message(sid, "executor", 1, AssistantMessage("b"))  # a resumed writer
    assert store.load_messages(sid, "executor") == [UserMessage("a"), AssistantMessage("b")]
    with pytest.raises(SessionStoreError, match="different executor message at seq 1"):
        store.append_message(sid, "executor", 1, AssistantMessage("c"))
    assert store.message_count(sid, "executor") == 2


def test_truncate_for_rewind(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    for seq in range(6):
        store.append_message(sid, "executor", seq, UserMessage(f"m{seq}"))
    store.append_message(sid, "planner", 0, UserMessage("p"))
    assert store.truncate_messages(sid, "executor", 2) == 4
    assert store.load_messages(sid, "executor") == [UserMessage("m0"), UserMessage("m1")]
    # the removed messages leave the live session but stay in the store
    archived = store.load_archived(sid, "executor")
    assert archived == [("rewind", UserMessage(f"m{i}")) for i in range(2, 6)]
    assert store.export_json(sid)["archived_messages"]["executor"][0]["content"] == "m2"
    store.append_message(sid, "executor", 2, UserMessage("new"))  # history may be rewritten now
    assert store.load_messages(sid, "executor")[-1] == UserMessage("new")
    assert store.load_messages(sid, "planner") == [UserMessage("p")]


def test_unknown_session_is_an_error(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError, match="does not exist"):
        store.append_message("nope", "executor", 0, UserMessage("x"))
    with pytest.raises(SessionStoreError, match="no session"):
        store.set_title("nope", "x")
    assert store.get_session("nope") is None


def test_session_ids_sort_by_time_and_latest_is_per_workspace(
    store: SessionStore, tmp_path: Path
) -> None:
    ws_a = tmp_path / "a"
    ws_b = tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    first = store.create_session(ws_a)
    second = store.create_session(ws_a)
    other = store.create_session(ws_b)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", first)
    # A session in which no turn ran is never the latest, nor listed (unless asked for).
    assert store.latest_session(ws_a) is None
    assert store.list_sessions(ws_a) == []
    assert [s.id for s in store.list_sessions(ws_a, include=[second])] == [second]
    store.append_message(first, "executor", 0, UserMessage("first turn"))
    store.append_message(second, "executor", 0, UserMessage("second turn"))
    store.append_message(other, "executor", 0, UserMessage("other turn"))
    empty = store.create_session(ws_a)
    assert store.latest_session(ws_a) == second
    assert store.latest_session(ws_b) == other
    assert store.latest_session(tmp_path / "c") is None
    # Activity, not creation, decides which is latest.
    store.append_message(first, "executor", 1, UserMessage("resumed"))
    assert store.latest_session(ws_a) == first
    # The same folder spelled differently is the same workspace.
    assert store.latest_session(str(ws_a) + "/./") == first
    assert [s.id for s in store.list_sessions(ws_a)] == [first, second]
    assert [s.id for s in store.list_sessions()] == [first, other, second]
    assert len(store.list_sessions(limit=1)) == 1
    assert store.drop_if_empty(empty) and not store.drop_if_empty(first)
    assert store.get_session(empty) is None and store.get_session(first) is not None


def test_title_status_meta_and_delete(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, meta={"branch": "main"}, planner_model="deepseek-v4-pro")
    store.set_title(sid, "Refactor parser")
    store.set_status(sid, "done")
    info = store.get_session(sid)
    assert info is not None
    assert (info.title, info.status) == ("Refactor parser", "done")
    assert dict(info.meta) == {"branch": "main"}
    assert info.planner_model == "deepseek-v4-pro"
    assert info.workspace == str(tmp_path.resolve())
    store.append_message(sid, "executor", 0, UserMessage("x"))
    assert store.delete_session(sid)
    assert store.get_session(sid) is None
    assert not store.delete_session(sid)


def test_store_sink_records_events_and_usage(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    sink = StoreSink(store, sid)
    sink.emit(TurnStarted(role="controller", turn=1, text="go"))
    sink.emit(TextDeltaEvent(role="executor", text="partial"))
    sink.emit(ReasoningDeltaEvent(role="executor", text="thinking"))
    sink.emit(ToolCallEvent(role="executor", call=ToolCall("c1", "bash", "{}")))
    usage = Usage(1000, 900, 100, 50, 20)
    sink.emit(UsageEvent("executor", UsageSource.EXECUTOR, "deepseek-v4-flash", usage, 0.002))
    sink.emit(UsageEvent("executor", UsageSource.EXECUTOR, "deepseek-v4-flash", usage, 0.002))
    sink.emit(UsageEvent("planner", UsageSource.PLANNER, "deepseek-v4-pro", usage, 0.01))
    events = store.load_events(sid)
    assert [e["kind"] for e in events] == ["turn_started", "tool_call", "usage", "usage", "usage"]
    assert events[1]["call"]["name"] == "bash"
    summary = store.usage_summary(sid)
    assert set(summary) == {"executor", "planner"}
    assert summary["executor"].usage == usage + usage
    assert summary["executor"].requests == 2
    assert summary["executor"].cost == pytest.approx(0.004)
    assert summary["planner"].usage == usage


def test_export_json_and_markdown(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, title="Export me", executor_model="deepseek-v4-flash")
    messages = all_kinds()
    messages[3] = ToolMessage("call_1", "has ``` fences inside", name="read_file")
    for seq, message in enumerate(messages):
        store.append_message(sid, "executor", seq, message)
    store.append_message(sid, "planner", 0, UserMessage("Plan the fix"))
    store.record_usage(sid, UsageSource.PLANNER, "deepseek-v4-pro", Usage(10, 0, 10, 5, 0), 0.5)
    store.record_event(sid, TurnStarted(role="controller", turn=1, text="go"))

    data = store.export_json(sid)
    assert json.loads(json.dumps(data)) == data  # plain JSON
    assert data["session"]["title"] == "Export me"
    assert list(data["messages"]) == ["executor", "planner"]
    assert data["messages"]["executor"] == [message_to_dict(m) for m in messages]
    assert data["usage"]["planner"]["cost"] == 0.5
    assert data["events"][0]["kind"] == "turn_started"

    md = store.export_markdown(sid)
    assert md.startswith("# Export me\n")
    assert "## Executor" in md and "## Planner" in md
    assert md.index("## Executor") < md.index("## Planner")
    assert "**tool call** `read_file` (`call_1`)" in md
    assert "### tool error `bash` (`call_2`)" in md
    assert "Need to read the file first." in md
    assert "````\nhas ``` fences inside\n````" in md  # a longer fence keeps content intact
    assert "$0.5000" in md
    with pytest.raises(SessionStoreError):
        store.export_json("missing")


_WRITER = textwrap.dedent(
    """
    import sys
    from reasonix.store import SessionStore
    from reasonix.messages import AssistantMessage, ToolCall, UserMessage
    store = SessionStore(sys.argv[1])
    sid = sys.argv[2]
    seq = 0
    while True:
        if seq % 2:
            msg = AssistantMessage("x" * 500, "r" * 300, (ToolCall(f"c{seq}", "bash", "{}"),))
        else:
            msg = UserMessage(f"message {seq} " + "y" * 800)
        store.append_message(sid, "executor", seq, msg)
        print(seq, flush=True)
        seq += 1
    """
)


def expected_writer_message(seq: int) -> Message:
    if seq % 2:
        return AssistantMessage("x" * 500, "r" * 300, (ToolCall(f"c{seq}", "bash", "{}"),))
    return UserMessage(f"message {seq} " + "y" * 800)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL semantics are POSIX")
def test_killed_writer_loses_nothing_it_reported(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SessionStore(db) as setup:
        sid = setup.create_session(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db), sid],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    reported: list[int] = []
    try:
        for line in proc.stdout:
            reported.append(int(line))
            if len(reported) >= 200:
                break
    finally:
        proc.kill()  # SIGKILL: no cleanup, no atexit, likely mid-transaction
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -9
    # Lines the child printed after we stopped reading are also committed.
    with SessionStore(db) as after:
        assert after.integrity_check()
        stored = after.load_messages(sid, "executor")
        assert len(stored) >= len(reported)
        for seq in range(len(stored)):  # contiguous, and each one is exactly what was written
            assert stored[seq] == expected_writer_message(seq)
        # A resumed writer re-appending what it had is harmless.
        after.append_message(sid, "executor", 0, stored[0])
        assert after.message_count(sid, "executor") == len(stored)


def test_corrupt_database_says_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    db.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(SessionStoreError, match="move it aside"):
        SessionStore(db)


def test_unwritable_folder_says_what_to_do(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SessionStoreError, match="REASONIX_DATA_DIR"):
        SessionStore(blocker / "sub" / "sessions.db")


def test_locked_database_says_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SessionStore(db) as setup:
        sid = setup.create_session(tmp_path)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with (
            SessionStore(db, timeout=0.01) as store,
            pytest.raises(SessionStoreError, match="lock"),
        ):
            store.append_message(sid, "executor", 0, UserMessage("x"))
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def test_closed_store_and_default_path(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.close()
    store.close()
    with pytest.raises(SessionStoreError, match="closed"):
        store.list_sessions()
    assert default_store_path({"REASONIX_DATA_DIR": str(tmp_path)}) == tmp_path / "sessions.db"
    assert default_store_path({}).name == "sessions.db"


def test_wal_mode_and_newer_schema_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.execute("PRAGMA user_version = 99")
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(SessionStoreError, match="newer reasonix"):
        SessionStore(db)


def test_export_keeps_archived_messages_of_a_fully_rewound_agent(
    store: SessionStore, tmp_path: Path
) -> None:
    sid = store.create_session(tmp_path)
    for seq, m in enumerate([SystemMessage("sys"), UserMessage("plan it"), AssistantMessage("ok")]):
        store.append_message(sid, "planner", seq, m)
    store.append_message(sid, "executor", 0, SystemMessage("sys"))
    store.append_message(sid, "executor", 1, UserMessage("compacted question"))
    store.truncate_messages(sid, "planner", 0, reason="rewind")
    store.truncate_messages(sid, "executor", 1, reason="compaction")

    data = store.export_json(sid)
    assert [m["content"] for m in data["archived_messages"]["planner"]] == [
        "sys",
        "plan it",
        "ok",
    ]
    assert data["archived_messages"]["executor"][0]["reason"] == "compaction"

    md = store.export_markdown(sid)
    assert "compacted question" in md
    assert "plan it" in md
    assert "### user (archived: compaction)" in md
    assert "### assistant (archived: rewind)" in md


def test_undecodable_workspace_path_and_title(store: SessionStore, tmp_path: Path) -> None:
    folder = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9"))
    os.mkdir(folder)
    sid = store.create_session(folder, title="t\udce9")
    store.set_title(sid, "caf\udce9 bug")
    info = store.get_session(sid)
    assert info is not None and info.title == "caf\\xe9 bug"
    store.append_message(sid, "executor", 0, UserMessage("a turn"))
    assert store.latest_session(folder) == sid
    assert [s.id for s in store.list_sessions(folder)] == [sid]


def test_claims_are_exclusive_across_stores_and_released(tmp_path: Path) -> None:
    db = tmp_path / "data" / "sessions.db"
    with SessionStore(db) as a, SessionStore(db) as b:
        older = a.create_session(tmp_path)
        newer = a.create_session(tmp_path)
        for i, sid in enumerate((older, newer)):
            a.append_message(sid, "executor", 0, UserMessage(f"turn {i}"))
        assert a.claim(newer) and a.claim(newer)  # idempotent for its holder
        assert not b.claim(newer)
        assert b.in_use(newer) and not a.in_use(newer)
        assert b.latest_session(tmp_path) == older
        assert a.latest_session(tmp_path) == newer
        a.release(newer)
        assert b.claim(newer)
        b.close()  # closing releases every claim
        assert a.claim(newer)
        with pytest.raises(SessionStoreError, match="not a session id"):
            a.claim("../escape")
