"""Fault injection in tools: a tool that hangs past its timeout (async, sync, and a shell
command), a command that prints megabytes, and workspace files that are not UTF-8. The Agent
runs the real built-in tools over loopback; every fault must become a clear tool result, the
session must stay valid and small, and the server must accept the next request."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasonix.agent import Agent, AgentOptions
from reasonix.events import CollectingSink
from reasonix.messages import ToolMessage
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.tools.builtin import ShellOptions, default_tools
from reasonix.tools.registry import Tool, ToolRegistry
from tests.support.faults import Tally, accounting_problems, session_problems, tally

__all__ = ["tally"]

ProviderFactory = Callable[..., Any]


def _tool_results(agent: Agent) -> list[ToolMessage]:
    return [m for m in agent.session.snapshot() if isinstance(m, ToolMessage)]


async def _run(
    make_provider: ProviderFactory, registry: ToolRegistry, tmp_path: Path, *calls: Reply
) -> tuple[Agent, FakeDeepSeekServer, CollectingSink]:
    """Run one turn of ``calls`` then a closing answer, and one more turn after it."""
    sink = CollectingSink()
    async with FakeDeepSeekServer() as srv:
        srv.push(*calls, Reply.text("done"), Reply.text("still fine"))
        agent = Agent(make_provider(srv), registry, options=AgentOptions(workspace=tmp_path))
        agent.sink = sink
        first = await agent.run("go")
        second = await agent.run("and now?")
        srv.assert_exhausted()
    assert (first.text, second.text) == ("done", "still fine")
    assert all(r.status == 200 for r in srv.requests), [r.error for r in srv.requests]
    assert session_problems(agent.session.snapshot()) == []
    assert accounting_problems(sink.events, srv.requests) == ""
    return agent, srv, sink


def _shell_registry(tmp_path: Path) -> ToolRegistry:
    return ToolRegistry(
        # A default timeout a loaded machine's 5 MB pipe meets; the hang test sets its own.
        default_tools(tmp_path, shell_options=ShellOptions(timeout=60, kill_grace=0.5))
    )


@pytest.mark.slow
async def test_tools_that_hang_past_their_timeout_are_stopped(
    make_provider: ProviderFactory, tmp_path: Path, tally: Tally
) -> None:
    async def hang_async() -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return "unreachable"

    def hang_sync() -> str:
        """Blocks its thread for a while (a thread cannot be killed; the agent must not wait)."""
        time.sleep(1.5)
        return "late"

    registry = _shell_registry(tmp_path).with_tools(
        [
            Tool.from_function(hang_async, timeout=0.3),
            Tool.from_function(hang_sync, timeout=0.3),
        ]
    )
    started = time.monotonic()
    agent, _, _ = await _run(
        make_provider,
        registry,
        tmp_path,
        Reply.call("hang_async"),
        Reply.call("hang_sync"),
        Reply.call("bash", {"command": "sleep 30; echo never", "timeout": 1}),
    )
    took = time.monotonic() - started
    results = [m.content for m in _tool_results(agent)]
    assert results[0] == "hang_async timed out after 0.3 s and was stopped."
    assert results[1] == "hang_sync timed out after 0.3 s and was stopped."
    assert "timed out after 1 s" in results[2] and "killed" in results[2]
    assert "never" not in results[2]
    assert all(m.is_error for m in _tool_results(agent))
    # Far under the 30 s the command sleeps and the hung threads would hold it.
    assert took < 25, f"the hung tools held the turn for {took:.1f} s"
    tally.add(count=3)


async def test_a_command_printing_megabytes_is_capped_once(
    make_provider: ProviderFactory, tmp_path: Path, tally: Tally
) -> None:
    agent, srv, _ = await _run(
        make_provider,
        _shell_registry(tmp_path),
        tmp_path,
        Reply.call("bash", {"command": "yes | head -c 5000000"}),
    )
    (result,) = _tool_results(agent)
    assert len(result.content) <= agent.options.max_tool_output_chars + 200
    assert "y\ny\n" in result.content
    # the capped bytes are what was sent, on every later request, unchanged
    sent = [m["content"] for r in srv.requests[1:] for m in r.messages if m["role"] == "tool"]
    assert sent == [result.content] * 2
    assert max(len(r.raw_body) for r in srv.requests) < 100_000
    tally.add()


async def test_workspace_files_that_are_not_utf8(
    make_provider: ProviderFactory, tmp_path: Path, tally: Tally
) -> None:
    latin = 'café = "ümlaut"\nname = "naïve"\n'.encode("latin-1")
    blob = b"BIN\x00\x01\x02\xff\xfe mlaut \x00\n"
    (tmp_path / "latin.py").write_bytes(latin)
    (tmp_path / "blob.bin").write_bytes(blob)
    (tmp_path / "mixed.txt").write_bytes(b"ok line mlaut\n\xff\xfe broken \xc3 utf-8\n")
    agent, srv, _ = await _run(
        make_provider,
        _shell_registry(tmp_path),
        tmp_path,
        Reply.call("read_file", {"path": "latin.py"}),
        Reply.call("read_file", {"path": "blob.bin"}),
        Reply.call("read_file", {"path": "mixed.txt"}),
        Reply.call("grep", {"pattern": "mlaut"}),
        Reply.call(
            "edit_file", {"path": "latin.py", "old_string": "name =", "new_string": "nom ="}
        ),
        Reply.call("edit_file", {"path": "blob.bin", "old_string": "BIN", "new_string": "BIT"}),
        Reply.call("bash", {"command": "cat latin.py blob.bin"}),
    )
    read_latin, read_blob, read_mixed, grep, edit_latin, edit_blob, cat = (
        m.content for m in _tool_results(agent)
    )
    assert 'café = "ümlaut"' in read_latin and "latin-1" in read_latin
    assert "binary file" in read_blob
    assert "ok line mlaut" in read_mixed
    assert "latin.py:1" in grep and "mixed.txt" in grep
    assert "1 replacement" in edit_latin
    # the edit kept the file's own encoding: the rest of it is byte-identical latin-1
    assert (tmp_path / "latin.py").read_bytes() == latin.replace(b"name =", b"nom =")
    assert "binary" in edit_blob and (tmp_path / "blob.bin").read_bytes() == blob
    assert "mlaut" in cat
    # whatever the bytes, every request body was valid UTF-8 JSON the server accepted
    for r in srv.requests:
        json.loads(r.raw_body.decode("utf-8"))
    tally.add(count=7)
