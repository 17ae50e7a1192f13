"""The Agent loop end to end over loopback HTTP against FakeDeepSeekServer."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from reasonix.agent import Agent, AgentOptions, Session
from reasonix.events import CollectingSink, Event, TextDeltaEvent, UsageEvent
from reasonix.messages import AssistantMessage, ToolMessage
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.tools.registry import ToolRegistry, tool
from tests.support.agents import counting_tools
from tests.support.wire import wire_prefix_violations

ProviderFactory = Callable[..., Any]


async def test_multi_step_loop_with_thinking_replays_reasoning(
    make_provider: ProviderFactory,
) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(
            Reply.call("lookup", {"key": "a"}, reasoning="I should look up a first."),
            Reply.call("store", {"key": "b", "value": "1"}, reasoning="Now store b."),
            Reply.text("Stored b after looking up a.", reasoning="Done."),
        )
        agent = Agent(make_provider(srv), counting_tools(), options=AgentOptions(thinking=True))
        result = await agent.run("look up a then store b")
        srv.assert_exhausted()
    assert result.text == "Stored b after looking up a."
    assert all(r.status == 200 for r in srv.requests)
    # every later request carried the earlier tool-call turns' reasoning_content back
    last = srv.requests[-1].messages
    tool_turns = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    assert [m["reasoning_content"] for m in tool_turns] == [
        "I should look up a first.",
        "Now store b.",
    ]
    assert srv.requests[-1].body["thinking"] == {"type": "enabled"}


async def test_fake_server_rejects_a_tool_turn_without_reasoning_in_thinking_mode() -> None:
    """The negative control for the test above: the 400 the agent avoids is real."""
    async with FakeDeepSeekServer() as srv:
        body = {
            "model": "deepseek-v4-flash",
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_00_x",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_00_x", "content": "ok"},
            ],
            "tools": [{"type": "function", "function": {"name": "lookup"}}],
        }
        async with httpx.AsyncClient() as client:
            resp = await client.post(f"{srv.base_url}/chat/completions", json=body)
    assert resp.status_code == 400
    assert "reasoning_content" in resp.json()["error"]["message"]


async def test_parallel_read_only_calls_over_http(make_provider: ProviderFactory) -> None:
    a, b = asyncio.Event(), asyncio.Event()

    @tool(read_only=True, timeout=5)
    async def first() -> str:
        """Needs second to run at the same time."""
        a.set()
        await b.wait()
        return "first done"

    @tool(read_only=True, timeout=5)
    async def second() -> str:
        """Needs first to run at the same time."""
        b.set()
        await a.wait()
        return "second done"

    async with FakeDeepSeekServer() as srv:
        srv.push(Reply.calls(("first", {}), ("second", {})), Reply.text("both"))
        agent = Agent(make_provider(srv), ToolRegistry([first, second]))
        await agent.run("go")
    tool_msgs = [m for m in srv.requests[1].messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["first done", "second done"]


async def test_bad_arguments_unknown_tool_and_raising_tool_over_http(
    make_provider: ProviderFactory,
) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(
            Reply.calls(("lookup", '{"key": '), ("nope", {}), ("crash", {}), ("lookup", {"k": 1})),
            Reply.text("I see the errors."),
        )
        agent = Agent(make_provider(srv), counting_tools())
        result = await agent.run("try things")
    assert result.text == "I see the errors."
    sent = [m["content"] for m in srv.requests[1].messages if m["role"] == "tool"]
    assert "not valid JSON" in sent[0]
    assert "Unknown tool 'nope'" in sent[1]
    assert "RuntimeError: tool blew up" in sent[2]
    assert "missing required property 'key'" in sent[3]


async def test_step_limit_over_http(make_provider: ProviderFactory) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(*[Reply.call("lookup", {"key": f"k{i}"}) for i in range(4)])
        agent = Agent(make_provider(srv), counting_tools(), options=AgentOptions(max_steps=4))
        result = await agent.run("loop")
        srv.assert_exhausted()
    assert result.stop_reason == "step_limit"
    assert len(srv.requests) == 4


async def test_cancel_mid_stream_then_next_run_on_same_session(
    make_provider: ProviderFactory,
) -> None:
    streamed = asyncio.Event()

    class Watch(CollectingSink):
        def emit(self, event: Event) -> None:
            super().emit(event)
            if isinstance(event, TextDeltaEvent):
                streamed.set()

    async with FakeDeepSeekServer() as srv:
        srv.push(
            Reply(
                content="This answer will be cut off in the middle " * 4,
                fault=Fault(stall_seconds=30, stall_after_bytes=1200),
            ),
            Reply.text("Second answer."),
        )
        session = Session("executor")
        agent = Agent(make_provider(srv), counting_tools(), session, sink=Watch())
        task = asyncio.create_task(agent.run("first question"))
        await asyncio.wait_for(streamed.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not any(
            isinstance(m, AssistantMessage) and "cut off" in m.content for m in session.snapshot()
        )
        result = await agent.run("second question")
    assert result.text == "Second answer."
    roles = [m["role"] for m in srv.requests[-1].messages]
    assert roles == ["system", "user", "assistant", "user"]


async def test_cancel_mid_tool_then_next_run_on_same_session(
    make_provider: ProviderFactory,
) -> None:
    started = asyncio.Event()

    @tool
    async def hang() -> str:
        """Hangs."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with FakeDeepSeekServer() as srv:
        srv.push(Reply.calls(("hang", {}), ("hang", {})), Reply.text("recovered"))
        agent = Agent(make_provider(srv), ToolRegistry([hang]))
        task = asyncio.create_task(agent.run("hang please"))
        await asyncio.wait_for(started.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await agent.run("are you there?")
    assert result.text == "recovered"
    # the fake server validates that every tool call has a result: the request was accepted
    assert srv.requests[-1].status == 200
    tool_msgs = [m for m in srv.requests[-1].messages if m["role"] == "tool"]
    assert len(tool_msgs) == 2
    assert all("interrupted" in m["content"] for m in tool_msgs)


@pytest.mark.parametrize("unit", [64, 128])
@pytest.mark.slow
async def test_thirty_step_session_is_byte_stable_and_gets_every_possible_cache_hit(
    make_provider: ProviderFactory, unit: int
) -> None:
    steps = 30
    replies = []
    for i in range(steps - 1):
        if i % 3 == 2:
            replies.append(
                Reply.calls(
                    ("lookup", {"key": f"key-{i}"}),
                    ("lookup", {"key": f"other-{i}"}),
                    reasoning=f"step {i}: two lookups at once",
                )
            )
        else:
            replies.append(
                Reply.call("store", {"key": f"k{i}", "value": "v" * i}, reasoning=f"step {i}")
            )
    replies.append(Reply.text("All thirty steps done.", reasoning="wrap up"))
    sink = CollectingSink()
    async with FakeDeepSeekServer(replies, unit_tokens=unit) as srv:
        agent = Agent(
            make_provider(srv),
            counting_tools(),
            options=AgentOptions(max_steps=40, thinking=True),
            sink=sink,
        )
        result = await agent.run("do thirty steps")
        srv.assert_exhausted()
    assert result.steps == steps
    reqs = srv.requests
    assert len(reqs) == steps
    assert wire_prefix_violations(reqs) == []
    systems = {json.dumps(r.messages[0]) for r in reqs}
    tools = {json.dumps(r.body["tools"]) for r in reqs}
    assert len(systems) == 1
    assert len(tools) == 1
    # pure-append ideal: everything the previous request stored (input + output), unit-rounded
    actual = ideal = 0
    for prev, cur in itertools.pairwise(reqs):
        assert cur.usage is not None
        assert prev.stored_tokens_after_output is not None
        assert cur.prompt_tokens is not None
        best = min(prev.stored_tokens_after_output, cur.prompt_tokens)
        expected = (best // unit) * unit
        assert cur.usage.cache_hit_tokens == expected
        actual += cur.usage.cache_hit_tokens
        ideal += expected
    prompt_total = sum(r.usage.prompt_tokens for r in reqs if r.usage)
    print(
        f"\n30-step session (unit {unit}): cache hits {actual}/{ideal} of the pure-append "
        f"ideal ({actual / ideal:.1%}); {actual / prompt_total:.1%} of all prompt tokens"
    )
    assert actual == ideal
    usage_events = sink.of_type(UsageEvent)
    assert sum(e.usage.cache_hit_tokens for e in usage_events) == actual
    stored = [m for m in agent.session.snapshot() if isinstance(m, ToolMessage)]
    assert len(stored) == sum(len(r.tool_calls) for r in replies)
