"""The Agent loop with in-process scripted providers (fast; HTTP end-to-end tests live in
test_agent_e2e.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reasonix.agent import Agent, AgentOptions, Session, TodoItem
from reasonix.events import (
    CacheMissExplained,
    CollectingSink,
    ToolResultEvent,
    TurnEnded,
    UsageEvent,
    UsageSource,
)
from reasonix.messages import (
    AssistantMessage,
    ModelRequest,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolMessage,
    Usage,
    UserMessage,
)
from reasonix.providers.models import ModelInfo, Prices
from reasonix.testing import Reply, ScriptedProvider
from reasonix.testing.providers import stream_reply
from reasonix.tools.registry import Effect, ToolContext, ToolRegistry, ToolResult, tool
from tests.support.agents import session_problems


def make_tools(log: list[str]) -> ToolRegistry:
    @tool
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        log.append(f"add {a} {b}")
        return str(a + b)

    @tool
    def explode() -> str:
        """Always raises."""
        raise ValueError("disk on fire")

    @tool
    def write(path: str, text: str) -> ToolResult:
        """Pretend to write a file."""
        log.append(f"write {path}")
        return ToolResult(f"wrote {path}", effects=(Effect("write", path, str(hash(text))),))

    return ToolRegistry([add, explode, write])


def messages_roles(session: Session) -> list[str]:
    return [m.role for m in session.snapshot()]


async def test_multi_step_tool_loop_appends_everything_in_order() -> None:
    log: list[str] = []
    provider = ScriptedProvider(
        [
            Reply.call("add", {"a": 2, "b": 3}, reasoning="need to add"),
            Reply.call("add", {"a": 5, "b": 10}),
            Reply.text("The answer is 15."),
        ]
    )
    sink = CollectingSink()
    agent = Agent(provider, make_tools(log), Session("executor"), AgentOptions(), sink)
    result = await agent.run("what is 2+3+10?")
    provider.assert_exhausted()
    assert result.text == "The answer is 15."
    assert result.stop_reason == "done"
    assert result.steps == 3
    assert log == ["add 2 3", "add 5 10"]
    assert messages_roles(agent.session) == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first_call = agent.session.snapshot()[2]
    assert isinstance(first_call, AssistantMessage)
    assert first_call.reasoning_content == "need to add"
    tool_msg = agent.session.snapshot()[3]
    assert isinstance(tool_msg, ToolMessage)
    assert tool_msg.content == "5"
    assert tool_msg.tool_call_id == first_call.tool_calls[0].id
    # every request carried the same tool schemas and a growing history
    sizes = [len(r.messages) for r in provider.requests]
    assert sizes == [2, 4, 6]
    assert len(sink.of_type(UsageEvent)) == 3
    assert all(e.source is UsageSource.EXECUTOR for e in sink.of_type(UsageEvent))
    assert sink.kinds()[0] == "turn_started"
    assert sink.kinds()[-1] == "turn_ended"


async def test_model_mistakes_are_reported_back_and_the_loop_continues() -> None:
    log: list[str] = []
    provider = ScriptedProvider(
        [
            Reply.calls(
                ("add", '{"a": 1, "b": '),  # broken JSON
                ("add", {"a": "one", "b": 2}),  # schema mismatch
                ("nope", {}),  # unknown tool
                ("explode", {}),  # raising tool
            ),
            Reply.text("sorry, recovered"),
        ]
    )
    sink = CollectingSink()
    agent = Agent(provider, make_tools(log), options=AgentOptions(), sink=sink)
    result = await agent.run("go")
    assert result.text == "sorry, recovered"
    results = [m for m in agent.session.snapshot() if isinstance(m, ToolMessage)]
    assert [r.is_error for r in results] == [True, True, True, True]
    assert "not valid JSON" in results[0].content
    assert "expected integer" in results[1].content
    assert "Unknown tool 'nope'" in results[2].content
    assert "ValueError: disk on fire" in results[3].content
    # the second request shows the model all four errors
    second = provider.requests[1].messages
    assert [m.role for m in second[-4:]] == ["tool"] * 4
    assert log == []


async def test_step_limit_ends_the_turn_with_a_clear_message() -> None:
    provider = ScriptedProvider([Reply.call("add", {"a": i, "b": 1}) for i in range(3)])
    agent = Agent(provider, make_tools([]), options=AgentOptions(max_steps=3))
    result = await agent.run("loop forever")
    assert result.stop_reason == "step_limit"
    assert "step limit (3)" in result.text
    assert isinstance(agent.session.last, ToolMessage)
    provider.push(Reply.text("ok, stopping"))
    again = await agent.run("continue")
    assert again.text == "ok, stopping"


async def test_read_only_calls_run_concurrently_and_writers_one_at_a_time() -> None:
    a_started, b_started = asyncio.Event(), asyncio.Event()
    active_writers = 0
    max_active_writers = 0

    @tool(read_only=True, timeout=5)
    async def probe_a() -> str:
        """Waits for probe_b to start: only possible if both run at once."""
        a_started.set()
        await b_started.wait()
        return "a"

    @tool(read_only=True, timeout=5)
    async def probe_b() -> str:
        """Waits for probe_a to start."""
        b_started.set()
        await a_started.wait()
        return "b"

    @tool
    async def writer(n: int) -> str:
        """A writer."""
        nonlocal active_writers, max_active_writers
        active_writers += 1
        max_active_writers = max(max_active_writers, active_writers)
        await asyncio.sleep(0.01)
        active_writers -= 1
        return f"w{n}"

    provider = ScriptedProvider(
        [
            Reply.calls(
                ("probe_a", {}),
                ("probe_b", {}),
                ("writer", {"n": 1}),
                ("writer", {"n": 2}),
            ),
            Reply.text("done"),
        ]
    )
    agent = Agent(provider, ToolRegistry([probe_a, probe_b, writer]))
    await agent.run("go")
    results = [m.content for m in agent.session.snapshot() if isinstance(m, ToolMessage)]
    assert results == ["a", "b", "w1", "w2"]  # call order, both probes succeeded together
    assert max_active_writers == 1


class BlockingOnceProvider:
    """First request streams some text then blocks forever; later requests are scripted."""

    def __init__(self, later: list[Reply]) -> None:
        self.inner = ScriptedProvider(later)
        self.blocked = asyncio.Event()
        self.first = True

    @property
    def model(self) -> str:
        return "blocking"

    @property
    def info(self) -> ModelInfo:
        return ModelInfo("blocking")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self.first:
            self.first = False
            yield TextDelta("partial answ")
            self.blocked.set()
            await asyncio.Event().wait()
        async for event in self.inner.stream(request):
            yield event


async def test_cancel_mid_stream_keeps_the_partial_answer_marked_and_next_run_works() -> None:
    provider = BlockingOnceProvider([Reply.text("fresh answer")])
    sink = CollectingSink()
    agent = Agent(provider, make_tools([]), sink=sink)
    task = asyncio.create_task(agent.run("question one"))
    await provider.blocked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    msgs = agent.session.snapshot()
    assert [m.role for m in msgs] == ["system", "user", "assistant"]
    # What the user saw stream is kept, marked as cut, so the model knows what it said.
    assert "partial answ" in msgs[-1].content
    assert msgs[-1].content.endswith("[interrupted by the user]")
    assert sink.of_type(TurnEnded)[-1].reason == "cancelled"
    result = await agent.run("question two")
    assert result.text == "fresh answer"
    # the next request alternates roles correctly
    assert [m.role for m in provider.inner.requests[0].messages] == [
        "system",
        "user",
        "assistant",
        "user",
    ]


async def test_cancel_mid_tool_gives_every_call_a_result_and_next_run_works() -> None:
    started = asyncio.Event()

    @tool(read_only=True)
    async def quick() -> str:
        """Returns at once."""
        return "quick result"

    @tool
    async def hang() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    provider = ScriptedProvider(
        [Reply.calls(("quick", {}), ("hang", {}), ("quick", {})), Reply.text("after")]
    )
    agent = Agent(provider, ToolRegistry([quick, hang]))
    task = asyncio.create_task(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    msgs = agent.session.snapshot()
    assistant = msgs[2]
    assert isinstance(assistant, AssistantMessage)
    results = [m for m in msgs if isinstance(m, ToolMessage)]
    assert [r.tool_call_id for r in results] == [c.id for c in assistant.tool_calls]
    assert results[0].content == "quick result"
    assert "interrupted" in results[1].content
    assert "interrupted" in results[2].content
    result = await agent.run("try again")
    assert result.text == "after"


async def test_host_progress_signature_tracks_only_new_progress() -> None:
    log: list[str] = []
    tools = make_tools(log)
    provider = ScriptedProvider(
        [
            Reply.call("write", {"path": "a.txt", "text": "one"}),
            Reply.call("write", {"path": "a.txt", "text": "one"}),  # same write, same result
            Reply.call("explode", {}),  # a failure
            Reply.call("add", {"a": 1, "b": 2}),  # a new successful call result
            Reply.call("add", {"a": 1, "b": 2}),  # repeated identical call
            Reply.text("done"),
        ]
    )
    signatures: list[str] = []
    agent = Agent(provider, tools)
    start = agent.host_progress_signature()

    def on_step(info: object) -> str:
        signatures.append(agent.host_progress_signature())
        return "continue"

    await agent.run("go", on_step=on_step)  # type: ignore[arg-type]
    s_write, s_same_write, s_fail, s_add, s_add_again = signatures
    assert s_write != start
    assert s_same_write == s_write
    assert s_fail == s_write
    assert s_add != s_write
    assert s_add_again == s_add
    # a todo completion is progress too
    agent.seed_todo_state([TodoItem("step one", "in_progress", origin="planner")])
    before = agent.host_progress_signature()
    agent.todo_state.set_status("1", "completed")
    assert agent.host_progress_signature() != before


async def test_identical_calls_repeated_are_refused() -> None:
    log: list[str] = []
    provider = ScriptedProvider(
        [Reply.call("add", {"a": 1, "b": 1}) for _ in range(3)] + [Reply.text("ok")]
    )
    sink = CollectingSink()
    agent = Agent(provider, make_tools(log), sink=sink)
    await agent.run("go")
    assert log == ["add 1 1", "add 1 1"]
    last_result = sink.of_type(ToolResultEvent)[-1]
    assert last_result.is_error
    assert "same arguments" in last_result.content


async def test_tool_output_is_capped_once_on_entry() -> None:
    @tool(read_only=True)
    def big() -> str:
        """Lots of output."""
        return "x" * 10_000

    provider = ScriptedProvider([Reply.call("big", {}), Reply.text("ok")])
    agent = Agent(provider, ToolRegistry([big]), options=AgentOptions(max_tool_output_chars=500))
    await agent.run("go")
    stored = next(m for m in agent.session.snapshot() if isinstance(m, ToolMessage))
    assert len(stored.content) < 700
    assert "output capped" in stored.content
    sent = provider.requests[1].messages[-1]
    assert sent == stored


def test_session_json_round_trip_is_lossless() -> None:
    provider = ScriptedProvider(
        [Reply.call("add", {"a": 1, "b": 2}, reasoning="think"), Reply.text("3")]
    )
    agent = Agent(provider, make_tools([]))
    agent.run_sync("sum")
    restored = Session.from_json(agent.session.to_json())
    assert restored.id == agent.session.id
    assert restored.snapshot() == agent.session.snapshot()
    wire = [json.dumps(m.to_wire()) for m in agent.session.snapshot()]
    assert [json.dumps(m.to_wire()) for m in restored.snapshot()] == wire


async def test_usage_is_priced_and_cache_drop_is_explained() -> None:
    prices = Prices(hit=1.0, miss=10.0, output=100.0)
    provider = ScriptedProvider(
        [
            Reply(content="", usage=Usage(1000, 0, 1000, 10, 0), tool_calls=()),
            Reply(content="", usage=Usage(2000, 0, 2000, 10, 0)),
        ],
        info=ModelInfo("m", prices=prices),
    )
    sink = CollectingSink()
    agent = Agent(provider, ToolRegistry(), sink=sink)
    first = await agent.run("one")
    assert first.cost == pytest.approx((1000 * 10 + 10 * 100) / 1e6)
    await agent.run("two")  # prompt grew but the server reported no hits
    explained = sink.of_type(CacheMissExplained)
    assert len(explained) == 1
    assert explained[0].changed == ("unknown",)
    assert explained[0].expected_hit_tokens == 1000


async def test_cache_miss_names_a_changed_system_prompt() -> None:
    provider = ScriptedProvider(
        [
            Reply(content="a", usage=Usage(1000, 0, 1000, 1, 0)),
            Reply(content="b", usage=Usage(1100, 0, 1100, 1, 0)),
        ]
    )
    sink = CollectingSink()
    session = Session("s")
    agent = Agent(provider, ToolRegistry(), session, sink=sink)
    await agent.run("one")
    # Simulate a buggy host that edits the system prompt in place (what we must never do).
    msgs = list(session.snapshot())
    msgs[0] = SystemMessage("a different system prompt")
    session._messages = msgs
    await agent.run("two")
    (event,) = sink.of_type(CacheMissExplained)
    assert event.changed == ("system",)


async def test_provider_error_ends_turn_cleanly_and_session_stays_valid() -> None:
    from reasonix.errors import InsufficientBalanceError

    provider = ScriptedProvider(
        [InsufficientBalanceError("top up your balance", status=402), Reply.text("back")]
    )
    sink = CollectingSink()
    agent = Agent(provider, ToolRegistry(), sink=sink)
    result = await agent.run("hi")
    assert result.stop_reason == "error"
    assert "top up" in result.text
    assert isinstance(agent.session.last, AssistantMessage)
    assert (await agent.run("hi again")).text == "back"
    roles = [m.role for m in agent.session.snapshot()]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert not any(isinstance(m, UserMessage) and m is None for m in agent.session.snapshot())


def test_agent_options_workspace_reaches_tools(tmp_path: Path) -> None:
    seen: list[Path] = []

    @tool(read_only=True)
    def where(ctx: ToolContext) -> str:
        """Report the workspace."""
        seen.append(ctx.workspace)
        return str(ctx.workspace)

    provider = ScriptedProvider([Reply.call("where", {}), Reply.text("ok")])
    agent = Agent(provider, ToolRegistry([where]), options=AgentOptions(workspace=tmp_path))
    agent.run_sync("where am I")
    assert seen == [tmp_path]


async def test_stream_reply_helper_yields_complete_calls_after_arguments() -> None:
    reply = Reply.call("add", {"a": 1, "b": 2})
    events = [e async for e in stream_reply(ModelRequest(messages=()), reply)]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolCallComplete") > kinds.index("ToolCallArgumentsDelta")
    assert kinds[-1] == "StreamFinished"


async def test_an_unexpected_exception_leaves_no_dangling_user_message() -> None:
    class Broken:
        model = "m"
        info = ModelInfo("m")

        async def stream(self, request: ModelRequest) -> Any:
            raise RuntimeError("provider bug")
            yield  # pragma: no cover

    agent = Agent(Broken())  # type: ignore[arg-type]
    try:
        await agent.run("hello")
    except RuntimeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("the exception must propagate")
    assert session_problems(agent.session.snapshot()) == []
    assert [m.role for m in agent.session.snapshot()] == ["system", "user", "assistant"]
