"""Issue 28, headless events: ``reasonix run --output-format stream-json`` starts with an
``init`` line, stamps every line with ``ts``, and ``--input-format stream-json`` runs the user
messages on stdin as consecutive turns of one session. Through the real CLI process against
the fake DeepSeek server."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from reasonix.app.environment import without_environment
from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def _utc(ts: str) -> datetime:
    """A ``ts`` value: ISO 8601 UTC with milliseconds, ending in Z."""
    assert ts.endswith("Z") and len(ts.split(".")[-1]) == 4, ts
    when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    assert when.utcoffset() is not None and when.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    return when


def test_first_line_is_init_with_session_models_tools_mode_and_folder(project: Project) -> None:
    project.ex.push(Reply.text("hi"))
    proc = project.run("run", "--output-format", "stream-json", "say hi")
    assert proc.returncode == 0, proc.stderr
    init, *rest = json_lines(proc.stdout)
    assert init["kind"] == "init"
    result = rest[-1]
    assert result["type"] == "result"
    assert init["session_id"] == result["session_id"]
    assert init["models"]["executor"] == project.ex.requests[0].body["model"]
    sent_tools = {t["function"]["name"] for t in project.ex.requests[0].body["tools"]}
    assert set(init["tools"]) - set(init["deferred_tools"]) == sent_tools
    assert set(init["deferred_tools"]) <= set(init["tools"])
    assert "read_file" in init["tools"]
    assert init["permission_mode"] == "ask"
    assert init["cwd"] == str(project.root)
    assert [e for e in rest if e.get("kind") == "init"] == []


def test_every_line_carries_a_utc_timestamp_in_order(project: Project) -> None:
    project.ex.push(
        Reply.call("read_file", {"path": "a.txt"}),
        Reply.text("done", reasoning="hm"),
    )
    (project.root / "a.txt").write_text("x\n")
    proc = project.run("run", "--output-format", "stream-json", "read a.txt")
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert len(lines) > 5
    stamps = [_utc(line["ts"]) for line in lines]
    assert stamps == sorted(stamps)
    assert {line.get("kind") for line in lines} >= {"init", "tool_call", "tool_result"}


def test_stdin_messages_run_as_turns_of_one_session(project: Project) -> None:
    project.ex.push(Reply.text("first answer"), Reply.text("second answer"))
    stdin = (
        json.dumps({"type": "user", "message": {"content": "first question"}})
        + "\n\n"
        + json.dumps({"text": "second question"})
        + "\n"
    )
    proc = project.run(
        "run", "--input-format", "stream-json", "--output-format", "stream-json", stdin=stdin
    )
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[0]["kind"] == "init"
    results = [line for line in lines if line.get("type") == "result"]
    assert [r["result"] for r in results] == ["first answer", "second answer"]
    assert results[0]["session_id"] == results[1]["session_id"] == lines[0]["session_id"]
    assert lines[-1] is results[1]
    # Each turn's events come before its result.
    first_end = lines.index(results[0])
    assert any(line.get("kind") == "turn_started" for line in lines[first_end + 1 :])
    # The second request extends the first's messages byte for byte: one cached prefix.
    one, two = project.ex.requests
    assert two.messages[: len(one.messages)] == one.messages
    assert without_environment(one.messages[-1]["content"]).strip() == "first question"
    assert two.messages[len(one.messages)]["role"] == "assistant"
    assert without_environment(two.messages[-1]["content"]).strip() == "second question"
    project.ex.assert_exhausted()


def test_a_line_that_is_no_user_message_is_named(project: Project) -> None:
    project.ex.push(Reply.text("first answer"))
    stdin = json.dumps({"text": "ok"}) + "\n" + '{"type": "user"}\n'
    proc = project.run(
        "run", "--input-format", "stream-json", "--output-format", "stream-json", stdin=stdin
    )
    assert proc.returncode == 2
    assert "stdin line 2" in proc.stderr
    assert [r["result"] for r in json_lines(proc.stdout) if r.get("type") == "result"] == [
        "first answer"
    ]
