"""``/context`` (``session.usage.context_report``): what fills each role's window — the system
prompt, the tool schemas, the conversation by kind — estimated against the very bytes the
last request sent, with its share of the window and the measured prompt size; the planner's
window and the subagents' beside it."""

from __future__ import annotations

import json
from pathlib import Path

from reasonix.app.commands import answer
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.sessions import Servers, open_session


async def test_context_splits_each_roles_window_by_part(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    (tmp_path / "notes.txt").write_text(("x" * 70 + "\n") * 60)
    ex.push(Reply.call("read_file", {"path": "notes.txt"}), Reply.text("A file of x."))
    session = await open_session(tmp_path, servers, store)
    try:
        empty = {r.role: r for r in session.usage.context_report()}
        await session.run_turn("what is in notes.txt?")
        report = {r.role: r for r in session.usage.context_report()}
        reply = await answer(session, "/context", "web")
    finally:
        await session.aclose()
    # before any turn: the fixed prefix only
    assert [p.name for p in empty["executor"].parts] == ["system prompt", "tool schemas"]
    executor = report["executor"]
    parts = {p.name: p for p in executor.parts}
    assert list(parts) == [
        "system prompt",
        "tool schemas",
        "user messages",
        "assistant text",
        "reasoning",
        "tool calls",
        "tool results",
    ]
    # the reasoning counted is the reasoning the wire carries back
    assert any(m.get("reasoning_content") for m in ex.requests[-1].body["messages"])
    sent = ex.requests[-1].body
    # the estimates are of the bytes sent: system prompt and schemas as the wire has them
    system = sent["messages"][0]
    assert system["role"] == "system"
    assert abs(parts["system prompt"].tokens - len(system["content"]) / 4) <= 1
    assert parts["tool schemas"].count == len(sent["tools"])
    wire_tools = len(json.dumps(sent["tools"], separators=(",", ":"), ensure_ascii=False))
    assert abs(parts["tool schemas"].tokens - wire_tools / 4) <= wire_tools * 0.02
    results = sum(len(m["content"]) for m in sent["messages"] if m["role"] == "tool")
    assert results > 2000 and abs(parts["tool results"].tokens - results / 4) <= 1
    assert executor.tokens == sum(p.tokens for p in executor.parts)
    assert executor.window == 1_048_576 and 0 < executor.share(executor.tokens) < 0.01
    assert executor.measured is not None and executor.measured > 0
    planner = report["planner"]
    assert [p.name for p in planner.parts] == ["system prompt", "tool schemas"]
    text = reply.text
    assert not reply.error
    assert "executor (deepseek-flash, window 1,048,576 tokens): about" in text
    assert "the last request measured" in text
    assert "tool results (1)" in text and "planner (deepseek-v4-pro" in text
    assert "subagents (task): each runs in a window of its own" in text
