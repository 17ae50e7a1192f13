"""Context compaction over a long scripted session against the fake server."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from reasonix.agent import Agent, AgentOptions, TodoItem
from reasonix.agent.compaction import (
    CONTINUE_NOTE,
    REQUEST_NOTE,
    SUMMARY_HEADER,
    SUMMARY_INSTRUCTION,
    recent_cut,
)
from reasonix.events import CollectingSink, CompactionEvent, UsageEvent, UsageSource
from reasonix.messages import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from reasonix.testing import FakeDeepSeekServer, FunctionProvider, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.tools.registry import ToolRegistry, tool
from tests.support.agents import fake_tools, session_problems
from tests.support.wire import wire_prefix_violations

ProviderFactory = Callable[..., Any]


@tool(read_only=True)
def fetch(page: int) -> str:
    """Fetch a page of data."""
    return f"page {page}: " + ("lorem ipsum dolor sit amet " * 12)


def scripted(steps: int, summary: str) -> Callable[[RecordedRequest], Reply]:
    counter = itertools.count()

    def handler(request: RecordedRequest) -> Reply:
        last = request.messages[-1]
        if last["role"] == "user" and last["content"] == SUMMARY_INSTRUCTION:
            return Reply.text(summary)
        n = next(counter)
        if n < steps:
            return Reply.call("fetch", {"page": n}, reasoning=f"need page {n}")
        return Reply.text("All pages read.")

    return handler


def is_summary(request: RecordedRequest) -> bool:
    return request.messages[-1].get("content") == SUMMARY_INSTRUCTION


@pytest.mark.slow
async def test_compaction_fires_at_threshold_and_prefix_extensions_resume(
    make_provider: ProviderFactory,
) -> None:
    sink = CollectingSink()
    summary = "Goal: read all pages. Findings: pages are lorem ipsum. Next steps: keep reading."
    async with FakeDeepSeekServer(handler=scripted(40, summary), unit_tokens=64) as srv:
        agent = Agent(
            make_provider(srv),
            ToolRegistry([fetch]),
            options=AgentOptions(
                max_steps=60, context_window=5000, compaction_threshold=0.5, thinking=True
            ),
            sink=sink,
        )
        agent.seed_todo_state([TodoItem("Read every page", "in_progress", origin="planner")])
        agent.tool_state["plan_markdown"] = "1. Read every page"
        result = await agent.run("read the pages one at a time")
    assert result.text == "All pages read."
    events = sink.of_type(CompactionEvent)
    accepted = [e for e in events if e.accepted]
    assert accepted, [e.reason for e in events]
    assert all("prompt reached" in e.reason for e in accepted)
    # the trigger fired at the configured share: the request before each summary was >= 2500
    summary_idx = [i for i, r in enumerate(srv.requests) if is_summary(r)]
    assert len(summary_idx) == len(accepted)
    for i in summary_idx:
        prev = srv.requests[i - 1]
        assert prev.prompt_tokens is not None
        assert prev.prompt_tokens >= 2500
    # the summary request was attributed to COMPACTION and served from the cache: it is the
    # session's own prefix plus one instruction, so only the instruction (and rounding) misses
    sources = [e.source for e in sink.of_type(UsageEvent)]
    assert sources.count(UsageSource.COMPACTION) == len(summary_idx)
    instruction_tokens = len(SUMMARY_INSTRUCTION) // 4 + 8
    for i in summary_idx:
        usage = srv.requests[i].usage
        assert usage is not None
        assert usage.cache_miss_tokens <= instruction_tokens + 64
    # the todo state survived and the summary carries it and the plan
    assert [i.content for i in agent.todo_state.items] == ["Read every page"]
    msgs = agent.session.snapshot()
    assert isinstance(msgs[0], SystemMessage)
    assert isinstance(msgs[1], UserMessage)
    assert msgs[1].content.startswith(SUMMARY_HEADER)
    assert "Read every page" in msgs[1].content
    assert "1. Read every page" in msgs[1].content
    # after the last compaction, ordinary requests are prefix extensions again and hit the cache
    after = [r for r in srv.requests[summary_idx[-1] + 1 :] if not is_summary(r)]
    assert len(after) >= 2
    assert wire_prefix_violations(after) == []
    for prev, cur in itertools.pairwise(after):
        assert cur.usage is not None
        assert prev.stored_tokens_after_output is not None
        assert cur.usage.cache_hit_tokens == (prev.stored_tokens_after_output // 64) * 64
    # the first request after compaction paid for the new history: that is the planned break
    first_after = after[0]
    assert first_after.usage is not None
    assert first_after.usage.cache_miss_tokens > 0
    # the system prompt bytes never changed across the compaction
    assert len({r.messages[0]["content"] for r in srv.requests}) == 1
    print(
        f"\ncompaction: {len(accepted)} accepted; session {events[0].messages_before} -> "
        f"{accepted[0].messages_after} messages; {accepted[0].chars_replaced} chars replaced by "
        f"{accepted[0].chars_summary}"
    )


async def test_compaction_keeps_history_when_the_summary_is_not_smaller(
    make_provider: ProviderFactory,
) -> None:
    sink = CollectingSink()
    async with FakeDeepSeekServer(handler=scripted(6, "x" * 20_000)) as srv:
        agent = Agent(
            make_provider(srv),
            ToolRegistry([fetch]),
            options=AgentOptions(compaction_threshold=None),
            sink=sink,
        )
        await agent.run("read six pages")
        before = agent.session.snapshot()
        result = await agent.compact()
    assert not result.accepted
    assert "too large" in result.reason
    assert agent.session.snapshot() == before
    (event,) = sink.of_type(CompactionEvent)
    assert not event.accepted


async def test_manual_compaction_keeps_recent_turns_verbatim(
    make_provider: ProviderFactory,
) -> None:
    sink = CollectingSink()
    async with FakeDeepSeekServer(handler=scripted(0, "short summary")) as srv:
        agent = Agent(
            make_provider(srv),
            ToolRegistry([fetch]),
            options=AgentOptions(compaction_threshold=None, compaction_keep_turns=2),
            sink=sink,
        )
        for i in range(5):
            await agent.run(f"question {i} " + "padding " * 60)
        result = await agent.compact()
        assert result.accepted
        msgs = agent.session.snapshot()
        users = [m.content for m in msgs if isinstance(m, UserMessage)]
        assert users[0].startswith(SUMMARY_HEADER)
        assert users[1].startswith("question 3")
        assert users[2].startswith("question 4")
        assert isinstance(msgs[2], AssistantMessage)  # the acknowledgement keeps roles alternating
        await agent.run("question 5")
    assert srv.requests[-1].status == 200


def test_recent_cut_never_separates_tool_calls_from_results() -> None:
    call = ToolCall("c1", "fetch", "{}")
    msgs = (
        SystemMessage("s"),
        UserMessage("u"),
        *[
            m
            for i in range(6)
            for m in (
                AssistantMessage(tool_calls=(ToolCall(f"c{i}", "fetch", "{}"),)),
                ToolMessage(f"c{i}", "r"),
            )
        ],
        AssistantMessage(tool_calls=(call,)),
        ToolMessage("c1", "r"),
    )
    cut = recent_cut(msgs, keep_recent_turns=4, keep_recent_messages=4)
    assert isinstance(msgs[cut], AssistantMessage)
    assert isinstance(msgs[cut - 1], ToolMessage)
    assert len(msgs) - cut >= 4


def _long_turn_handler(summaries: list[str]) -> Any:
    def handler(request: ModelRequest) -> Reply:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content == SUMMARY_INSTRUCTION:
            return Reply.text(summaries.pop(0) if summaries else "short summary")
        return Reply.call("bash", {"command": f"echo {len(request.messages)} " + "x" * 300})

    return handler


async def test_compacting_inside_one_long_turn_keeps_its_request_verbatim() -> None:
    # Before: a cut inside the current turn replaced the user's request with the model's
    # paraphrase; the exact request (constraints, names, wording) was gone from the session.
    request = "Rename Foo to Bar in src/, but NEVER touch src/legacy/ or the public API."
    agent = Agent(
        FunctionProvider(_long_turn_handler([])),
        fake_tools(),
        options=AgentOptions(max_steps=12, compaction_threshold=None),
    )
    await agent.run(request)
    first = await agent.compact()
    assert first.accepted
    msgs = agent.session.snapshot()
    assert isinstance(msgs[1], UserMessage)
    assert msgs[1].content.startswith(SUMMARY_HEADER)
    assert f"{REQUEST_NOTE}\n{request}\n\n{CONTINUE_NOTE}" in msgs[1].content
    assert session_problems(msgs) == []
    # compacting again carries the same request, once, not the previous summary
    agent.options.max_steps = 12
    agent.provider = FunctionProvider(_long_turn_handler(["second summary"]))
    await agent.run(None)
    await agent.compact()
    content = agent.session.snapshot()[1].content
    assert "second summary" in content
    assert content.count(request) == 1
    assert content.count(SUMMARY_HEADER) == 1


async def test_a_refused_auto_compaction_is_not_retried_on_every_step() -> None:
    # Before: after a refusal the next step measured the prompt again and asked for another
    # summary, so every step past the threshold paid for a summary request it then refused.
    summaries = ["y" * 50_000] * 40  # always too large: always refused
    provider = FunctionProvider(_long_turn_handler(summaries))
    sink = CollectingSink()
    agent = Agent(
        provider,
        fake_tools(),
        options=AgentOptions(
            max_steps=16, context_window=20_000, compaction_threshold=0.1, compaction_keep_turns=1
        ),
        sink=sink,
    )
    await agent.run("echo many things")
    attempts = sink.of_type(CompactionEvent)
    assert attempts
    assert not any(e.accepted for e in attempts)
    assert len(attempts) <= 4, len(attempts)
    summary_requests = [
        r for r in provider.requests if r.messages[-1] == UserMessage(SUMMARY_INSTRUCTION)
    ]
    assert len(summary_requests) == len([e for e in attempts if "too large" in e.reason])
