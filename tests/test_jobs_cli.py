"""Background shell jobs through the real CLI (``reasonix run`` against a scripted model on a
FakeDeepSeekServer): ``bash`` with ``run_in_background`` returns a job id at once, ``job``
(reached through ``more_tools``) returns only what is new, ``job`` with ``action: kill`` stops
the job and every process of it, and a job still running when the run ends is listed in the
result and stopped with it (checked by pid and by the command line, with the same checks made
while the job runs as their control), unless the user keeps it."""

from __future__ import annotations

import json
import os
import re
import secrets

import pytest

from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.security.support import processes_with_arg, still_running
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

#: runs with --yes confined where bubblewrap works, and unconfined (acknowledged) elsewhere
USER_CONFIG = "[sandbox]\nallow_unconfined = true\n"


def ticker(token: str, count: int = 2000, step: float = 0.1) -> str:
    """A job that prints a numbered line every ``step`` seconds; ``token`` marks its command
    line so the test can find its processes."""
    return f"for i in $(seq {count}); do echo tick-$i; sleep {step}; done # {token}"


def tool_results(requests: list[RecordedRequest]) -> dict[str, str]:
    """Each tool result the model was sent, by the name of the tool that made it (the last
    of each name wins) and by call order under ``#n``."""
    out: dict[str, str] = {}
    n = 0
    seen: set[str] = set()
    for req in requests:
        for msg in req.messages:
            if msg.get("role") != "tool" or msg["tool_call_id"] in seen:
                continue
            seen.add(msg["tool_call_id"])
            n += 1
            out[f"#{n}"] = str(msg.get("content", ""))
    return out


def ticks(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"tick-(\d+)", text)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_job_starts_at_once_is_polled_twice_for_new_output_and_killed(project: Project) -> None:
    project.write_user_config(USER_CONFIG)
    token = f"job-{secrets.token_hex(6)}"
    seen_running: list[bool] = []
    replies = [
        Reply.call("bash", {"command": ticker(token), "run_in_background": True}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 30}}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 30}}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1", "action": "kill"}}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1"}}),
        Reply.text("done"),
    ]

    def model(request: RecordedRequest) -> Reply:
        # The control: while the job runs, the probe used after the kill does find it.
        if request.index in (1, 2, 3):
            seen_running.append(bool(processes_with_arg(token)))
        return replies[request.index]

    project.ex.handler = model
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "serve")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    results = tool_results(project.ex.requests)
    started, first, second, killed, after = (results[f"#{i}"] for i in range(1, 6))
    assert "Started background job job-1" in started
    assert first.startswith("[job-1: running")
    assert second.startswith("[job-1: running")
    one, two = ticks(first), ticks(second)
    assert one and two, (first, second)
    # Each read has only what is new: the second starts right after the first ended.
    assert one == list(range(1, len(one) + 1))
    assert two[0] == one[-1] + 1 and two == list(range(two[0], two[0] + len(two)))
    assert killed == "Stopped job-1 and its processes."
    assert after.startswith("[job-1: killed")
    assert seen_running == [True, True, True]
    assert still_running(token) == []
    assert result["jobs"] == []


def test_a_job_still_running_at_the_end_is_reported_and_stopped_with_the_run(
    project: Project,
) -> None:
    project.write_user_config(USER_CONFIG)
    token = f"job-{secrets.token_hex(6)}"
    running: list[bool] = []

    def model(request: RecordedRequest) -> Reply:
        n = request.index + 1
        if n == 1:
            return Reply.call("bash", {"command": ticker(token), "run_in_background": True})
        if n == 2:
            return Reply.call(
                "more_tools", {"name": "job", "arguments": {"id": "job-1", "wait": 30}}
            )
        running.append(bool(processes_with_arg(token)))
        return Reply.text("left it running")

    project.ex.handler = model
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "start")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    (job,) = result["jobs"]
    assert job["id"] == "job-1" and job["status"] == "running" and job["kept"] is False
    assert token in job["command"]
    assert running == [True]
    assert not alive(job["pid"])
    assert still_running(token) == []


