"""Fault injection: error statuses, stalls and capacity failures, alone and in sequences.

Retryable failures (429, 500, 503, a silent stream past the idle watchdog, a finish with
``insufficient_system_resource``) must be retried — the events and the requests the server saw
say how often — and end in success or, once retries run out, a clear message. A 402 in the middle
of a turn is not retried and says to top up. Either way the session stays valid and cost
accounting stays exact: the usage events add up to the usage the server reported.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasonix.agent import Agent
from reasonix.control import Controller, Options
from reasonix.events import CollectingSink, ErrorEvent, RetryEvent, UsageEvent, UsageSource
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.tools.registry import ToolRegistry, tool
from tests.support.faults import Tally, accounting_problems, session_problems, tally
from tests.support.sleep import no_sleep

__all__ = ["tally"]

ProviderFactory = Callable[..., Any]


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key} = 42"


def _fail(**fault: Any) -> Reply:
    return Reply.failing(Fault(**fault))


@pytest.mark.slow
async def test_a_sequence_of_transient_failures_is_retried_then_succeeds(
    make_provider: ProviderFactory, tally: Tally
) -> None:
    faults = [
        _fail(status=429),
        _fail(status=500),
        _fail(status=503),
        Reply(fault=Fault(stall_seconds=60.0)),  # silent past the idle watchdog
        Reply(fault=Fault(insufficient_resource=True)),  # no capacity: finishes with no output
    ]
    async with FakeDeepSeekServer() as srv:
        srv.push(
            *faults,
            Reply.call("lookup", {"key": "a"}),
            # keep-alives while queued are not output and not a failure
            Reply(content="a is 42.", fault=Fault(keepalive_lines=5)),
        )
        sink = CollectingSink()
        # The watchdog must catch the stall, never a good answer slowed by a loaded machine.
        provider = make_provider(srv, max_retries=5, sleep=no_sleep, idle_timeout=2.0)
        agent = Agent(provider, ToolRegistry([lookup]), sink=sink)
        result = await agent.run("what is a?")
        srv.assert_exhausted()
    assert result.stop_reason == "done", result
    assert result.text == "a is 42."
    retries = sink.of_type(RetryEvent)
    assert [r.attempt for r in retries] == [1, 2, 3, 4, 5]
    reasons = [r.reason.split(":")[0] for r in retries]
    assert reasons == [
        "RateLimitError",
        "ServerError",
        "ServerError",
        "StreamIdleTimeout",
        "TransientFinishError",
    ], reasons
    # the server saw each failed attempt once, then the two successful requests
    assert [r.status for r in srv.requests] == [429, 500, 503, 200, 200, 200, 200]
    assert sink.of_type(ErrorEvent) == []
    assert session_problems(agent.session.snapshot()) == []
    assert accounting_problems(sink.events, srv.requests) == ""
    tally.add(count=len(faults) + 1)


async def test_retries_run_out_with_a_clear_message_and_the_session_stays_usable(
    make_provider: ProviderFactory, tally: Tally
) -> None:
    async with FakeDeepSeekServer() as srv:
        srv.push(
            Reply.call("lookup", {"key": "a"}),
            _fail(status=503),
            _fail(status=429),
            _fail(status=500),
            Reply.text("Back: a is 42."),
        )
        sink = CollectingSink()
        agent = Agent(
            make_provider(srv, max_retries=2, sleep=no_sleep), ToolRegistry([lookup]), sink=sink
        )
        result = await agent.run("what is a?")
        assert result.stop_reason == "error"
        assert result.text.startswith("The model request failed: Server error (HTTP 500")
        assert len(sink.of_type(RetryEvent)) == 2
        (error,) = sink.of_type(ErrorEvent)
        assert error.error_type == "ServerError"
        assert [r.status for r in srv.requests] == [200, 503, 429, 500]
        # the tool step before the failures is kept; nothing dangles
        assert session_problems(agent.session.snapshot()) == []
        again = await agent.run("try again")
        srv.assert_exhausted()
    assert again.text == "Back: a is 42."
    assert srv.requests[-1].status == 200
    assert accounting_problems(sink.events, srv.requests) == ""
    tally.add(count=3)


async def test_402_in_the_middle_of_a_dual_model_turn_is_not_retried_and_says_top_up(
    make_provider: ProviderFactory, tally: Tally, tmp_path: Path
) -> None:
    plan = Reply.call(
        "submit_plan",
        {
            "objective": "Look up a and b",
            "steps": [{"title": "Look up a", "verify": ""}, {"title": "Look up b", "verify": ""}],
        },
    )
    async with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        pl.push(Reply.call("lookup", {"key": "x"}), plan)
        ex.push(
            Reply.call("lookup", {"key": "a"}),
            Reply.call("lookup", {"key": "b"}),
            _fail(status=402),
            Reply.text("a and b are 42."),
        )
        sink = CollectingSink()
        ctrl = Controller(
            Options(
                executor_provider=make_provider(ex, "deepseek-v4-flash", sleep=no_sleep),
                planner_provider=make_provider(pl, "deepseek-v4-pro", sleep=no_sleep),
                tool_registry=ToolRegistry([lookup]),
                sink=sink,
            )
        )
        result = await ctrl.run_turn("plan first: look up a and b")
        assert result.stop_reason == "error"
        assert "Insufficient balance" in result.text and "top up" in result.text
        assert sink.of_type(RetryEvent) == []
        assert [r.status for r in ex.requests] == [200, 200, 402]
        assert session_problems(ctrl.executor.session.snapshot()) == []
        # per-role cost is exact for what succeeded before the 402
        by_role = ctrl.cost_summary()
        for role, server in (("executor", ex), ("planner", pl)):
            events = [e for e in sink.of_type(UsageEvent) if e.source == UsageSource(role)]
            assert accounting_problems(events, server.requests) == "", role
            assert by_role[role].requests == sum(1 for r in server.requests if r.status == 200)
        # after a top-up the same session continues and the server accepts it
        again = await ctrl.run_turn("continue")
        ex.assert_exhausted()
        pl.assert_exhausted()
    assert again.text == "a and b are 42."
    assert ex.requests[-1].status == 200
    tally.add()
