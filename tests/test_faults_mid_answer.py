"""Fault injection after the first token: streams cut mid-reasoning, mid-text and
mid-tool-arguments, and silent stalls past the idle watchdog, at seeded points. Each must end in
a retried success with the partial output retracted, and leave the stored session identical to
the one a run without faults leaves (the real provider and Agent over loopback, strict fake
server, thinking on, tools in every request)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from reasonix.agent import Agent, AgentOptions
from reasonix.events import CollectingSink, ErrorEvent, OutputRetracted, RetryEvent
from reasonix.messages import Message, ToolCall
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.script import StreamPart
from reasonix.tools.registry import ToolRegistry, tool
from tests.support.faults import Tally, accounting_problems, session_problems, tally
from tests.support.wire import wire_prefix_violations

__all__ = ["tally"]

ProviderFactory = Callable[..., Any]
SEED = 20_261_201
CALL = ToolCall(
    "call_00_midmidmidmidmidmidmidmidmi",
    "lookup",
    json.dumps({"key": "alpha-" + "k" * 30, "note": "find the configured value, then report"}),
)
FIRST = Reply(
    content="Let me look that key up for you before I answer. ",
    reasoning="The user wants the value of alpha; I should look the key up first. " * 2,
    tool_calls=(CALL,),
)
ANSWER = Reply.text("The value is 42.", reasoning="The lookup answered 42.")


def _points() -> list[tuple[str, StreamPart, float]]:
    """Ten seeded fault points after the first token: three cuts in each part, one stall."""
    rng = random.Random(SEED)
    points: list[tuple[str, StreamPart, float]] = []
    parts: tuple[StreamPart, ...] = ("reasoning", "text", "tool_arguments")
    for part in parts:
        points += [("cut", part, round(rng.uniform(0.05, 0.95), 3)) for _ in range(3)]
    points.append(("stall", rng.choice(parts), round(rng.uniform(0.05, 0.95), 3)))
    return points


async def _no_sleep(delay: float) -> None:
    await asyncio.sleep(0)


async def _run(
    make_provider: ProviderFactory, fault: Fault | None
) -> tuple[list[Message], CollectingSink, FakeDeepSeekServer, list[str]]:
    ran: list[str] = []

    @tool(read_only=True)
    def lookup(key: str, note: str) -> str:
        """Look a key up."""
        ran.append(key)
        return "alpha = 42"

    script = [FIRST, ANSWER] if fault is None else [replace(FIRST, fault=fault), FIRST, ANSWER]
    sink = CollectingSink()
    async with FakeDeepSeekServer(script) as srv:
        # The watchdog must catch the stall, never a good answer slowed by a loaded machine.
        provider = make_provider(srv, max_retries=2, sleep=_no_sleep, idle_timeout=2.0)
        agent = Agent(
            provider, ToolRegistry([lookup]), options=AgentOptions(thinking=True), sink=sink
        )
        result = await agent.run("what is alpha?")
        assert result.stop_reason == "done", result.error
        srv.assert_exhausted()
    return list(agent.session.snapshot()), sink, srv, ran


@pytest.mark.slow
async def test_breaks_after_the_first_token_are_retried_and_retracted(
    make_provider: ProviderFactory, tally: Tally
) -> None:
    clean, _, _, _ = await _run(make_provider, None)
    failures: list[str] = []
    points = _points()
    for kind, part, at in points:
        fault = (
            Fault(cut_in=part, at=at)
            if kind == "cut"
            else Fault(stall_in=part, at=at, stall_seconds=30)
        )
        label = f"{kind} in {part} at {at}"
        problems: list[str] = []
        try:
            session, sink, srv, ran = await _run(make_provider, fault)
        except AssertionError as exc:
            failures.append(f"{label}: {exc}")
            tally.add(survived=False)
            continue
        retracted = sink.of_type(OutputRetracted)
        if len(sink.of_type(RetryEvent)) != 1 or len(retracted) != 1:
            problems.append(f"{len(retracted)} retractions / retries")
        elif retracted[0].partial_chars <= 0:
            problems.append("nothing was retracted although output had been shown")
        if sink.of_type(ErrorEvent):
            problems.append("an error was reported")
        if session != clean:
            problems.append("the stored session differs from a run without faults")
        if ran != [json.loads(CALL.arguments)["key"]]:
            problems.append(f"tool runs {ran}")
        problems += session_problems(session)
        if any(r.status != 200 for r in srv.requests):
            problems.append("the server rejected a request")
        if wire_prefix_violations(srv.requests):
            problems.append("a request was not a prefix extension of the previous one")
        wrong = accounting_problems(sink.events, srv.requests)
        if wrong:
            problems.append(wrong)
        tally.add(survived=not problems)
        if problems:
            failures.append(f"{label}: " + "; ".join(problems))
    print(f"\n{len(points)} faults after the first token: {len(points) - len(failures)} survived")
    assert len(points) == 10
    assert failures == []