def test_text_output_says_a_job_was_stopped_with_the_run(project: Project) -> None:
    project.write_user_config(USER_CONFIG)
    token = f"job-{secrets.token_hex(6)}"
    project.ex.push(
        Reply.call("bash", {"command": ticker(token), "run_in_background": True}),
        Reply.text("started it"),
    )
    proc = project.run("run", "--yes", "--no-planner", "start")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "started it"
    assert "background job job-1" in proc.stderr
    assert "was still running and was stopped with the session" in proc.stderr
    assert still_running(token) == []


def test_a_kept_job_outlives_the_run_and_says_where_it_is(project: Project) -> None:
    project.write_user_config(USER_CONFIG + "[jobs]\nkeep_on_exit = true\n")
    token = f"job-{secrets.token_hex(6)}"
    project.ex.push(
        Reply.call("bash", {"command": ticker(token, step=0.2), "run_in_background": True}),
        Reply.text("serving"),
    )
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "start")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    (job,) = result["jobs"]
    try:
        assert job["kept"] is True
        assert alive(job["pid"])
        assert processes_with_arg(token)
        log = job["log"]
        assert os.path.exists(log)
    finally:
        os.killpg(job["pid"], 9)
    assert still_running(token) == []


def test_starting_a_job_asks_like_bash_and_deny_rules_apply(project: Project) -> None:
    token = f"job-{secrets.token_hex(6)}"
    project.write_toml('[permissions]\ndeny = ["bash(for *)"]\n')
    project.write_user_config(USER_CONFIG)
    project.ex.push(
        Reply.call("bash", {"command": ticker(token), "run_in_background": True}),
        Reply.call("bash", {"command": f"sleep 30 # {token}", "run_in_background": True}),
        Reply.text("could not"),
    )
    # No --yes: nobody can approve the second; the deny rule refuses the first in any mode.
    proc = project.run("run", "--no-planner", "--output-format", "json", "start")
    (result,) = json_lines(proc.stdout)
    denied = result["permission_denials"]
    assert [d["tool"] for d in denied] == ["bash", "bash"]
    assert "deny rule" in denied[0]["reason"]
    assert "no one can approve it" in denied[1]["reason"]
    assert result["jobs"] == []
    assert processes_with_arg(token) == []


def test_the_job_tool_knows_only_this_sessions_jobs(project: Project) -> None:
    project.ex.push(
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-7"}}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "1", "action": "kill"}}),
        Reply.text("none"),
    )
    proc = project.run("run", "--no-planner", "--output-format", "json", "look")
    assert proc.returncode == 0, proc.stderr
    results = tool_results(project.ex.requests)
    for text in (results["#1"], results["#2"]):
        assert "no background job" in text and "none started yet" in text


def test_the_tool_list_is_the_same_on_every_request(project: Project) -> None:
    project.write_user_config(USER_CONFIG)
    project.ex.push(
        Reply.call("bash", {"command": "sleep 5", "run_in_background": True}),
        Reply.call("more_tools", {"name": "job", "arguments": {"id": "job-1"}}),
        Reply.text("ok"),
    )
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "go")
    assert proc.returncode == 0, proc.stderr
    tools = [json.dumps(r.body["tools"], sort_keys=True) for r in project.ex.requests]
    assert len(set(tools)) == 1
    names = {t["function"]["name"] for t in project.ex.requests[0].body["tools"]}
    assert {"bash", "more_tools"} <= names and "job" not in names  # deferred
    more = next(
        t for t in project.ex.requests[0].body["tools"] if t["function"]["name"] == "more_tools"
    )
    assert "job" in more["function"]["description"]
    assert "run_in_background" in json.dumps(project.ex.requests[0].body["tools"])


def test_stream_json_shows_the_job_start_and_the_result_stays_last(project: Project) -> None:
    project.write_user_config(USER_CONFIG)
    token = f"job-{secrets.token_hex(6)}"
    project.ex.push(
        Reply.call("bash", {"command": f"sleep 600 # {token}", "run_in_background": True}),
        Reply.text("started"),
    )
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr
    *events, result = json_lines(proc.stdout)
    (started,) = [e for e in events if e["kind"] == "job_started"]
    assert started["job_id"] == "job-1" and token in started["command"]
    assert result["type"] == "result" and [j["id"] for j in result["jobs"]] == ["job-1"]
    assert still_running(token) == []
