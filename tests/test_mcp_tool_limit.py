"""DeepSeek takes at most 128 tools per request. With 150 MCP tools from a real stdio MCP server
(tests/fixtures/mcp/many_tools.py) configured, through the real ``reasonix run`` process: no
request carries more than 128 tools, the schemas stay the same on every request, start-up and
``reasonix doctor`` say what happened, and every one of the 150 tools is callable — directly,
or through ``mcp_call`` (listed by ``mcp_tools``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reasonix.mcp.overflow import PROXY_CALL, PROXY_LIST, PROXY_READ, fit_mcp_tools
from reasonix.testing import Reply
from reasonix.tools.registry import Tool, ToolContext, ToolRegistry, ToolResult
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

MANY = Path(__file__).parent / "fixtures" / "mcp" / "many_tools.py"
COUNT = 150


def configure(project: Project, count: int = COUNT) -> None:
    # In the user's own config, which alone may trust the server's readOnlyHint annotations:
    # the fixture's tools say they are read-only, so mcp_read may call them.
    project.write_toml()
    project.write_user_config(
        f"""
[[mcp.servers]]
name = "many"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(MANY))}, "{count}"]
trust_annotations = true
"""
    )


@pytest.mark.slow
def test_150_mcp_tools_never_exceed_128_per_request_and_all_are_callable(
    project: Project,
) -> None:
    configure(project)
    # The first request tells us which tools were sent directly.
    project.ex.push(Reply.call("mcp_tools", {"search": "tool"}), Reply.text("Listed."))
    proc = project.run("run", "--yes", "--output-format", "stream-json", "list the tools")
    assert proc.returncode == 0, proc.stderr
    events = json_lines(proc.stdout)[:-1]
    notices = [e for e in events if e["kind"] == "notice" and e["code"] == "tool_overflow"]
    assert notices and "more than the 128" in notices[0]["message"]
    first = project.ex.requests[0]
    sent = [t["function"]["name"] for t in first.body["tools"]]
    assert len(sent) <= 128
    assert {"mcp_call", "mcp_read", "mcp_tools"} <= set(sent)
    direct = sorted(n for n in sent if n.startswith("mcp__many__"))
    everything = [f"tool_{i:03d}" for i in range(COUNT)]
    direct_remote = {n.rsplit("__", 1)[-1] for n in direct}
    routed = [t for t in everything if t not in direct_remote]
    assert direct and routed

    # Now call every one of the 150: the direct ones by name, the others through mcp_call.
    calls: list[tuple[str, dict[str, object]]] = []
    for name in direct:
        calls.append((name, {"value": name}))
    for i, remote in enumerate(routed):
        proxy = "mcp_read" if i % 2 else "mcp_call"  # the tools are read-only: either works
        calls.append((proxy, {"name": f"mcp__many__{remote}", "arguments": {"value": remote}}))
    # in steps of 30 calls: the registry bounds how many calls one response may make
    steps = [Reply.calls(*calls[i : i + 30]) for i in range(0, len(calls), 30)]
    project.ex.push(*steps, Reply.text("All 150 tools answered."))
    proc = project.run("run", "--yes", "-c", "call every tool")
    assert proc.returncode == 0, proc.stderr
    assert "All 150 tools answered." in proc.stdout
    requests = project.ex.requests
    assert all(len(r.body.get("tools") or ()) <= 128 for r in requests)
    assert len({json.dumps(r.body["tools"]) for r in requests}) == 1  # fixed for the session
    assert all(r.status == 200 for r in requests)
    results = [m["content"] for m in requests[-1].messages if m["role"] == "tool"]
    answered = {text.split(" got ")[0] for text in results if " got " in text}
    assert answered == set(everything), sorted(set(everything) - answered)[:5]
    listing = next(m["content"] for m in requests[1].messages if m["role"] == "tool")
    assert f"{len(routed)} MCP tool(s)" in listing


@pytest.mark.slow
def test_doctor_says_when_the_tools_pass_the_limit(project: Project) -> None:
    configure(project)
    proc = project.run("doctor")
    assert "more than the 128" in proc.stdout
    assert "mcp_call" in proc.stdout


@pytest.mark.slow
def test_under_the_limit_nothing_is_routed(project: Project) -> None:
    configure(project, 20)
    project.ex.push(Reply.text("fine"))
    proc = project.run("run", "--yes", "hello")
    assert proc.returncode == 0, proc.stderr
    sent = [t["function"]["name"] for t in project.ex.requests[0].body["tools"]]
    assert "mcp_call" not in sent
    assert sum(n.startswith("mcp__many__") for n in sent) == 20


def _tool(name: str, read_only: bool, ran: list[str]) -> Tool:
    def run(value: str) -> ToolResult:
        ran.append(name)
        return ToolResult(f"{name} got {value}")

    return Tool(
        name=name,
        description=f"{name} tool",
        parameters={"type": "object", "properties": {"value": {"type": "string"}}},
        func=run,
        read_only=read_only,
        category="mcp",
    )


async def test_read_only_tool_sets_keep_only_the_read_only_proxy(tmp_path: Path) -> None:
    """The planner and subagents get the registry's read-only view: it must not reach a
    writer MCP tool through a proxy."""
    ran: list[str] = []
    mcp = [_tool(f"mcp__s__r{i:03d}", True, ran) for i in range(130)]
    mcp += [_tool(f"mcp__s__w{i:03d}", False, ran) for i in range(30)]
    fit = fit_mcp_tools(10, mcp)
    assert 10 + len(fit.tools) <= 128 and fit.overflowed
    full = ToolRegistry(fit.tools)
    view = full.read_only()
    assert PROXY_CALL in full and PROXY_CALL not in view
    assert PROXY_READ in view and PROXY_LIST in view
    ctx = ToolContext(workspace=tmp_path)
    refused = await view.execute(PROXY_READ, '{"name": "mcp__s__w029", "arguments": {}}', ctx)
    assert refused.is_error and "not a read-only tool" in refused.content
    ok = await view.execute(
        PROXY_READ, '{"name": "mcp__s__r129", "arguments": {"value": "x"}}', ctx
    )
    assert ok.content == "mcp__s__r129 got x"
    wrote = await full.execute(
        PROXY_CALL, '{"name": "mcp__s__w029", "arguments": {"value": "y"}}', ctx
    )
    assert wrote.content == "mcp__s__w029 got y"
    assert ran == ["mcp__s__r129", "mcp__s__w029"]
