"""The one command table (``reasonix.app.commands``) reaches every frontend: each command the
table offers a frontend works there, through that frontend's real transport — ``reasonix run``
(a subprocess), a batch task's text, an editor over ACP (the SDK's own client), the dashboard
over HTTP, and the interactive app on a terminal. A command never reaches the model as text.

Every row of the table needs a sample below: a new command is tested everywhere it is offered.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import httpx
import pytest
from acp import schema as s

from reasonix.app.commands import COMMANDS, listing
from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.cli import cli_env, run_cli
from tests.support.project import Project, project, project_toml
from tests.support.web import serve

__all__ = ["project"]

#: name -> (argument, what its answer says). ``plan`` runs a planned turn (see ``_script``).
SAMPLES: dict[str, tuple[str, str]] = {
    "help": ("", "/rewind [TURN]"),
    "plan": ("say hi", "Hi from the plan."),
    "approve": ("", "No plan is waiting"),
    "init": ("", "Looked at the repository."),
    "mode": ("", "Permission mode: ask"),
    "model": ("", "executor: deepseek-flash"),
    "cost": ("", "hit%"),
    "context": ("", "tool schemas ("),
    "status": ("", "memory files read"),
    "permissions": ("", "Always ask:"),
    "todo": ("", "The todo list is empty."),
    "goal": ("status", "No goal."),
    "expand": ("", "No tool results yet."),
    "undo": ("", "Nothing to undo"),
    "rewind": ("", "Nothing to rewind"),
    "turns": ("", "No turns yet."),
    "diff": ("", "No changes"),
    "export": ("", "Exported the transcript to"),
    "compact": ("", "nothing old enough to compact"),
    "clear": ("", "New session"),
    "sessions": ("", "msgs"),
    "resume": ("nope", "no session 'nope'"),
    "config": ("", "api_key = (set)"),
    "reasoning": ("", "No reasoning has been shown yet."),
    "remember": ("use tabs", "Remembered in"),
    "mcp": ("", "No MCP servers"),
    "skills": ("", "No skills"),
    "agents": ("", "Explore (read-only)"),
    "jobs": ("", "No background jobs"),
    "exit": ("", ""),
}

#: Commands that start a model turn (scripted in ``_script``).
TURNS = {"plan", "init"}
#: What a turn-starting command says once its turn ended (``Answer.then``).
AFTER = {"init": "AGENTS.md was not changed."}
#: Commands whose answer is an argument error (``reasonix run`` exits 2 for them).
ERRORS = {"approve"}
#: Commands that answer differently the second time (``/export`` refuses to overwrite its
#: file): the argument they get when a test runs them again.
ONCE = {"export": "second.md"}


def names(frontend: Any) -> list[str]:
    return [c.name for c in listing(frontend)]


def test_every_command_has_a_sample() -> None:
    assert set(SAMPLES) == {c.name for c in COMMANDS}


def _script(project: Project, name: str) -> None:
    if name == "plan":
        project.pl.push(
            Reply.call("submit_plan", {"objective": "Say hi", "steps": [{"title": "Say hi"}]})
        )
        # the step signed off with evidence the host saw (a plan's open step keeps a turn going)
        project.ex.push(
            Reply.call("ls", {"path": "."}),
            Reply.call("complete_step", {"step": "1", "evidence": "listed the folder"}),
            Reply.text("Hi from the plan."),
        )
    if name == "init":
        project.ex.push(Reply.text("Looked at the repository."))


def _never_sent_as_text(project: Project, name: str) -> None:
    """The command line did not reach a model as a message."""
    for server in (project.ex, project.pl):
        for request in server.requests:
            for message in request.body["messages"]:
                content = message.get("content")
                lines = content.splitlines() if isinstance(content, str) else []
                assert not any(line.startswith(f"/{name}") for line in lines), (name, content)
    if name == "plan":
        assert project.pl.requests, "/plan did not ask the planner"


# -- reasonix run ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", names("run"))
def test_run(project: Project, name: str) -> None:
    arg, said = SAMPLES[name]
    _script(project, name)
    proc = project.run("run", f"/{name} {arg}".strip())
    assert proc.returncode == (2 if name in ERRORS else 0), proc.stdout + proc.stderr
    assert said in proc.stdout + proc.stderr
    if name in AFTER:  # what the command says once its turn ended
        assert AFTER[name] in proc.stdout, proc.stdout
    _never_sent_as_text(project, name)


@pytest.mark.slow
def test_run_json_of_a_command_answered_without_a_turn(project: Project) -> None:
    proc = project.run("run", "--output-format", "json", "/todo")
    assert proc.returncode == 0, proc.stderr
    (result,) = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert result["command"] == "todo" and result["result"] == "The todo list is empty."
    assert result["exit_code"] == 0 and not project.ex.requests


@pytest.mark.slow
def test_run_continue_reads_the_table(project: Project) -> None:
    project.ex.push(Reply.text("First answer."))
    assert project.run("run", "hello").returncode == 0
    proc = project.run("run", "-c", "/turns")
    assert proc.returncode == 0 and "1  hello" in proc.stdout, proc.stdout + proc.stderr
    proc = project.run("run", "-c", "/rewind")
    assert proc.returncode == 0 and "turn 1" in proc.stdout.lower(), proc.stdout + proc.stderr


# -- batch ----------------------------------------------------------------------------------------


def _batch_rows(project: Project) -> dict[str, dict[str, Any]]:
    """One batch over a task per command the table offers to ``run`` (batch task text is read
    like ``reasonix run``'s)."""
    # Batch copies are folders nobody trusted: the providers come from the user's config.
    project.write_user_config(project_toml(project.ex, project.pl))
    for name in [n for n in names("run") if n in TURNS]:  # the tasks run one by one, in order
        _script(project, name)
    tasks = project.root.parent / "tasks.jsonl"
    lines = [
        {"id": name, "repo": str(project.root), "task": f"/{name} {SAMPLES[name][0]}".strip()}
        for name in names("run")
    ]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = project.root.parent / "out"
    env = cli_env(project.data, project.config_dir)
    proc = run_cli(
        ["batch", str(tasks), "--out", str(out), "--concurrency", "1"],
        cwd=project.root.parent,
        env=env,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {row["id"]: row for row in rows}


@pytest.mark.slow
def test_batch(project: Project) -> None:
    # one batch holds every row (a batch per row cost a Ray-free batch start each, 25 times)
    rows = _batch_rows(project)
    wrong: dict[str, Any] = {}
    for name in names("run"):
        row, said = rows.get(name), SAMPLES[name][1]
        if row is None:
            wrong[name] = "no result row"
        elif name in ERRORS:
            if not (row["error_class"] == "SessionError" and said in row["error"]):
                wrong[name] = row
        else:  # its answer, and what it said once its turn ended
            fine = row["error_class"] is None and said in row["result"]
            if not fine or row.get("closing") != AFTER.get(name):
                wrong[name] = row
    assert wrong == {}
    for name in names("run"):
        _never_sent_as_text(project, name)


# -- ACP, with the SDK's own client ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", names("acp"))
async def test_acp(project: Project, name: str) -> None:
    arg, said = SAMPLES[name]
    _script(project, name)
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=text(f"/{name} {arg}".strip()))
    assert done.stop_reason == "end_turn"
    assert said in client.text()
    if name in AFTER:  # what the command says once its turn ended
        assert AFTER[name] in client.text()
    (offered,) = client.of(s.AvailableCommandsUpdate)
    assert [c.name for c in offered.available_commands] == names("acp")
    _never_sent_as_text(project, name)


# -- the dashboard, over HTTP ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", names("web"))
def test_web(project: Project, name: str) -> None:
    arg, said = SAMPLES[name]
    _script(project, name)
    with serve(project) as served:
        c = httpx.Client(base_url=served.base, timeout=60, headers={"Origin": served.base})
        csrf = c.post("/api/auth", json={"token": served.token}).json()["csrf"]
        h = {"X-CSRF-Token": csrf}
        listed = c.get("/api/commands").json()["commands"]
        assert [x["name"] for x in listed] == names("web")
        sid = c.post("/api/sessions", json={}, headers=h).json()["id"]
        r = c.post(f"/api/sessions/{sid}/commands/{name}", json={"args": arg}, headers=h)
        if name in ERRORS:
            assert r.status_code == 400 and said in r.json()["error"], r.text
        elif name in TURNS:
            assert r.status_code == 200 and "turn" in r.json(), r.text
            _wait(lambda: bool(project.ex.requests))
            if name in AFTER:  # what the command says once its turn ended reaches every tab
                replies = _replies_until(c, sid, AFTER[name])
                assert replies and AFTER[name] in replies[-1], replies
        else:
            assert r.status_code == 200 and said in r.json()["reply"], r.text
        if name not in ERRORS | TURNS:
            # the same through the message box, and every tab sees the reply
            again = ONCE.get(name, arg)
            r = c.post(
                f"/api/sessions/{sid}/messages", json={"text": f"/{name} {again}"}, headers=h
            )
            assert r.status_code == 200 and said in r.json()["reply"], r.text
        c.close()
    _never_sent_as_text(project, name)


def _replies_until(c: httpx.Client, sid: str, text: str) -> list[str]:
    """The dashboard's command replies in a session's event stream, up to one saying ``text``
    (or what came within a minute: the stream's keep-alives keep it open)."""
    import time

    replies: list[str] = []
    end = time.monotonic() + 60
    with c.stream("GET", f"/api/sessions/{sid}/events") as stream:
        for line in stream.iter_lines():
            if time.monotonic() > end:
                break
            if line.startswith("data: "):
                data = json.loads(line[6:])
                if data.get("kind") == "command_reply":
                    replies.append(str(data["text"]))
                    if text in replies[-1]:
                        break
    return replies


def _wait(check: Any, timeout: float = 120) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


# -- the interactive app, on a terminal -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_app(project: Project) -> None:
    from tests.support.tui import Terminal

    term = Terminal(project)
    try:
        term.wait("/help for commands")
        for name in names("app"):
            arg, said = SAMPLES[name]
            if name in ("exit", "clear", "resume", *TURNS):
                continue  # below: they would end or swap the session, or add turns to it
            term.sendline(f"/{name} {arg}".strip())
            term.wait(re.escape(said))
        _script(project, "plan")
        term.sendline("/plan say hi")
        term.wait("Hi from the plan.")
        _script(project, "init")
        term.sendline("/init")
        term.wait("AGENTS.md was not changed.")  # the model only looked
        term.sendline("/clear")
        term.wait("New session")
        term.sendline("/resume nope")
        term.wait("no session 'nope'")
        term.sendline("/exit")
        term.wait(lambda screen: True)
    finally:
        term.close()
    _never_sent_as_text(project, "plan")
    assert not any("/cost" in json.dumps(r.body["messages"]) for r in project.ex.requests)
