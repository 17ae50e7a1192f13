"""What the store keeps of an open session: turn marks that stay true after a restart and across
a compaction (so ``/rewind`` cuts the right place), one writer per session, and no MCP server
left running when opening a session fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.agent.compaction import SUMMARY_INSTRUCTION
from reasonix.app import AgentSession
from reasonix.app.environment import without_environment
from reasonix.config import load_config
from reasonix.messages import UserMessage
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Reply
from tests.support.project import project_toml
from tests.support.sessions import ENV, open_session
from tests.support.wire import wire_prefix_violations

#: One role and no approval questions: these tests are about what the store keeps.
EXECUTOR_ONLY_YOLO: dict[str, object] = {"planner.enabled": False, "permissions.mode": "yolo"}


def write(path: str, content: str, answer: str) -> list[Reply]:
    return [Reply.call("write_file", {"path": path, "content": content}), Reply.text(answer)]


async def test_rewound_turns_stay_rewound_after_a_restart(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer]
) -> None:
    ex, _ = servers
    store = SessionStore(tmp_path / "data" / "sessions.db")
    rt = await open_session(tmp_path, servers, store, EXECUTOR_ONLY_YOLO)
    try:
        for i in (1, 2, 3):
            ex.push(*write(f"f{i}.txt", f"{i}\n", f"wrote {i}"))
            await rt.run_turn(f"write file {i}")
        rt.history.rewind(2)  # undoes turns 2 and 3
        assert [m.turn for m in rt.history.marks] == [1]
        ex.push(Reply.text("just talking"))
        await rt.run_turn("a question")  # the new turn 2
        sid = rt.session_id
    finally:
        await rt.aclose()

    rt = await open_session(tmp_path, servers, store, EXECUTOR_ONLY_YOLO, continue_last=True)
    try:
        assert rt.session_id == sid
        # The rewound turns 2 and 3 are gone for good.
        assert [(m.turn, m.text) for m in rt.history.marks] == [
            (1, "write file 1"),
            (2, "a question"),
        ]
        assert rt.history.rewind(3).startswith("No turn 3")
        assert "a question" in rt.history.rewind()
        assert (tmp_path / "f1.txt").exists()
        ex.push(Reply.text("fine"))
        outcome = await rt.run_turn("after the rewind")
        assert outcome.result.text == "fine"
    finally:
        await rt.aclose()
        store.close()


async def test_rewind_across_a_compaction(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer]
) -> None:
    ex, _ = servers
    store = SessionStore(tmp_path / "data" / "sessions.db")
    script: list[Reply] = []
    for i in range(1, 7):
        script += write(f"f{i}.txt", f"{i}\n" + "x" * 400, f"wrote file {i} " + "words " * 40)

    def answer(request: object) -> Reply:
        if request.messages[-1].get("content") == SUMMARY_INSTRUCTION:  # type: ignore[attr-defined]
            return Reply.text("Summary: six files were written.")
        return script.pop(0)

    ex.handler = answer
    rt = await open_session(tmp_path, servers, store, EXECUTOR_ONLY_YOLO)
    try:
        for i in range(1, 7):
            await rt.run_turn(f"write file {i} " + "padding " * 40)
        assert (await rt.compact()).startswith("Compacted")
        session = rt.controller.executor.session
        # Turn 5 was kept verbatim: rewinding it cuts at its own user message.
        mark5 = next(m for m in rt.history.marks if m.turn == 5)
        assert session.snapshot()[mark5.executor_len] == UserMessage(
            "write file 5 " + "padding " * 40
        )
        # Turn 2 lives only in the summary now: refused, nothing changed.
        before = session.snapshot()
        text = rt.history.rewind(2)
        assert "compact" in text
        assert session.snapshot() == before
        assert (tmp_path / "f2.txt").exists()
        sid = rt.session_id
    finally:
        await rt.aclose()

    rt = await open_session(tmp_path, servers, store, EXECUTOR_ONLY_YOLO, resume_id=sid)
    try:
        assert "compact" in rt.history.rewind(2)
        text = rt.history.rewind(5)
        assert "turn 5" in text
        assert not (tmp_path / "f5.txt").exists() and not (tmp_path / "f6.txt").exists()
        assert (tmp_path / "f4.txt").exists()
        live = rt.controller.executor.session.snapshot()
        assert store.load_messages(sid, "executor") == list(live)
        last_sent = len(ex.requests)
        script.append(Reply.text("back at turn 5"))
        outcome = await rt.run_turn("what now?")
        assert outcome.result.ok, outcome.result.text
        assert ex.requests[last_sent].status == 200
        assert wire_prefix_violations([ex.requests[last_sent]]) == []
    finally:
        await rt.aclose()
        store.close()


def test_remap_marks_keeps_positions_a_rollback_did_not_touch() -> None:
    from reasonix.app.persistence import TurnMark, remap_marks
    from reasonix.messages import AssistantMessage, SystemMessage

    old = (SystemMessage("s"), UserMessage("a"), AssistantMessage("b"), UserMessage("c"))
    marks = [TurnMark(1, 0, 0, 0), TurnMark(2, 0, 3, 1)]
    assert remap_marks(marks, "planner", (*old, AssistantMessage("d")), old) == marks
    assert remap_marks(marks, "planner", old, old[:2]) == [marks[0], TurnMark(2, 0, -1, 1)]


async def test_two_processes_never_share_a_session(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer]
) -> None:
    # Two stores on one database file stand for two reasonix processes in the same folder.
    from reasonix.errors import SessionStoreError

    ex, _ = servers
    db = tmp_path / "data" / "sessions.db"
    store_a, store_b = SessionStore(db), SessionStore(db)
    a = await open_session(tmp_path, servers, store_a, EXECUTOR_ONLY_YOLO)
    try:
        ex.push(Reply.text("A answers"))
        await a.run_turn("question in A")
        # `-c` in the second process must not pick the session the first one is writing to:
        # both would append at the same positions and overwrite each other's history.
        b = await open_session(tmp_path, servers, store_b, EXECUTOR_ONLY_YOLO, continue_last=True)
        try:
            assert b.session_id != a.session_id
            with pytest.raises(SessionStoreError, match="open in another reasonix"):
                await b.history.resume(a.session_id)
            ex.push(Reply.text("B answers"))
            await b.run_turn("question in B")
        finally:
            await b.aclose()
        with pytest.raises(SessionStoreError, match="open in another reasonix"):
            await open_session(
                tmp_path, servers, store_b, EXECUTOR_ONLY_YOLO, resume_id=a.session_id
            )
        ex.push(Reply.text("A again"))
        await a.run_turn("more in A")
        a_id = a.session_id
    finally:
        await a.aclose()
    # Once A has closed, its session is free to continue.
    b = await open_session(tmp_path, servers, store_b, EXECUTOR_ONLY_YOLO, continue_last=True)
    try:
        assert b.session_id == a_id
        stored = store_b.load_messages(a_id, "executor")
        assert [without_environment(m.content) for m in stored if isinstance(m, UserMessage)] == [
            "question in A",
            "more in A",
        ]
    finally:
        await b.aclose()
        store_a.close()
        store_b.close()


@pytest.mark.slow
async def test_a_refused_resume_stops_the_mcp_servers_it_started(
    tmp_path: Path, servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer]
) -> None:
    import os
    import sys

    from reasonix.errors import SessionStoreError

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    time_server = str(Path(sys.executable).parent / "mcp-server-time")
    extra = f'\n[[mcp.servers]]\nname = "clock"\ncommand = "{time_server}"\n'
    (tmp_path / "reasonix.toml").write_text(project_toml(*servers, extra=extra))
    config = load_config(tmp_path, environ=ENV, user_config=tmp_path / "no-user.toml")

    def mcp_children() -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and b"mcp-server-time" in cmd and " Z " not in stat:
                found.append(pid)
        return found

    store = SessionStore(tmp_path / "data" / "sessions.db")
    with store, pytest.raises(SessionStoreError, match="no session"):
        await AgentSession.open(
            config, tmp_path, store=store, environ=ENV, resume_id="20200101-000000-dead"
        )
    assert mcp_children() == []
