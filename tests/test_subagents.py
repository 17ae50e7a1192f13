"""The ``task`` tool through the real CLI: read-only children in parallel, one of them hanging,
each with its own cache chain and its cost on its own line."""

from __future__ import annotations

import re

import pytest

from reasonix.control.delegation import SUBAGENT_PROMPT
from reasonix.testing import Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.project import Project, json_lines, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]

pytestmark = pytest.mark.slow

CHILD = re.compile(r"^CHILD-(\w+):")


def _is_child(request: RecordedRequest) -> str | None:
    messages = request.messages
    if not messages or messages[0].get("content") != SUBAGENT_PROMPT:
        return None
    first_user = next(m for m in messages if m.get("role") == "user")
    match = CHILD.match(str(first_user.get("content", "")))
    return match.group(1) if match else "?"


def handler(request: RecordedRequest) -> Reply:
    child = _is_child(request)
    steps = sum(1 for m in request.messages if m.get("role") == "assistant")
    if child is None:  # the parent
        if steps == 0:
            return Reply.calls(
                ("task", {"description": "find the entry point", "prompt": "CHILD-A: look"}),
                ("task", {"description": "list the tests", "prompt": "CHILD-B: look"}),
                ("task", {"description": "stuck survey", "prompt": "CHILD-HANG: look"}),
                reasoning="Survey in parallel.",
            )
        return Reply.text("Surveyed: main.py is the entry point; tests live in tests/.")
    if child == "HANG":
        return Reply.failing(Fault(stall_seconds=60, stall_after_bytes=0))
    if child == "A" and steps == 0:
        return Reply.call("read_file", {"path": "main.py"}, reasoning="Read it.")
    return Reply.text(f"CHILD-{child} report: found it. " + "detail " * 40, reasoning="Done.")


def test_three_children_in_parallel_one_hanging(project: Project) -> None:
    project.ex.handler = handler
    (project.root / "main.py").write_text("print('entry point')\n")
    project.write_toml("\n[subagents]\ntimeout_s = 4\n")
    proc = project.run("run", "--no-planner", "--output-format", "json", "survey the project")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["result"].startswith("Surveyed")

    # Per-role and per-child cost.
    assert result["usage"]["subagent"]["requests"] >= 3
    assert result["cost_usd"]["subagent"] > 0
    assert result["cost_usd"]["total"] == pytest.approx(
        result["cost_usd"]["executor"] + result["cost_usd"]["subagent"], abs=2e-8
    )
    children = {c["description"]: c for c in result["subagents"]}
    assert children["find the entry point"]["status"] == "done"
    assert children["list the tests"]["status"] == "done"
    assert children["stuck survey"]["status"] == "timed_out"
    assert children["find the entry point"]["requests"] == 2
    assert children["find the entry point"]["cost_usd"] > 0
    assert sum(c["cost_usd"] for c in result["subagents"]) == pytest.approx(
        result["cost_usd"]["subagent"], abs=1e-7
    )

    # The parent got bounded reports, the hanging one as an error with its reason.
    requests = project.ex.requests
    parent = [r for r in requests if _is_child(r) is None]
    assert len(parent) == 2
    results = [m for m in parent[1].messages if m.get("role") == "tool"]
    texts = [str(m["content"]) for m in results]
    assert any("CHILD-A report" in t for t in texts)
    assert any("CHILD-B report" in t for t in texts)
    assert any("did not finish within 4 s" in t for t in texts)

    # The children ran in parallel: every child's first request came before A's second.
    order = [_is_child(r) for r in requests]
    first_hang = order.index("HANG")
    last_a = len(order) - 1 - order[::-1].index("A")
    assert first_hang < last_a
    assert order.index("B") < last_a

    # Each child is its own session: no inherited conversation, its own prefix chain.
    a_requests = [r for r in requests if _is_child(r) == "A"]
    assert [m["role"] for m in a_requests[0].messages] == ["system", "user"]
    assert wire_prefix_violations(a_requests) == []
    assert a_requests[1].usage is not None and a_requests[1].usage.cache_hit_tokens > 0
    # Children cannot delegate further, nor write.
    child_tools = {t["function"]["name"] for t in a_requests[0].body["tools"]}
    assert (
        "task" not in child_tools and "write_file" not in child_tools and "bash" not in child_tools
    )
    assert "read_file" in child_tools

    # The transcripts are stored and `sessions show` lists the children.
    show = project.run("sessions", "show", result["session_id"])
    assert "subagents: task-1, task-2, task-3" in show.stdout
    assert "CHILD-A report" in show.stdout


def test_subagents_off_removes_the_tool(project: Project) -> None:
    project.write_toml("\n[subagents]\nenabled = false\n")
    project.ex.push(Reply.text("ok"))
    proc = project.run("run", "--no-planner", "hello")
    assert proc.returncode == 0, proc.stderr
    tools = {t["function"]["name"] for t in project.ex.requests[0].body["tools"]}
    assert "task" not in tools
