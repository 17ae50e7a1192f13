"""Fault injection: streams cut at many byte offsets.

One scripted answer (reasoning, text and a tool call) is cut after N bytes of its SSE body, for
seeded offsets spread over every part of the body. The real provider and Agent run over
loopback. Each run must end in a retried success, whether the cut came before any output reached
the caller or after (then the partial output is retracted first), and leave a valid session: no
partial tool call stored, every tool call answered, and the server accepts the next request.
Cost accounting stays exact.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest

from reasonix.agent import Agent
from reasonix.events import CollectingSink, ErrorEvent, OutputRetracted, RetryEvent
from reasonix.messages import AssistantMessage, ToolCall
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.tools.registry import ToolRegistry, tool
from tests.support.faults import Tally, accounting_problems, session_problems, tally
from tests.support.sleep import no_sleep

__all__ = ["tally"]

ProviderFactory = Callable[..., Any]

KEY = "alpha-" + "k" * 40
CALL = ToolCall(
    "call_00_cutcutcutcutcutcutcutcutcu",
    "lookup",
    json.dumps({"key": KEY, "note": "find the configured value, then report it"}),
)
FULL = Reply(
    content="Let me look that key up for you. ",
    reasoning="The user wants the value of alpha; I should look the key up first. " * 2,
    tool_calls=(CALL,),
)
ANSWER = "The value is 42."
FOLLOW_UP = "thanks, anything else?"
SEED = 20_251_130


def _regions(body: bytes) -> dict[str, tuple[int, int]]:
    """Byte ranges of the body's parts: preamble (role chunk), reasoning, text, tool call,
    finish (the finishing chunk, with usage) and done (the ``data: [DONE]`` line)."""
    starts: dict[str, int] = {}
    offset = 0
    for event in body.split(b"\n\n"):
        kind = "done" if event == b"data: [DONE]" else "finish"
        if event.startswith(b"data: {"):
            choice = json.loads(event[6:])["choices"][0]
            delta = choice["delta"]
            if choice["finish_reason"]:
                kind = "finish"
            elif delta.get("role"):
                kind = "preamble"
            elif delta.get("reasoning_content"):
                kind = "reasoning"
            elif delta.get("content"):
                kind = "text"
            elif delta.get("tool_calls"):
                kind = "tool_call"
        starts.setdefault(kind, offset)
        offset += len(event) + 2
    order = ["preamble", "reasoning", "text", "tool_call", "finish", "done"]
    bounds = [starts[k] for k in order] + [len(body)]
    return {k: (bounds[i], bounds[i + 1]) for i, k in enumerate(order)}


def _offsets(regions: dict[str, tuple[int, int]]) -> list[tuple[str, int]]:
    rng = random.Random(SEED)
    per_region = {
        "preamble": 6,
        "reasoning": 14,
        "text": 12,
        "tool_call": 16,
        "finish": 8,
        "done": 3,
    }
    picked = []
    for name, count in per_region.items():
        lo, hi = regions[name]
        picked += [(name, n) for n in sorted(rng.sample(range(lo, hi), min(count, hi - lo)))]
    return picked


@pytest.mark.slow
async def test_streams_cut_at_many_offsets_end_cleanly(
    make_provider: ProviderFactory, tally: Tally
) -> None:
    runs_of_tool: list[str] = []

    @tool(read_only=True)
    def lookup(key: str, note: str) -> str:
        """Look a key up."""
        runs_of_tool.append(key)
        return "alpha = 42"

    state: dict[str, Any] = {"cut": None, "n": 0}

    def handler(request: RecordedRequest) -> Reply:
        n, state["n"] = state["n"], state["n"] + 1
        last = request.messages[-1]
        if last["role"] == "tool":
            return Reply.text(ANSWER)
        if last.get("content") == FOLLOW_UP:
            return Reply.text("Nothing else.")
        if n == 0 and state["cut"] is not None:
            return replace(FULL, fault=Fault(cut_after_bytes=state["cut"]))
        return FULL

    async with FakeDeepSeekServer(handler=handler) as srv:
        # The uncut body, as the first request of a session gets it (same prompt, cold cache:
        # the same usage figures, so the same length every run).
        uncut = await Agent(make_provider(srv), ToolRegistry([lookup])).run("what is alpha?")
        assert uncut.text == ANSWER
        cold_usage = srv.requests[0].usage
        assert cold_usage is not None
        srv.reset_cache()
        async with httpx.AsyncClient() as client:
            response = await client.post(
                f"{srv.base_url}/chat/completions",
                content=srv.requests[0].raw_body,
                headers={"content-type": "application/json"},
            )
        full_body = response.content
        regions = _regions(full_body)
        first_output = regions["reasoning"][0]
        # output reaches the caller once the first reasoning event arrived whole
        shown_from = full_body.index(b"\n\n", first_output) + 2
        offsets = _offsets(regions)
        assert len(offsets) >= 50

        outcomes: Counter[str] = Counter()
        failures: list[str] = []
        for region, cut in offsets:
            srv.reset_cache()
            state.update(cut=cut, n=0)
            runs_of_tool.clear()
            start = len(srv.requests)
            sink = CollectingSink()
            provider = make_provider(srv, max_retries=2, sleep=no_sleep)
            agent = Agent(provider, ToolRegistry([lookup]), sink=sink)
            result = await agent.run("what is alpha?")
            retries = len(sink.of_type(RetryEvent))
            retracted = len(sink.of_type(OutputRetracted))
            problems: list[str] = []
            if result.stop_reason == "done":
                outcome = "retried success" if retries else "complete answer kept"
                if result.text != ANSWER or runs_of_tool != [KEY]:
                    problems.append(f"wrong result {result.text!r}, tool runs {runs_of_tool}")
                if not retries and cut < regions["done"][0]:
                    problems.append("succeeded without a retry though cut before the finish")
                output_shown = shown_from <= cut < regions["done"][0]
                if retries and retracted != (1 if output_shown else 0):
                    problems.append(f"{retracted} retractions for a cut after {cut} bytes")
            elif result.stop_reason == "error":
                outcome = "clear error"
                (err,) = sink.of_type(ErrorEvent)
                clear = ("StreamCutError", "MalformedChunkError")
                if not result.error or err.error_type not in clear:
                    problems.append(f"unclear error {err.error_type}: {result.error}")
                if cut < first_output:
                    problems.append("no retry although no output had reached the caller")
                if cut >= regions["done"][0]:
                    problems.append("a complete answer (finish and usage received) was dropped")
                if runs_of_tool:
                    problems.append("a tool ran from a half-streamed call")
            else:
                outcome = result.stop_reason
                problems.append(f"unexpected stop {result.stop_reason}")
            stored_calls = [
                c
                for m in agent.session.snapshot()
                if isinstance(m, AssistantMessage)
                for c in m.tool_calls
            ]
            if any(c != CALL for c in stored_calls):
                problems.append(f"a partial tool call was stored: {stored_calls}")
            problems += session_problems(agent.session.snapshot())
            follow = await agent.run(FOLLOW_UP)
            if follow.stop_reason != "done":
                problems.append(f"the next request failed: {follow.error}")
            mine = srv.requests[start:]
            if any(r.status != 200 for r in mine):
                bad = [(r.status, r.error) for r in mine if r.status != 200]
                problems.append(f"server rejected: {bad}")
            # a cut inside the [DONE] line comes after the usage chunk: that usage was reported
            sent_usage = [cold_usage] if region == "done" else []
            wrong = accounting_problems(sink.events, mine, sent_usage)
            if wrong:
                problems.append(wrong)
            outcomes[f"{region}: {outcome}"] += 1
            tally.add(survived=not problems)
            if problems:
                failures.append(f"cut at {cut} ({region}): " + "; ".join(problems))
    summary = dict(sorted(outcomes.items()))
    print(f"\n{len(offsets)} cuts over a {len(full_body)}-byte body: {summary}")
    assert failures == []
    # every region was exercised, and both outcomes occurred
    assert {k.split(":")[0] for k in outcomes} == set(regions)
    assert any("retried success" in k for k in outcomes)
    assert not any("clear error" in k for k in outcomes)  # mid-answer breaks are retried too
    assert outcomes["done: complete answer kept"] == 3
