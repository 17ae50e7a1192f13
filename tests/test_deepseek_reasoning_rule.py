"""Reasoning on every turn: with tools in the request and thinking on, DeepSeek needs the
``reasoning_content`` of every earlier assistant message. The agent satisfies it when messages
enter the session, so later turns, failure paths and host-written messages never break it, and
the bytes of a message never change once sent. Against the strict FakeDeepSeekServer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reasonix.agent import Agent, AgentOptions
from reasonix.agent.compaction import SUMMARY_ACK
from reasonix.messages import AssistantMessage
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from tests.support.agents import counting_tools
from tests.support.wire import wire_prefix_violations

ProviderFactory = Callable[..., Any]


def assistant_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "assistant"]


async def test_second_turn_after_a_plain_answer_is_accepted(make_provider: ProviderFactory) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(
            Reply.text("Hello.", reasoning="A greeting."),
            Reply.text("Still here."),  # a turn that came back without reasoning
            Reply.call("lookup", {"key": "a"}, reasoning="Look it up."),
            Reply.text("a is known."),
        )
        agent = Agent(make_provider(srv), counting_tools(), options=AgentOptions(thinking=True))
        for text in ("hi", "are you there?", "look a up"):
            result = await agent.run(text)
            assert result.stop_reason == "done", result.error
        srv.assert_exhausted()
    assert [r.status for r in srv.requests] == [200] * 4
    sent = assistant_turns(srv.requests[-1].messages)
    assert [m["reasoning_content"] for m in sent] == ["A greeting.", "", "Look it up."]
    assert wire_prefix_violations(srv.requests) == []


async def test_every_stored_assistant_message_carries_reasoning(
    make_provider: ProviderFactory,
) -> None:
    async with FakeDeepSeekServer([Reply.text("ok")]) as srv:
        agent = Agent(make_provider(srv), counting_tools(), options=AgentOptions(thinking=False))
        await agent.run("hi")
    stored = [m for m in agent.session.snapshot() if isinstance(m, AssistantMessage)]
    assert stored == [AssistantMessage("ok", "")]


async def test_a_400_leaves_the_session_usable_on_the_next_turn(
    make_provider: ProviderFactory,
) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(
            Reply.text("First answer."),
            Reply.failing(Fault(status=400, message="Invalid request")),
            Reply.text("Recovered."),
        )
        agent = Agent(make_provider(srv), counting_tools(), options=AgentOptions(thinking=True))
        await agent.run("one")
        failed = await agent.run("two")
        assert failed.stop_reason == "error"
        again = await agent.run("three")
        srv.assert_exhausted()
    assert again.text == "Recovered."
    assert srv.requests[-1].status == 200
    # the failure note the host wrote carries the field like every other assistant message
    notes = [m for m in assistant_turns(srv.requests[-1].messages) if "failed" in m["content"]]
    assert notes and all(m["reasoning_content"] == "" for m in notes)


async def test_an_interrupted_turn_leaves_the_session_usable(
    make_provider: ProviderFactory,
) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(Reply.failing(Fault(stall_seconds=30)), Reply.text("Back."))
        agent = Agent(make_provider(srv), counting_tools(), options=AgentOptions(thinking=True))
        task = asyncio.create_task(agent.run("slow one"))
        while not srv.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        result = await agent.run("again")
    assert result.text == "Back."
    assert srv.requests[-1].status == 200
    assert len(srv.requests) == 2  # the user's interrupt was not retried


async def test_compaction_acknowledgement_carries_reasoning(
    make_provider: ProviderFactory,
) -> None:
    async with FakeDeepSeekServer() as srv:
        agent = Agent(
            make_provider(srv),
            counting_tools(),
            options=AgentOptions(thinking=True, compaction_keep_turns=1),
        )
        for i in range(3):
            srv.push(Reply.text(f"answer {i} " + "with some length " * 20))
            await agent.run(f"question {i} " + "padding " * 40)
        srv.push(Reply.text("Summary: three questions answered."), Reply.text("Next."))
        event = await agent.compact()
        assert event.accepted
        await agent.run("go on")
        srv.assert_exhausted()
    assert srv.requests[-1].status == 200
    acks = [m for m in assistant_turns(srv.requests[-1].messages) if m["content"] == SUMMARY_ACK]
    assert acks == [{"role": "assistant", "content": SUMMARY_ACK, "reasoning_content": ""}]
