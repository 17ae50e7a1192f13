"""Resource bounds: what one model response may ask is capped, with a clear message, and the
session stays valid for the next turn.

Attacks, each through the real ``reasonix run`` with a scripted model on loopback: tool
arguments nested 100,000 deep, 10,000 tool calls in one response, 2,000 reads in one response,
a 100 MB ``write_file``, a conversation past the request-size cap. Controls at the limit (or
one under it) pass untouched, so the probes can tell a bound from a broken pipeline.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from reasonix.config import LimitsConfig
from reasonix.testing import Reply
from reasonix.tools.limits import ToolLimits
from reasonix.tools.registry import Tool, ToolContext, ToolRegistry
from tests.support.project import Project, json_lines, project

__all__ = ["project"]


def run_json(project: Project, *args: str) -> dict[str, Any]:
    proc = project.run("run", "--yes", "--output-format", "json", *args, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    (result,) = json_lines(proc.stdout)
    return result


def tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


def assert_next_turn_works(project: Project) -> None:
    """The stored session is valid: a continued turn is accepted by the (strict) fake server."""
    project.ex.push(Reply.text("next turn fine"))
    result = run_json(project, "-c", "and now?")
    assert result["result"] == "next turn fine", result
    assert project.ex.requests[-1].status == 200


def request_size(project: Project, index: int) -> int:
    return len(project.ex.requests[index].raw_body)


# -- nesting ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_arguments_nested_100000_deep(project: Project) -> None:
    deep = '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}"
    project.ex.push(Reply.call("read_file", deep), Reply.text("recovered"))
    result = run_json(project, "read something")
    assert result["result"] == "recovered"
    second = project.ex.requests[1].messages
    (tool,) = tool_messages(second)
    assert "nest more than 64 levels" in tool["content"]
    # The 200 KB of brackets are not resent on every later request.
    call = second[-2]["tool_calls"][0]
    assert len(call["function"]["arguments"]) < 200
    assert request_size(project, 1) < 20_000
    assert_next_turn_works(project)


@pytest.mark.slow
def test_control_nesting_under_the_limit_is_parsed(project: Project) -> None:
    nested = '{"path": "a.txt", "extra": ' + "[" * 62 + "]" * 62 + "}"  # 63 levels in all
    project.ex.push(Reply.call("read_file", nested), Reply.text("ok"))
    run_json(project, "read")
    second = project.ex.requests[1].messages
    (tool,) = tool_messages(second)
    assert "nest more" not in tool["content"]
    assert "unknown property 'extra'" in tool["content"]  # parsed, then judged by the schema
    assert second[-2]["tool_calls"][0]["function"]["arguments"] == nested


# -- calls per response -------------------------------------------------------------------------


@pytest.mark.slow
def test_ten_thousand_calls_in_one_response(project: Project) -> None:
    (project.root / "a.txt").write_text("hello\n")
    calls = [("read_file", {"path": "a.txt", "offset": i + 1}) for i in range(10_000)]
    project.ex.push(Reply.calls(*calls), Reply.text("stopped"))
    result = run_json(project, "list a lot")
    assert result["result"] == "stopped"
    second = project.ex.requests[1].messages
    tools = tool_messages(second)
    assert len(tools) == 65  # 64 ran; the 65th says why the rest did not
    assert all("Not run" not in t["content"] for t in tools[:64])
    assert "10,000 tool calls" in tools[64]["content"]
    assert "max_calls_per_response" in tools[64]["content"]
    assert len(second[-66]["tool_calls"]) == 65
    assert request_size(project, 1) < 200_000
    assert_next_turn_works(project)


@pytest.mark.slow
def test_control_calls_at_the_limit_all_run(project: Project) -> None:
    project.write_toml("[limits]\nmax_calls_per_response = 5\n")
    (project.root / "a.txt").write_text("hello\n")
    project.ex.push(
        Reply.calls(*[("read_file", {"path": "a.txt", "offset": i + 1}) for i in range(5)]),
        Reply.calls(*[("read_file", {"path": "a.txt", "offset": i + 1}) for i in range(6)]),
        Reply.text("done"),
    )
    run_json(project, "read")
    at_limit = tool_messages(project.ex.requests[1].messages)
    assert len(at_limit) == 5 and all("Not run" not in t["content"] for t in at_limit)
    over = tool_messages(project.ex.requests[2].messages)[5:]
    assert len(over) == 6
    assert "at most 5 run per response" in over[5]["content"]


# -- aggregate results per step -----------------------------------------------------------------


@pytest.mark.slow
def test_two_thousand_reads_in_one_response(project: Project) -> None:
    for i in range(20):
        (project.root / f"f{i}.txt").write_text(f"file {i}\n" + ("x" * 49 + "\n") * 600)
    calls = [("read_file", {"path": f"f{i % 20}.txt", "offset": 1 + i // 20}) for i in range(2000)]
    project.ex.push(Reply.calls(*calls), Reply.text("read"))
    result = run_json(project, "read everything")
    assert result["result"] == "read"
    tools = tool_messages(project.ex.requests[1].messages)
    kept = sum(len(t["content"]) for t in tools)
    assert kept < 230_000  # the step budget (200,000) plus the short notes
    assert any("max_step_result_chars" in t["content"] for t in tools)
    assert request_size(project, 1) < 600_000  # not 62 MB
    assert_next_turn_works(project)


@pytest.mark.slow
def test_control_reads_under_the_step_budget_are_kept_whole(project: Project) -> None:
    for i in range(5):
        (project.root / f"f{i}.txt").write_text(("y" * 49 + "\n") * 500)
    project.ex.push(
        Reply.calls(*[("read_file", {"path": f"f{i}.txt"}) for i in range(5)]), Reply.text("ok")
    )
    run_json(project, "read five")
    tools = tool_messages(project.ex.requests[1].messages)
    assert len(tools) == 5
    assert all(t["content"].count("y" * 49) == 500 for t in tools)
    assert all("max_step_result_chars" not in t["content"] for t in tools)


# -- write size ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_100_mb_write_file(project: Project) -> None:
    content = "z" * 100_000_000
    project.ex.push(
        Reply.call("write_file", {"path": "big.txt", "content": content}), Reply.text("noted")
    )
    del content
    result = run_json(project, "write a big file")
    assert result["result"] == "noted"
    assert not (project.root / "big.txt").exists()
    (tool,) = tool_messages(project.ex.requests[1].messages)
    assert "max_argument_bytes" in tool["content"]
    assert "Write the file in parts" in tool["content"]
    assert request_size(project, 1) < 20_000  # the 100 MB is not resent
    assert_next_turn_works(project)


@pytest.mark.slow
def test_write_over_the_content_cap_and_control_just_under(project: Project) -> None:
    project.write_toml("[limits]\nmax_write_bytes = 1000\n")
    project.ex.push(
        Reply.call("write_file", {"path": "over.txt", "content": "o" * 1001}),
        Reply.call("write_file", {"path": "under.txt", "content": "u" * 999}),
        Reply.call("edit_file", {"path": "under.txt", "old_string": "u", "new_string": "e" * 1001}),
        Reply.text("done"),
    )
    run_json(project, "write")
    over = tool_messages(project.ex.requests[1].messages)[-1]["content"]
    assert "1,001 bytes" in over and "max_write_bytes" in over and "in parts" in over
    assert not (project.root / "over.txt").exists()
    assert (project.root / "under.txt").read_text() == "u" * 999
    edit = tool_messages(project.ex.requests[3].messages)[-1]["content"]
    assert "edit_file" in edit and "max_write_bytes" in edit
    assert (project.root / "under.txt").read_text() == "u" * 999


# -- request size -------------------------------------------------------------------------------


@pytest.mark.slow
def test_request_over_the_size_cap_is_not_sent(project: Project) -> None:
    project.write_toml("[limits]\nmax_request_chars = 20000\n")
    (project.root / "a.txt").write_text(("q" * 49 + "\n") * 400)
    project.ex.push(Reply.call("read_file", {"path": "a.txt"}))
    proc = project.run("run", "--yes", "read a")
    assert proc.returncode == 1
    assert "max_request_chars" in proc.stderr and "Traceback" not in proc.stderr
    assert len(project.ex.requests) == 1  # the oversized second request never left
    # Control: the same conversation under a higher cap goes through.
    project.write_toml("[limits]\nmax_request_chars = 40000\n")
    project.ex.push(Reply.call("read_file", {"path": "a.txt"}), Reply.text("fits"))
    proc = project.run("run", "--yes", "read a")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "fits"


@pytest.mark.slow
def test_limits_are_configuration_keys(project: Project) -> None:
    project.write_toml("[limits]\nmax_calls_per_response = 0\n")
    proc = project.run("run", "hello")
    assert proc.returncode == 2
    assert "limits.max_calls_per_response" in proc.stderr and "at least 1" in proc.stderr
    project.write_toml("[limits]\nmax_argument_depth = 9\n")
    proc = project.run("config")
    assert "limits.max_argument_depth = 9" in proc.stdout


def test_config_and_tool_limits_name_the_same_keys() -> None:
    assert ToolLimits.from_config(LimitsConfig()) == ToolLimits()


# -- concurrency --------------------------------------------------------------------------------


async def test_concurrent_tool_calls_are_bounded(tmp_path: Path) -> None:
    running = 0
    peak = 0
    release = asyncio.Event()

    async def probe(n: int) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return "ok"

    tool = Tool.from_function(probe, read_only=True)
    registry = ToolRegistry([tool], limits=ToolLimits(max_concurrent_tools=2))
    ctx = ToolContext(workspace=tmp_path)
    calls = [
        asyncio.create_task(registry.execute("probe", json.dumps({"n": i}), ctx)) for i in range(6)
    ]
    for _ in range(20):
        await asyncio.sleep(0)
    assert running == 2  # the others wait for a slot
    release.set()
    results = await asyncio.gather(*calls)
    assert [r.content for r in results] == ["ok"] * 6
    assert peak == 2
    # Control: with room for all of them, all run at once.
    release.clear()
    running = peak = 0
    wide = ToolRegistry([tool], limits=ToolLimits(max_concurrent_tools=6))
    calls = [
        asyncio.create_task(wide.execute("probe", json.dumps({"n": i}), ctx)) for i in range(6)
    ]
    for _ in range(20):
        await asyncio.sleep(0)
    assert running == 6
    release.set()
    await asyncio.gather(*calls)
