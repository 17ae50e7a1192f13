"""Turn outcomes that tell the truth: a plan the executor leaves with open steps ends
``plan_incomplete`` (after one nudge), naming the open steps and the last failed check, in the
terminal app's footer, ``reasonix run``'s JSON and stream-json result and exit code (5), and ACP's
response; a plan carried out step by step still ends ``done``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

FAILING_CHECK = "python3 -c 'import sys; print(\"1 failed\"); sys.exit(1)'"


def push_plan(project: Project) -> None:
    project.pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": "Fix add() and prove it",
                "steps": [
                    {"title": "Fix the operator in calc.py", "verify": "true"},
                    {"title": "Add a test for add()"},
                    {"title": "Run the test suite"},
                ],
            },
        )
    )


def push_executor_that_stops_early(project: Project) -> None:
    """The executor runs a failing check and declares itself done, twice (the second time
    after the orchestrator's nudge)."""
    project.ex.push(
        Reply.call("bash", {"command": FAILING_CHECK}),
        Reply.text("Done."),
        Reply.text("Done, nothing more to do."),
    )


def assert_names_what_is_open(message: str) -> None:
    assert "plan unfinished" in message
    for step in ("Fix the operator", "Add a test", "Run the test suite"):
        assert step in message
    assert "Last failed check" in message and "sys.exit(1)" in message


def test_run_json_and_exit_code_for_an_unfinished_plan(project: Project) -> None:
    push_plan(project)
    push_executor_that_stops_early(project)
    proc = project.run("run", "--plan", "--yes", "--output-format", "json", "fix add()")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "plan_incomplete"
    assert result["exit_code"] == 5 and result["is_error"] is False
    assert_names_what_is_open(result["result"])
    # The nudge reached the executor with the open steps named.
    nudge = project.ex.requests[-1].messages[-1]
    assert nudge["role"] == "user" and "not finished" in nudge["content"]


def test_stream_json_ends_with_plan_incomplete(project: Project) -> None:
    push_plan(project)
    push_executor_that_stops_early(project)
    proc = project.run("run", "--plan", "--yes", "--output-format", "stream-json", "fix add()")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[-1]["type"] == "result" and lines[-1]["stop_reason"] == "plan_incomplete"
    notices = [e for e in lines if e.get("kind") == "notice" and e.get("code") == "plan_incomplete"]
    assert notices, [e.get("kind") for e in lines]


def test_a_plan_carried_out_still_ends_done(project: Project) -> None:
    project.pl.push(
        Reply.call(
            "submit_plan",
            {"objective": "Fix add()", "steps": [{"title": "Fix calc.py", "verify": "true"}]},
        )
    )
    project.ex.push(
        Reply.call("bash", {"command": "true"}),
        Reply.call("complete_step", {"step": "1", "evidence": "true: exit 0"}),
        Reply.text("Fixed."),
    )
    proc = project.run("run", "--plan", "--yes", "--output-format", "json", "fix add()")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "done" and result["result"] == "Fixed."


def test_the_app_footer_says_plan_incomplete(project: Project) -> None:
    import pexpect

    push_plan(project)
    push_executor_that_stops_early(project)
    env = {**project.env(), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "--mode", "yolo"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    try:
        child.expect("›")
        child.sendline("/plan fix add()")
        child.expect("plan unfinished")
        child.expect(r"── plan_and_execute · plan_incomplete")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


async def test_acp_response_carries_plan_incomplete(project: Project) -> None:
    push_plan(project)
    push_executor_that_stops_early(project)
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        await conn.set_session_mode(session_id=new.session_id, mode_id="yolo")
        reply = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("/plan fix add()")), 60
        )
    meta: dict[str, Any] = reply.field_meta or {}
    assert meta["reasonix"]["stop_reason"] == "plan_incomplete"
    assert reply.stop_reason == "end_turn"
    assert_names_what_is_open(client.text())
