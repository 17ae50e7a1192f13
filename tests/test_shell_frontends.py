"""``!command`` in every frontend that has a person typing: the user's own shell command runs
through the session façade (``session.shell``: the bash tool's path, so the permission rules,
hooks, snapshot and sandbox), costs no model request, and its output joins the next message at
its tail. The app's own suite is ``tests/test_habits_app.py``; here an editor over ACP (the
SDK's own client against ``reasonix acp``) and the dashboard (``reasonix serve`` over HTTP, and
in Chromium), each with its approval asked where that frontend asks."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from acp import schema as s

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.browser import WAIT, browser, needs_chromium, open_logged_in
from tests.support.project import Project, project
from tests.support.web import serve

__all__ = ["browser", "project"]

pytestmark = pytest.mark.slow

SHELL_NOTE = "[The user ran a command in the shell."


def last_user_text(project: Project) -> str:
    message = project.ex.requests[-1].messages[-1]
    assert message["role"] == "user"
    content = message["content"]
    assert isinstance(content, str)
    return content


# -- an editor, over ACP ---------------------------------------------------------------------------


async def test_acp_bang_runs_and_its_output_joins_the_next_prompt(project: Project) -> None:
    project.write_user_config('[permissions]\nallow = ["bash(ls*)"]\n')
    (project.root / "listed-marker-71.txt").write_text("x\n")
    project.ex.push(Reply.text("I see the marker file."))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        ran = await conn.prompt(session_id=new.session_id, prompt=text("!ls"))
        said = client.text()
        asked_before = len(project.ex.requests)
        await conn.prompt(session_id=new.session_id, prompt=text("what is in the folder?"))
    assert ran.stop_reason == "end_turn"
    assert "$ ls" in said and "listed-marker-71.txt" in said
    assert "joins your next message" in said
    assert asked_before == 0 and project.pl.requests == []  # the command was no request
    assert client.permission_calls == []  # an allow rule covered it
    content = last_user_text(project)
    assert content.startswith("what is in the folder?")
    assert SHELL_NOTE in content and content.index("listed-marker-71.txt") > 0


async def test_acp_bang_asks_in_the_editor_and_a_denial_runs_nothing(project: Project) -> None:
    victim = project.root / "victim.txt"
    victim.write_text("keep me\n")
    project.ex.push(Reply.text("Nothing to add."))
    client = EditorClient(answers=["deny", "allow_once"])
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=text("!rm victim.txt"))
        kept = victim.exists()
        await conn.prompt(session_id=new.session_id, prompt=text("!rm victim.txt"))
        await conn.prompt(session_id=new.session_id, prompt=text("done?"))
    assert kept  # the editor said no: nothing ran
    assert not victim.exists()
    assert len(client.permission_calls) == 2
    assert "rm victim.txt" in str(client.permission_calls[0].title)
    assert "Permission denied for bash" in client.text()
    assert len(project.ex.requests) == 1  # only "done?" reached the model
    content = last_user_text(project)
    assert content.count("$ rm victim.txt") == 1  # the refused one left nothing behind


async def test_acp_cancel_stops_a_running_bang_and_nothing_joins(project: Project) -> None:
    project.write_user_config('[permissions]\nallow = ["bash(sleep*)"]\n')
    project.ex.push(Reply.text("Nothing ran."))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        sid = new.session_id
        running = asyncio.create_task(conn.prompt(session_id=sid, prompt=text("!sleep 60")))
        await asyncio.sleep(3)  # let it start (the answer below does not depend on how long)
        await conn.cancel(session_id=sid)
        stopped = await asyncio.wait_for(running, 50)
        await conn.prompt(session_id=sid, prompt=text("anything?"))
    assert stopped.stop_reason == "cancelled"
    assert "Stopped; nothing joins the next message." in client.text()
    assert len(project.ex.requests) == 1
    assert SHELL_NOTE not in last_user_text(project)


async def test_acp_a_prompt_without_the_bang_is_a_task(project: Project) -> None:
    """The control: the same words without ``!`` go to the model as a task."""
    project.ex.push(Reply.text("A task, then."))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=text("ls"))
    assert len(project.ex.requests) == 1 and "A task, then." in client.text()
    assert SHELL_NOTE not in json.dumps(project.ex.requests[0].messages)
    assert not any(isinstance(u, s.ToolCallStart) for u in client.updates)


# -- the dashboard, over HTTP and in Chromium ------------------------------------------------------


def _events_until(
    c: httpx.Client, sid: str, done: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The session's events up to the first for which ``done`` is true (within a minute)."""
    seen: list[dict[str, Any]] = []
    end = time.monotonic() + 60
    with c.stream("GET", f"/api/sessions/{sid}/events") as stream:
        for line in stream.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[len("data: ") :]))
                if done(seen[-1]):
                    return seen
            if time.monotonic() > end:
                break
    raise AssertionError(f"no such event in {[e.get('kind') for e in seen]}")


