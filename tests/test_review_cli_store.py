"""Review findings for the session store: exports keep the whole transcript; paths and titles
with undecodable bytes are storable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reasonix.errors import SessionStoreError
from reasonix.messages import AssistantMessage, SystemMessage, UserMessage
from reasonix.store import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "data" / "sessions.db")


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
    assert store.latest_session(folder) == sid
    assert [s.id for s in store.list_sessions(folder)] == [sid]


def test_claims_are_exclusive_across_stores_and_released(tmp_path: Path) -> None:
    db = tmp_path / "data" / "sessions.db"
    with SessionStore(db) as a, SessionStore(db) as b:
        older = a.create_session(tmp_path)
        newer = a.create_session(tmp_path)
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
