"""The ``ask`` tool in ``reasonix run``, through the real CLI against a scripted model on a
FakeDeepSeekServer: a question ends the run with the stop reason ``needs_input`` (exit code 4)
and the questions in the result; ``reasonix run -c "<answer>"`` continues the stored session
with the answer as the open call's tool result (the fake server refuses any request in which a
tool call is not answered before the next message); bad questions go back to the model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project
from tests.support.questions import QUESTIONS

__all__ = ["project"]

pytestmark = pytest.mark.slow


def ask(questions: list[dict[str, Any]] = QUESTIONS) -> Reply:
    return Reply.call("ask", {"questions": questions})


def test_a_question_ends_the_run_and_run_c_delivers_the_answer_as_its_result(
    project: Project,
) -> None:
    project.ex.push(ask())
    proc = project.run("run", "--no-planner", "--output-format", "json", "set up the service")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "needs_input"
    assert result["exit_code"] == 4 and result["is_error"] is False
    assert result["questions"] == QUESTIONS
    assert "Which database should the service use?" in result["result"]
    asked_call = project.ex.requests[0].reply
    assert asked_call is not None
    (call,) = asked_call.tool_calls

    project.ex.push(Reply.text("Using Postgres with metrics."))
    proc = project.run(
        "run", "--no-planner", "--output-format", "json", "-c", "Postgres, and metrics only"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "done" and result["questions"] == []
    assert result["result"] == "Using Postgres with metrics."
    assert result["session_id"] == json_lines(proc.stdout)[0]["session_id"]
    messages = project.ex.requests[1].messages
    # The answer is the open call's result, and nothing else came after the question.
    assert messages[-2]["role"] == "assistant"
    assert [c["id"] for c in messages[-2]["tool_calls"]] == [call.id]
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == call.id
    assert "Postgres, and metrics only" in messages[-1]["content"]
    assert all(r.status == 200 for r in project.ex.requests)
    # The continued session is a pure extension of the first run's: its prefix was cached.
    second = project.ex.requests[1]
    assert second.cache_hit_tokens and second.cache_hit_tokens > 0


def test_text_mode_prints_the_questions_and_how_to_answer(project: Project) -> None:
    project.ex.push(ask())
    proc = project.run("run", "--no-planner", "set up the service")
    assert proc.returncode == 4, proc.stderr
    out = proc.stdout
    assert "[Database] Which database should the service use?" in out
    assert "  2. Postgres: a server, for many writers" in out
    assert "[Extras] Which extras do you want? (pick one or more)" in out
    assert 'reasonix run -c "<your answer>"' in out


def test_the_question_waits_across_runs_and_a_new_task_answers_it(project: Project) -> None:
    """Stored, the open question is not "repaired" away on load: the next run's text (here a
    whole new request) is still delivered as its answer, so the conversation stays valid."""
    project.ex.push(ask())
    assert project.run("run", "--no-planner", "go").returncode == 4
    project.ex.push(Reply.text("noted"))
    proc = project.run("run", "--no-planner", "--output-format", "json", "-c", "SQLite please")
    assert proc.returncode == 0, proc.stderr
    last = project.ex.requests[-1].messages[-1]
    assert last["role"] == "tool" and "SQLite please" in last["content"]
    assert not [m for m in project.ex.requests[-1].messages if m["role"] == "user"][1:]


def test_bad_questions_go_back_to_the_model_with_what_to_fix(project: Project) -> None:
    bad = json.loads(json.dumps(QUESTIONS))
    bad[0]["header"] = "A header far too long"
    bad[1]["options"] = bad[1]["options"][:1]
    project.ex.push(ask(bad), ask([*QUESTIONS, *QUESTIONS]), Reply.text("I will decide myself."))
    proc = project.run("run", "--no-planner", "--output-format", "json", "go")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "done" and result["questions"] == []
    first = project.ex.requests[1].messages[-1]["content"]
    assert "ask was not shown to the user" in first
    assert "'header' 'A header far too long' is 21 characters; at most 12" in first
    assert "question 2: give 2 to 4 options, got 1" in first
    second = project.ex.requests[2].messages[-1]["content"]
    assert "the same question is asked twice" in second


def test_stream_json_reports_the_question_as_it_happens(project: Project) -> None:
    project.ex.push(ask(QUESTIONS[:1]))
    proc = project.run("run", "--no-planner", "--output-format", "stream-json", "go")
    assert proc.returncode == 4, proc.stderr
    *events, result = json_lines(proc.stdout)
    notices = [e for e in events if e.get("kind") == "notice" and e["code"] == "needs_input"]
    assert len(notices) == 1 and "Which database" in notices[0]["message"]
    assert result["questions"] == QUESTIONS[:1]


def test_the_executor_alone_gets_ask_and_the_job_tools(project: Project) -> None:
    # The planner answers in plain text twice (no plan): the executor then works alone.
    project.pl.push(Reply.text("no plan"), Reply.text("still no plan"))
    project.ex.push(Reply.text("hi"))
    proc = project.run("run", "--plan", "--output-format", "json", "hello")
    assert proc.returncode == 0, proc.stderr
    executor = {t["function"]["name"] for t in project.ex.requests[0].body["tools"]}
    planner = {t["function"]["name"] for t in project.pl.requests[0].body["tools"]}
    assert {"ask", "more_tools"} <= executor
    assert "submit_plan" in planner and "read_file" in planner
    assert not {"ask", "more_tools", "job", "bash"} & planner
    schema = next(t for t in project.ex.requests[0].body["tools"] if t["function"]["name"] == "ask")
    questions = schema["function"]["parameters"]["properties"]["questions"]
    assert (questions["minItems"], questions["maxItems"]) == (1, 4)
