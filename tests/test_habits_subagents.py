"""Issue 28, the subagent types models used to Claude Code's Task tool send, through the real
``reasonix run``: ``general-purpose`` delegates with no configuration, ``Explore`` and ``Plan``
are read-only even when asked to write, and an unknown type runs the default subagent with a
note instead of failing the call."""

from __future__ import annotations

from typing import Any

import pytest

from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

CHILD_MARK = "subagent of reasonix"


def is_child(request: RecordedRequest) -> bool:
    return CHILD_MARK in str(request.messages[0].get("content", ""))


def delegating(subagent_type: str, **extra: Any) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        if is_child(request):
            return Reply.text("CHILD-REPORT-77: greet.py defines greet().")
        if not any(m.get("role") == "assistant" for m in request.messages):
            arguments = {"description": "survey", "prompt": "Look at greet.py"}
            arguments.update(subagent_type=subagent_type, **extra)
            return Reply.call("task", arguments)
        return Reply.text("Delegated.")

    return reply


def tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m.get("role") == "tool"]


def run(project: Project) -> dict[str, Any]:
    proc = project.run("run", "--no-planner", "--output-format", "json", "survey greet.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    return result


def test_general_purpose_delegates_without_configuration(project: Project) -> None:
    project.ex.handler = delegating("general-purpose")
    result = run(project)
    children = [r for r in project.ex.requests if is_child(r)]
    assert len(children) == 1
    (report,) = tool_results(project.ex.requests[-1])
    assert "CHILD-REPORT-77" in report
    assert "Unknown subagent_type" not in report and "[Note" not in report
    assert len(result["subagents"]) == 1
    task = next(t for t in project.ex.requests[0].body["tools"] if t["function"]["name"] == "task")
    assert "general-purpose" in task["function"]["description"]


@pytest.mark.parametrize("kind", ["Explore", "Plan"])
def test_explore_and_plan_are_read_only(project: Project, kind: str) -> None:
    project.ex.handler = delegating(kind, read_only=False)
    run(project)
    (child,) = [r for r in project.ex.requests if is_child(r)]
    names = {t["function"]["name"] for t in child.body["tools"]}
    assert "write_file" not in names and "edit_file" not in names and "bash" not in names
    assert "research subagent" in child.messages[0]["content"]
    if kind == "Plan":
        assert "implementation plan" in child.messages[0]["content"]


def test_an_unknown_type_runs_the_default_with_a_note(project: Project) -> None:
    project.ex.handler = delegating("code-reviewer-9000")
    run(project)
    assert len([r for r in project.ex.requests if is_child(r)]) == 1
    (report,) = tool_results(project.ex.requests[-1])
    assert report.startswith("[Note: there is no subagent_type 'code-reviewer-9000'")
    assert "CHILD-REPORT-77" in report
