"""A session stored by the previous release is repaired once on resume, as a planned, reported
prefix break, and then continues against the strict fake server (thinking on, tools).

``fixtures/previous_release/sessions.db`` was written by reasonix at commit 8acc553 (the release
before the reasoning rule): three ``reasonix run`` turns (a greeting, a ``read_file`` round and a
thank-you) against that release's fake server. Two of its assistant messages were stored with
``reasoning_content: null``, which DeepSeek now refuses when tools are in the request.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonix.store import SessionStore
from reasonix.testing import Reply
from reasonix.testing.fake_server import REASONING_MUST_BE_PASSED
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

FIXTURE = Path(__file__).parent / "fixtures" / "previous_release" / "sessions.db"
SESSION_ID = "20261201-085246-a8db"


def install_fixture(project: Project) -> None:
    project.data.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE, project.data / "sessions.db")


def fixture_messages(tmp_path: Path) -> list[Any]:
    """The executor's messages as the previous release stored them (read from a copy: opening
    the store may write to it)."""
    copy = tmp_path / "fixture-copy.db"
    shutil.copyfile(FIXTURE, copy)
    with SessionStore(copy) as store:
        return list(store.load_messages(SESSION_ID, "executor"))


def resume(project: Project, text: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    proc = project.run(
        "run", "--yes", "--output-format", "stream-json", "--resume", SESSION_ID, text
    )
    lines = json_lines(proc.stdout)
    assert lines, proc.stderr
    *events, result = lines
    assert proc.returncode == 0, (result, proc.stderr)
    return events, result


def test_the_fixture_as_stored_is_refused_by_the_strict_server(
    project: Project, tmp_path: Path
) -> None:
    """The control: the history the previous release would send breaks the rule (400)."""
    stored = fixture_messages(tmp_path)
    messages = [m.to_wire() for m in stored] + [{"role": "user", "content": "one more"}]
    assert any(m["role"] == "assistant" and "reasoning_content" not in m for m in messages)
    tools = [{"type": "function", "function": {"name": "read_file"}}]
    body = {"model": "deepseek-flash", "messages": messages, "tools": tools}
    r = httpx.post(project.ex.base_url + "/chat/completions", json=body, timeout=10)
    assert r.status_code == 400
    assert r.json()["error"]["message"] == REASONING_MUST_BE_PASSED


@pytest.mark.slow
def test_a_previous_release_session_is_repaired_once_on_resume(
    project: Project, tmp_path: Path
) -> None:
    install_fixture(project)
    project.ex.push(Reply.text("Anything else?"), Reply.text("Bye."))
    events, result = resume(project, "one more")
    assert result["result"] == "Anything else?"
    repaired = [e for e in events if e["kind"] == "session_repaired"]
    assert [(e["role"], e["repair"], e["messages"]) for e in repaired] == [
        ("executor", "reasoning_repair", 2)
    ]
    first = project.ex.requests[0]
    assert first.status == 200
    assert first.body["tools"]  # the rule applies: tools are in the request
    assistants = [m for m in first.messages if m["role"] == "assistant"]
    assert all(isinstance(m.get("reasoning_content"), str) for m in assistants)
    # the repair changed only the missing fields: content and order are as stored
    before = fixture_messages(tmp_path)
    assert [m["content"] for m in first.messages[: len(before)]] == [m.content for m in before]

    # once: the store now holds the repaired history, so the next resume repairs nothing and
    # its first request extends the previous one byte for byte
    events, result = resume(project, "bye")
    assert result["result"] == "Bye."
    assert not [e for e in events if e["kind"] == "session_repaired"]
    prev, cur = project.ex.requests[0], project.ex.requests[1]
    assert cur.status == 200
    prev_msgs = [json.dumps(m) for m in prev.messages]
    assert [json.dumps(m) for m in cur.messages[: len(prev_msgs)]] == prev_msgs
    with SessionStore(project.data / "sessions.db") as store:
        kinds = [e["kind"] for e in store.load_events(SESSION_ID)]
    assert kinds.count("session_repaired") == 1  # recorded in the session's history
