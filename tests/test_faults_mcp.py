"""Fault injection in MCP servers, seen through an Agent session: a server that hangs on a call,
one that dies during a call (and stays dead), one that writes garbage to stdout in the middle of
the session, and one that writes garbage at start-up. Each must become a clear tool result or a
reported start-up failure; the session stays valid and the model server accepts every request.
Uses the raw JSON-RPC fixture server in tests/fixtures/mcp/."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasonix.agent import Agent
from reasonix.events import CollectingSink
from reasonix.mcp import McpManager, McpServerConfig, ServerState
from reasonix.messages import ToolMessage
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.tools.registry import ToolRegistry
from tests.support.faults import Tally, accounting_problems, session_problems, tally
from tests.support.mcp import FAKE

__all__ = ["tally"]

pytestmark = pytest.mark.slow

ProviderFactory = Callable[..., Any]

# Sits between the client and the fixture server and, after the first tool result it passes
# on, writes lines that are not JSON-RPC to the client.
SPEW = """
import subprocess, sys, threading
child = subprocess.Popen([sys.executable, {fake!r}], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
def pump():
    for line in sys.stdin:
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
threading.Thread(target=pump, daemon=True).start()
for line in child.stdout:
    sys.stdout.write(line)
    if '"content"' in line:
        sys.stdout.write("this is not JSON-RPC\\n{{broken json\\n\\u0000\\u0001 junk\\n")
    sys.stdout.flush()
"""


async def test_mcp_servers_that_hang_die_or_write_garbage(
    make_provider: ProviderFactory, tmp_path: Path, tally: Tally
) -> None:
    spew = tmp_path / "spew.py"
    spew.write_text(SPEW.format(fake=FAKE))
    # Bounds generous enough for a loaded machine (starting Python can take seconds there);
    # what must be fast is proven by what each failure says, not by a stopwatch.
    configs = [
        McpServerConfig("fake", command=sys.executable, args=(FAKE,), call_timeout=5.0),
        McpServerConfig("spew", command=sys.executable, args=(str(spew),), call_timeout=10.0),
        McpServerConfig(
            "garbage", command=sys.executable, args=(FAKE, "--garbage"), startup_timeout=10.0
        ),
    ]
    sink = CollectingSink()
    manager = McpManager(configs, tmp_path / "logs", sink)
    await manager.start()
    try:
        # the garbage server is reported with what it wrote (the bound leaves a loaded
        # machine the time to start Python and print it)
        garbage = next(s for s in manager.status() if s.name == "garbage")
        assert "not JSON-RPC" in (garbage.error or ""), garbage.error
        states = {s.name: s.state for s in manager.status()}
        assert states == {
            "fake": ServerState.RUNNING,
            "spew": ServerState.RUNNING,
            "garbage": ServerState.FAILED,
        }
        registry = ToolRegistry(manager.tools())
        assert not any(n.startswith("mcp__garbage__") for n in registry.names)
        async with FakeDeepSeekServer() as srv:
            srv.push(
                Reply.call("mcp__fake__echo", {"text": "hi"}),
                Reply.call("mcp__fake__slow", {"seconds": 30}),  # hangs past call_timeout
                Reply.call("mcp__fake__echo", {"text": "after the hang"}),
                Reply.call("mcp__fake__die"),  # exits during the call
                Reply.call("mcp__fake__echo", {"text": "anyone?"}),
                Reply.call("mcp__spew__echo", {"text": "first"}),  # garbage follows its answer
                Reply.call("mcp__spew__echo", {"text": "second"}),
                Reply.call("mcp__garbage__anything"),  # a tool of the server that never started
                Reply.text("Done despite the broken servers."),
            )
            agent = Agent(make_provider(srv), registry, sink=sink)
            result = await agent.run("use the MCP tools")
            srv.assert_exhausted()
        results = [
            (m.is_error, m.content) for m in agent.session.snapshot() if isinstance(m, ToolMessage)
        ]
    finally:
        await manager.aclose()
    assert result.text == "Done despite the broken servers."
    echo, slow, after, die, dead, spew1, spew2, unknown = results
    assert echo == (False, "hi")
    assert slow[0] and "did not answer within 5 s" in slow[1]
    assert after == (False, "after the hang")
    assert die[0] and "exited with code 5" in die[1]
    assert dead[0] and "is not running" in dead[1] and "/mcp restart fake" in dead[1]
    assert spew1 == (False, "first")
    # garbage on stdout is skipped or reported, never a crash or a hang
    assert spew2 == (False, "second") or (spew2[0] and "spew" in spew2[1]), spew2
    assert unknown[0] and "Unknown tool" in unknown[1]
    assert session_problems(agent.session.snapshot()) == []
    assert all(r.status == 200 for r in srv.requests)
    assert accounting_problems(sink.events, srv.requests) == ""
    print(f"\nspew after garbage: {spew2}")
    tally.add(count=5)