def test_web_bang_asks_on_the_page_and_its_output_reaches_every_tab(project: Project) -> None:
    victim = project.root / "victim.txt"
    victim.write_text("keep me\n")
    project.ex.push(Reply.text("Hello."), Reply.text("Nothing to add."))
    with serve(project) as served:
        c = httpx.Client(base_url=served.base, timeout=60, headers={"Origin": served.base})
        csrf = c.post("/api/auth", json={"token": served.token}).json()["csrf"]
        h = {"X-CSRF-Token": csrf}
        sid = c.post("/api/sessions", json={"text": "hi"}, headers=h).json()["id"]
        _events_until(c, sid, lambda e: e.get("kind") == "turn_outcome")
        asked_before = len(project.ex.requests)
        r = c.post(f"/api/sessions/{sid}/messages", json={"text": "!rm victim.txt"}, headers=h)
        assert r.status_code == 200 and r.json() == {"shell": "rm victim.txt"}, r.text
        asked = _events_until(c, sid, lambda e: e.get("kind") == "approval_requested")[-1]
        assert victim.exists()  # nothing before the answer
        answer = {"choice": "allow_once", "reason": ""}
        r = c.post(f"/api/sessions/{sid}/approvals/{asked['id']}", json=answer, headers=h)
        assert r.status_code == 200, r.text
        ran = _events_until(c, sid, lambda e: e.get("kind") == "user_shell")[-1]
        assert ran["command"] == "rm victim.txt" and ran["queued"] and not ran["refused"]
        assert not victim.exists()
        assert len(project.ex.requests) == asked_before  # no request of its own
        r = c.post(f"/api/sessions/{sid}/messages", json={"text": "done?"}, headers=h)
        assert r.status_code == 200, r.text
        events = _events_until(c, sid, lambda e: e.get("kind") == "turn_outcome" and e["turn"] > 1)
        c.close()
    assert events
    content = last_user_text(project)
    assert content.startswith("done?") and "$ rm victim.txt" in content


def test_web_interrupt_stops_a_running_bang(project: Project) -> None:
    project.write_user_config('[permissions]\nallow = ["bash(sleep*)"]\n')
    project.ex.push(Reply.text("Hello."))
    with serve(project) as served:
        c = httpx.Client(base_url=served.base, timeout=60, headers={"Origin": served.base})
        csrf = c.post("/api/auth", json={"token": served.token}).json()["csrf"]
        h = {"X-CSRF-Token": csrf}
        sid = c.post("/api/sessions", json={"text": "hi"}, headers=h).json()["id"]
        _events_until(c, sid, lambda e: e.get("kind") == "turn_outcome")
        r = c.post(f"/api/sessions/{sid}/messages", json={"text": "!sleep 60"}, headers=h)
        assert r.status_code == 200, r.text
        busy = c.post(f"/api/sessions/{sid}/messages", json={"text": "a task"}, headers=h)
        time.sleep(2)  # let it start (the answer below does not depend on how long)
        stopped = c.post(f"/api/sessions/{sid}/interrupt", headers=h).json()
        ran = _events_until(c, sid, lambda e: e.get("kind") == "user_shell")[-1]
        c.close()
    assert busy.status_code == 409 and "a shell command is running" in busy.json()["error"]
    assert stopped == {"interrupted": True}
    assert ran["interrupted"] and not ran["queued"]
    assert len(project.ex.requests) == 1


def test_web_an_empty_bang_is_refused_with_what_to_type(project: Project) -> None:
    project.ex.push(Reply.text("Hello."))
    with serve(project) as served:
        c = httpx.Client(base_url=served.base, timeout=60, headers={"Origin": served.base})
        csrf = c.post("/api/auth", json={"token": served.token}).json()["csrf"]
        h = {"X-CSRF-Token": csrf}
        sid = c.post("/api/sessions", json={"text": "hi"}, headers=h).json()["id"]
        _events_until(c, sid, lambda e: e.get("kind") == "turn_outcome")
        r = c.post(f"/api/sessions/{sid}/messages", json={"text": "!  "}, headers=h)
        c.close()
    assert r.status_code == 400 and "type a command after !" in r.json()["error"], r.text
    assert len(project.ex.requests) == 1


@needs_chromium
def test_web_bang_typed_in_the_page_shows_its_output(project: Project, browser: Any) -> None:
    project.write_user_config('[permissions]\nallow = ["bash(ls*)"]\n')
    (project.root / "listed-marker-71.txt").write_text("x\n")
    project.ex.push(Reply.text("Hello."), Reply.text("I see the marker file."))
    with serve(project) as served:
        context, page = open_logged_in(browser, served, {"width": 1280, "height": 800})
        page.fill(".new-session textarea", "hi")
        page.click("button:text-is('New session')")
        page.wait_for_selector(".note.ok-note:has-text('Turn 1 ended')", timeout=WAIT)
        page.fill("#message", "!ls")
        page.click("button:text-is('Send')")
        shell = page.locator(".msg.shell")
        shell.wait_for(timeout=WAIT)
        assert "$ ls" in shell.inner_text() and "listed-marker-71.txt" in shell.inner_text()
        page.wait_for_selector(".note:has-text('joins your next message')", timeout=WAIT)
        assert len(project.ex.requests) == 1
        page.fill("#message", "what is in the folder?")
        page.click("button:text-is('Send')")
        page.wait_for_selector(".note.ok-note:has-text('Turn 2 ended')", timeout=WAIT)
        context.close()
    content = last_user_text(project)
    assert content.startswith("what is in the folder?") and SHELL_NOTE in content
