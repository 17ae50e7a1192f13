"""Goals through the real CLI (``reasonix run --goal``) with scripted models over the fake
DeepSeek server: several turns ending in ``update_goal``, completion only with host-seen
evidence, the budget and turn cap, a stall re-planned, and a goal resumed by a new process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.project import Project, json_lines, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]

pytestmark = pytest.mark.slow

TEST = "python3 test_calc.py"


def _turn(request: RecordedRequest) -> tuple[str, int]:
    """The latest user message of the request and how many model steps followed it."""
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    steps = sum(1 for m in messages[last_user:] if m.get("role") == "assistant")
    return str(messages[last_user].get("content", "")), steps


def _goal(status: str, summary: str, **extra: str) -> Reply:
    return Reply.call("update_goal", {"status": status, "summary": summary, **extra})


def three_turns(request: RecordedRequest) -> Reply:
    text, steps = _turn(request)
    if text.startswith("Goal:"):
        script = [
            Reply.call(
                "write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}
            ),
            _goal("continue", "wrote calc.py", next_action="write the test"),
            Reply.text("Turn 1: calc.py written."),
        ]
    elif text.startswith("[goal turn 2"):
        body = "from calc import add\nassert add(2, 3) == 5\nprint('ok')\n"
        script = [
            Reply.call("write_file", {"path": "test_calc.py", "content": body}),
            _goal("continue", "wrote the test", next_action="run the test"),
            Reply.text("Turn 2: test written."),
        ]
    else:
        script = [
            # Claimed before running it: the host has not seen the command, so it refuses.
            _goal("complete", "done", evidence=f"`{TEST}` passes"),
            Reply.call("bash", {"command": TEST}),
            _goal("complete", "calc.add works", evidence=f"`{TEST}` printed ok"),
            Reply.text("Turn 3: the test passes."),
        ]
    return script[min(steps, len(script) - 1)]


def run_goal(project: Project, *args: str) -> tuple[Any, dict[str, Any]]:
    proc = project.run(
        "run", "--yes", "--no-planner", "--output-format", "json", *args, timeout=120
    )
    lines = json_lines(proc.stdout)
    assert lines, proc.stdout + proc.stderr
    return proc, lines[-1]


def test_a_goal_over_three_turns_completes_with_evidence(project: Project) -> None:
    project.ex.handler = three_turns
    proc, result = run_goal(project, "--goal", "add calc.add with a passing test")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    goal = result["goal"]
    assert goal["status"] == "complete" and goal["stop_reason"] == "complete"
    assert goal["turns"] == 3
    assert goal["last_update"]["evidence"] == f"`{TEST}` printed ok"
    assert result["stop_reason"] == "done"
    assert "Turn 3: the test passes." in result["result"]
    assert (project.root / "test_calc.py").exists()

    requests = project.ex.requests
    # The premature claim was refused with what to do, and the model saw why.
    tool_texts = [str(m["content"]) for m in requests[-1].messages if m.get("role") == "tool"]
    assert any(
        "complete refused" in t and f"has not seen `{TEST}` succeed" in t for t in tool_texts
    )
    # Continuation turns are user turns at the tail: one growing, append-only conversation
    # whose tools never change.
    assert wire_prefix_violations(requests) == []
    assert len({str(r.body["tools"]) for r in requests}) == 1
    users = [m["content"] for m in requests[-1].messages if m.get("role") == "user"]
    assert users[0].startswith("Goal: add calc.add") and len(users) == 3
    assert users[1].startswith(
        "[goal turn 2 of at most 10] Continue toward the goal. Your next action: write the test"
    )
    # Cost: the goal's total is the run's total, every role.
    assert goal["spent_usd"] > 0
    assert result["cost_usd"]["total"] == goal["spent_usd"]


def test_completion_without_host_seen_work_is_refused(project: Project) -> None:
    # Every turn claims completion with no work at all: refused each time, so the goal never
    # completes; the host stops it when two turns in a row made no progress.
    project.ex.handler = lambda request: (
        _goal("complete", "all done", evidence="trust me")
        if _turn(request)[1] == 0
        else Reply.text("Done, I promise.")
    )
    proc, result = run_goal(project, "--goal", "make everything better", "--goal-max-turns", "5")
    assert proc.returncode == 1
    goal = result["goal"]
    assert goal["status"] == "stopped" and goal["stop_reason"] == "stalled"
    assert goal["turns"] == 1
    tool_texts = [
        str(m["content"]) for m in project.ex.requests[-1].messages if m.get("role") == "tool"
    ]
    assert any("the host observed no work toward the goal" in t for t in tool_texts)
    assert result["stop_reason"] == "stalled"


def test_a_goal_stops_at_its_budget(project: Project) -> None:
    def endless(request: RecordedRequest) -> Reply:
        return Reply.call("bash", {"command": f"echo step {len(request.messages)}"})

    project.ex.handler = endless
    proc, result = run_goal(project, "--goal", "keep going", "--goal-budget", "0.0005")
    assert proc.returncode == 1
    goal = result["goal"]
    assert goal["stop_reason"] == "budget" and goal["status"] == "stopped"
    assert result["stop_reason"] == "budget"
    assert goal["spent_usd"] >= 0.0005
    # It stopped inside the first turn, within a step of the limit, not at the step cap.
    assert goal["turns"] == 1
    assert len(project.ex.requests) < 12
    assert "of its $0.0005 budget" in result["result"]


def test_a_goal_stops_at_its_turn_cap(project: Project) -> None:
    def busy(request: RecordedRequest) -> Reply:
        _, steps = _turn(request)
        script = [
            Reply.call("bash", {"command": f"echo {len(request.messages)}"}),
            _goal("continue", "echoed", next_action="echo again"),
            Reply.text("ok"),
        ]
        return script[min(steps, 2)]

    project.ex.handler = busy
    proc, result = run_goal(project, "--goal", "echo forever", "--goal-max-turns", "2")
    assert proc.returncode == 1
    assert result["goal"]["stop_reason"] == "max_turns"
    assert result["goal"]["turns"] == 2
    assert result["stop_reason"] == "max_turns"


def test_blocked_ends_the_goal_with_the_reason(project: Project) -> None:
    project.ex.handler = lambda request: (
        _goal("blocked", "the API key for the payment sandbox is missing")
        if _turn(request)[1] == 0
        else Reply.text("Blocked.")
    )
    proc, result = run_goal(project, "--goal", "integrate payments")
    assert proc.returncode == 1
    assert result["goal"]["status"] == "blocked"
    assert result["stop_reason"] == "blocked"
    assert "payment sandbox is missing" in result["result"]


def test_a_goal_resumes_after_a_restart(project: Project) -> None:
    # First process: the goal stops at its turn cap after one turn of real work.
    project.ex.handler = three_turns
    proc, first = run_goal(
        project, "--goal", "add calc.add with a passing test", "--goal-max-turns", "1"
    )
    assert first["goal"]["stop_reason"] == "max_turns" and first["goal"]["turns"] == 1
    assert (project.root / "calc.py").exists() and not (project.root / "test_calc.py").exists()

    # A new process continues the same session's goal with a higher cap.
    proc, second = run_goal(project, "-c", "--goal-resume", "--goal-max-turns", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert second["session_id"] == first["session_id"]
    goal = second["goal"]
    assert goal["status"] == "complete" and goal["turns"] == 3
    assert goal["spent_usd"] > first["goal"]["spent_usd"]
    # The second process picked up with the stored next action, appended at the tail.
    requests = project.ex.requests
    resumed = [r for r in requests if _turn(r)[0].startswith("[goal turn 2")]
    assert resumed and "Your next action: write the test" in _turn(resumed[0])[0]
    assert wire_prefix_violations(requests) == []

    # The state is in the store, so `--goal-resume` on a completed goal says so.
    proc = project.run("run", "-c", "--goal-resume")
    assert proc.returncode == 2
    assert "the goal is complete" in proc.stderr


def test_goal_flags_are_checked(project: Project) -> None:
    proc = project.run("run", "--goal", "x", "--goal-budget", "cheap")
    assert proc.returncode == 2 and "must be a number of USD" in proc.stderr
    proc = project.run("run", "--goal-resume")
    assert proc.returncode == 2 and "add -c or -r ID" in proc.stderr
    proc = project.run("run", "--goal", "x", "also a task")
    assert proc.returncode == 2 and "takes no task argument" in proc.stderr
    proc = project.run("run", "--goal-max-turns", "3", "a task")
    assert proc.returncode == 2 and "go with --goal" in proc.stderr


def test_a_goal_turn_without_progress_is_replanned(project: Project) -> None:
    # The planner only runs when asked (gate explicit): the goal asks for it after a turn in
    # which the host saw no progress.
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text().replace("[planner]\n", '[planner]\ngate = "explicit"\n'))
    check = "test -f done.txt"
    project.pl.handler = lambda request: Reply.call(
        "submit_plan",
        {
            "objective": "Create done.txt",
            "steps": [{"title": "Write done.txt", "files": ["done.txt"], "verify": check}],
        },
    )

    def executor(request: RecordedRequest) -> Reply:
        text, steps = _turn(request)
        if text.startswith("Goal:"):
            return Reply.text("I am thinking about it.")  # no work, no update_goal
        script = [
            Reply.call("write_file", {"path": "done.txt", "content": "done\n"}),
            Reply.call("bash", {"command": check}),
            Reply.call("complete_step", {"step": "1", "evidence": f"{check} exit 0"}),
            _goal("complete", "done.txt exists", evidence=f"`{check}` passed"),
            Reply.text("Created done.txt."),
        ]
        return script[min(steps, len(script) - 1)]

    project.ex.handler = executor
    proc = project.run(
        "run", "--yes", "--output-format", "stream-json", "--goal", "create done.txt", timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    result = lines[-1]
    assert result["goal"]["status"] == "complete"
    assert result["goal"]["replans"] == 1 and result["goal"]["turns"] == 2
    notices = [e for e in lines if e.get("kind") == "notice" and e.get("code") == "goal_replan"]
    assert notices and "made no progress" in notices[0]["message"]
    # The planner was asked during the second turn, with that turn's continuation as its task.
    assert len(project.pl.requests) >= 1
    planner_task = str(project.pl.requests[0].messages[1]["content"])
    assert "[goal turn 2 of at most 10] The last turn made no progress" in planner_task
    assert "planner" in result["usage"] and "executor" in result["usage"]


def test_update_goal_outside_a_goal_is_an_error_and_the_tool_is_always_there(
    project: Project,
) -> None:
    project.ex.push(
        _goal("complete", "done", evidence="x"),
        Reply.text("ok"),
    )
    proc, result = run_goal(project, "just a task")
    assert proc.returncode == 0
    assert "goal" not in result
    texts = [str(m["content"]) for m in project.ex.requests[-1].messages if m["role"] == "tool"]
    assert texts == ["No goal is active: update_goal is only for /goal work."]


def test_goals_off_removes_the_tool_and_refuses_a_goal(project: Project) -> None:
    project.write_toml("\n[goals]\nenabled = false\n")
    project.ex.push(Reply.text("ok"))
    proc = project.run("run", "--no-planner", "hello")
    assert proc.returncode == 0, proc.stderr
    tools = {t["function"]["name"] for t in project.ex.requests[0].body["tools"]}
    assert "update_goal" not in tools
    proc = project.run("run", "--no-planner", "--goal", "anything")
    assert proc.returncode == 2 and "[goals] enabled = false" in proc.stderr


def test_reporting_continue_without_work_is_no_progress(project: Project) -> None:
    # update_goal itself is bookkeeping: a turn that only reports is a turn without work.
    def idle(request: RecordedRequest) -> Reply:
        script = [_goal("continue", "thinking", next_action="think more"), Reply.text("Hmm.")]
        return script[min(_turn(request)[1], 1)]

    project.ex.handler = idle
    proc, result = run_goal(project, "--goal", "ponder")
    assert proc.returncode == 1
    assert result["goal"]["stop_reason"] == "stalled" and result["goal"]["turns"] == 1


def test_a_question_pauses_the_goal_for_the_answer(project: Project) -> None:
    question = {
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "one file, no server"},
            {"label": "Postgres", "description": "a server, for many writers"},
        ],
        "multiSelect": False,
    }
    project.ex.handler = lambda request: Reply.call("ask", {"questions": [question]})
    proc, result = run_goal(project, "--goal", "set up the service")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert result["stop_reason"] == "needs_input"
    goal = result["goal"]
    assert goal["status"] == "paused" and goal["stop_reason"] == "needs_input"
    assert result["questions"] and "database" in json.dumps(result["questions"]).lower()
