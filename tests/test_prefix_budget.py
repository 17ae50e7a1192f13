"""The lean fixed prefix (issue 30), through the real CLI against the fake servers: the first
request of each role, with every capability on (subagents with writers, goals, background jobs,
ask, web fetch), stays within its budget; rarely used tools are not sent but reached through the
one discovery tool, ``more_tools``, whose schema is the same on every request; a scripted model
given only that tool finds a deferred capability and calls it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonix.agent import Agent, AgentOptions
from reasonix.messages import ToolMessage
from reasonix.testing import Reply, ScriptedProvider
from reasonix.tools.builtin import default_registry
from tests.support.prefix import BUDGET, budget_problems, first_request, schema_tokens
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

EVERYTHING = """
[subagents]
enabled = true
writers = true

[goals]
enabled = true
"""


def _run_plan_and_execute(project: Project) -> None:
    project.write_user_config(EVERYTHING)
    project.pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": "say hi",
                "steps": [{"title": "say hi", "files": [], "acceptance": "hi", "verify": "true"}],
                "risks": [],
            },
        )
    )
    project.ex.push(
        Reply.call("bash", {"command": "true"}),
        Reply.call("complete_step", {"step": "1", "evidence": "true: exit 0"}),
        Reply.text("hi"),
    )
    proc = project.run("run", "--yes", "--plan", "--output-format", "json", "say hi")
    assert proc.returncode == 0, proc.stderr


def test_each_roles_first_request_is_within_its_budget(project: Project) -> None:
    _run_plan_and_execute(project)
    executor = first_request(project.ex.requests[0])
    planner = first_request(project.pl.requests[0])
    names = {t["function"]["name"] for t in executor[1]}
    # every capability is on: its tool is sent, or reached through more_tools
    assert {"ask", "task", "update_goal", "bash", "more_tools"} <= names, names
    assert budget_problems("executor", *executor) == []
    assert budget_problems("planner", *planner) == []
    # the check itself: a fat new tool breaks the budget and is named
    fat = {
        "type": "function",
        "function": {"name": "report_everything", "description": "x " * 3000, "parameters": {}},
    }
    grown = executor[0] + schema_tokens(fat)
    problems = budget_problems("executor", grown, [*executor[1], fat])
    assert problems and all("report_everything" in p for p in problems), problems
    assert BUDGET["executor"] < grown


def test_rare_tools_wait_behind_one_discovery_tool_the_model_can_use(project: Project) -> None:
    project.write_user_config(EVERYTHING)
    (project.root / "old.txt").write_text("obsolete\n")
    project.ex.push(
        Reply.call("more_tools", {}),
        Reply.call("more_tools", {"name": "delete_file", "arguments": {"path": "old.txt"}}),
        Reply.text("deleted"),
    )
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "remove old.txt")
    assert proc.returncode == 0, proc.stderr
    requests = project.ex.requests
    sent = [{t["function"]["name"] for t in r.body["tools"]} for r in requests]
    assert all(not {"delete_file", "web_fetch", "job", "task_apply"} & s for s in sent), sent
    assert len({json.dumps(r.body["tools"], sort_keys=True) for r in requests}) == 1
    listing = requests[1].messages[-1]["content"]
    assert "delete_file:" in listing and '"path"' in listing, listing
    assert "web_fetch:" in listing and "job:" in listing and "task_apply:" in listing
    assert not (project.root / "old.txt").exists()
    assert "Deleted" in requests[2].messages[-1]["content"] or "deleted" in (
        requests[2].messages[-1]["content"].lower()
    )


def test_a_call_through_more_tools_is_as_read_only_as_the_tool_it_runs(tmp_path: Path) -> None:
    registry = default_registry(tmp_path).defer(["delete_file", "web_fetch"])
    assert "delete_file" not in {s["function"]["name"] for s in registry.schemas()}
    proxy = registry.acting_tool("more_tools", "{}")
    assert proxy is not None and proxy.name == "more_tools" and proxy.read_only
    deleting = registry.acting_tool("more_tools", '{"name": "delete_file", "arguments": {}}')
    assert deleting is not None and deleting.name == "delete_file" and not deleting.read_only
    # not a deferred tool: the proxy itself (which refuses to run it)
    other = registry.acting_tool("more_tools", '{"name": "read_file"}')
    assert other is not None and other.name == "more_tools"
    assert registry.acting_tool("more_tools", "not json") is proxy


async def test_a_deferred_writer_runs_alone_between_the_reads_around_it(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("here\n")
    registry = default_registry(tmp_path).defer(["delete_file"])
    provider = ScriptedProvider(
        [
            Reply.calls(
                ("read_file", {"path": "a.txt"}),
                ("more_tools", {"name": "delete_file", "arguments": {"path": "a.txt"}}),
                ("read_file", {"path": "a.txt"}),
            ),
            Reply.text("done"),
        ]
    )
    agent = Agent(provider, registry, options=AgentOptions(workspace=tmp_path))
    await agent.run("read, delete, read")
    results = [m for m in agent.session.snapshot() if isinstance(m, ToolMessage)]
    assert "here" in results[0].content and not results[0].is_error
    assert not results[1].is_error
    assert results[2].is_error  # the delete ran before it, not alongside
