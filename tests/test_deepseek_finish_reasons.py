"""Every finish reason DeepSeek documents, end to end through the real ``reasonix run`` process
against the strict fake server (thinking on, tools in every request):

- ``aborted``: a retryable failure, never a finished turn; the partial output is retracted;
- ``content_filter``: ends the turn with its own stop reason and a clear message;
- ``length`` on a text answer: kept and marked; on tool calls: the calls never run, the model
  is told to work in smaller pieces, in a sequence the server accepts.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]

pytestmark = pytest.mark.slow


def run_json(project: Project, *args: str) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    proc = project.run("run", "--yes", "--output-format", "stream-json", *args)
    lines = json_lines(proc.stdout)
    assert lines, proc.stderr
    *events, result = lines
    return proc.returncode, events, result


def stored_executor(project: Project) -> list[dict[str, Any]]:
    with SessionStore(project.data / "sessions.db") as store:
        sid = store.list_sessions()[0].id
        return [m.to_wire() for m in store.load_messages(sid, "executor")]


def test_aborted_is_retried_and_the_partial_output_retracted(project: Project) -> None:
    project.ex.push(
        Reply(content="Half an ans", reasoning="Thinking", finish_reason="aborted"),
        Reply.text("The whole answer.", reasoning="Thinking again"),
    )
    code, events, result = run_json(project, "answer me")
    assert code == 0, result
    assert result["stop_reason"] == "done"
    assert result["result"] == "The whole answer."
    kinds = [e["kind"] for e in events]
    assert kinds.index("output_retracted") < kinds.index("retry")
    (retracted,) = [e for e in events if e["kind"] == "output_retracted"]
    assert retracted["partial_chars"] == len("Half an ans") + len("Thinking")
    # the aborted attempt reported usage: it is accounted, not dropped
    assert retracted["billed"] is not None
    assert result["usage"]["executor"]["requests"] == 2
    assistants = [m for m in stored_executor(project) if m["role"] == "assistant"]
    assert assistants == [
        {"role": "assistant", "content": "The whole answer.", "reasoning_content": "Thinking again"}
    ]


def test_content_filter_ends_the_turn_with_its_own_stop_reason(project: Project) -> None:
    project.ex.push(Reply(content="I will expl", finish_reason="content_filter"))
    code, events, result = run_json(project, "tell me something filtered")
    assert code == 1
    assert result["stop_reason"] == "content_filter"
    assert "content filter" in result["result"]
    assert any(e["kind"] == "notice" and e["code"] == "content_filter" for e in events)
    # the session goes on: the next turn is accepted by the strict server
    project.ex.push(Reply.text("Something else, then."))
    code, _, result = run_json(project, "-c", "something else")
    assert code == 0, result
    assert project.ex.requests[-1].status == 200
    assert wire_prefix_violations(project.ex.requests) == []


def test_content_filter_in_text_mode_shows_the_partial_text_and_one_notice(
    project: Project,
) -> None:
    project.ex.push(Reply(content="Here is the first part of it", finish_reason="content_filter"))
    proc = project.run("run", "--yes", "tell me something filtered")
    assert proc.returncode == 1
    # the text produced before the filter is shown (it is stored and sent back to the model)
    assert "Here is the first part of it" in proc.stdout
    output = proc.stdout + proc.stderr
    assert output.count("content filter") == 1, output
    assert "content filter" in proc.stderr


def test_length_cut_text_answer_is_kept_and_marked(project: Project) -> None:
    project.ex.push(Reply(content="A long answer that was cu", finish_reason="length"))
    code, events, result = run_json(project, "write a long answer")
    assert result["stop_reason"] == "length"
    assert result["result"] == "A long answer that was cu"
    notices = [e for e in events if e["kind"] == "notice" and e["code"] == "length"]
    assert notices and "max_tokens" in notices[0]["message"]
    assert code == 1  # not a success: the answer is incomplete
    assistants = [m for m in stored_executor(project) if m["role"] == "assistant"]
    assert assistants[-1]["content"] == "A long answer that was cu"


def test_length_cut_tool_calls_never_run(project: Project) -> None:
    cut = Reply.call("write_file", {"path": "big.txt", "content": "x" * 400})
    project.ex.push(
        Reply(tool_calls=cut.tool_calls, reasoning="Write it all", finish_reason="length"),
        Reply.call("write_file", {"path": "big.txt", "content": "x" * 40}, reasoning="Smaller"),
        Reply.text("Wrote big.txt in a smaller piece."),
    )
    code, events, result = run_json(project, "write big.txt")
    assert code == 0, result
    assert result["result"] == "Wrote big.txt in a smaller piece."
    assert (project.root / "big.txt").read_text() == "x" * 40  # only the complete call ran
    tool_calls = [e for e in events if e["kind"] == "tool_call"]
    assert len(tool_calls) == 1
    second = project.ex.requests[1]
    assert second.status == 200
    note = second.messages[-1]
    assert note["role"] == "user" and "smaller pieces" in note["content"]
    assert "write_file" in note["content"]
    assert all(r.status == 200 for r in project.ex.requests)
    assert wire_prefix_violations(project.ex.requests) == []
