"""``/init``: the model studies the repository and writes ``AGENTS.md`` through the normal edit
approval (the user sees the file, or for an update the diff, and may decline); an existing
``AGENTS.md`` is refused unless the user asks for ``/init update``. Through the façade, and in
the real app on a terminal (the approval on screen)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reasonix.app.commands import answer
from reasonix.safety.permissions import ApprovalAnswer
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.approvals import ScriptedApprover
from tests.support.project import Project, project
from tests.support.sessions import Servers, open_session
from tests.support.tui import Terminal

__all__ = ["project"]

AGENTS = "# AGENTS.md\n\nRun the tests with `pytest -q`.\n"


@pytest.mark.slow
async def test_init_asks_the_model_and_the_write_is_approved(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    ex.push(
        Reply.call("read_file", {"path": "pyproject.toml"}),
        Reply.call("write_file", {"path": "AGENTS.md", "content": AGENTS}),
        Reply.text("Wrote AGENTS.md."),
    )
    approver = ScriptedApprover(ApprovalAnswer.allow_once())
    session = await open_session(tmp_path, servers, store, approver=approver)
    try:
        reply = await answer(session, "/init", "app")
        # the closing words come with the turn's outcome (the core's), not for a frontend to ask
        assert reply.turn is not None and reply.then is None and not reply.text
        outcome = await reply.turn(session).result()
        then = outcome.closing
    finally:
        await session.aclose()
    assert outcome.result.text == "Wrote AGENTS.md."
    (asked,) = approver.requests  # the read was not asked about; the write was
    assert asked.tool == "write_file" and asked.arguments["path"] == "AGENTS.md"
    assert (tmp_path / "AGENTS.md").read_text() == AGENTS
    assert then == f"AGENTS.md written: {tmp_path / 'AGENTS.md'}"
    # a user turn like any other: the request to study the repository, never the command line
    first = ex.requests[0].messages
    assert first[-1]["role"] == "user" and "Study this repository" in first[-1]["content"]
    assert not any(str(m.get("content", "")).startswith("/init") for m in first)


@pytest.mark.slow
async def test_an_existing_agents_md_is_refused_unless_asked_to_update(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    (tmp_path / "AGENTS.md").write_text(AGENTS)
    edit = {"path": "AGENTS.md", "old_string": "`pytest -q`", "new_string": "`make test`"}
    ex.push(Reply.call("edit_file", edit), Reply.text("Proposed one change."))
    approver = ScriptedApprover(ApprovalAnswer.deny("keep it"))
    session = await open_session(tmp_path, servers, store, approver=approver)
    try:
        refused = await answer(session, "/init", "run")
        asked_before = len(ex.requests)
        update = await answer(session, "/init update", "run")
        assert update.turn is not None and update.then is None
        then = (await update.turn(session).result()).closing
        wrong = await answer(session, "/init everything", "run")
    finally:
        await session.aclose()
    assert refused.error and refused.turn is None and asked_before == 0
    assert "AGENTS.md exists; nothing was changed. /init update" in refused.text
    (asked,) = approver.requests
    assert asked.tool == "edit_file" and "-Run the tests with `pytest -q`." in asked.preview
    assert "AGENTS.md already exists: read it first" in ex.requests[0].messages[-1]["content"]
    assert (tmp_path / "AGENTS.md").read_text() == AGENTS  # declined: unchanged
    assert then == "AGENTS.md was not changed."
    assert wrong.error and wrong.text == "Usage: /init [update]"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_init_in_the_app_shows_the_new_file_for_approval(project: Project) -> None:
    project.ex.push(
        Reply.call("write_file", {"path": "AGENTS.md", "content": AGENTS}),
        Reply.text("Wrote AGENTS.md for you."),
    )
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("/init")
        screen = term.wait(r"Allow\? \[y/a/n\]")
        assert "Creates AGENTS.md" in screen and "Run the tests with `pytest -q`." in screen
        assert not (project.root / "AGENTS.md").exists()  # nothing before the answer
        term.sendline("y")
        term.wait("AGENTS.md written: ")
    finally:
        term.close()
    assert (project.root / "AGENTS.md").read_text() == AGENTS
