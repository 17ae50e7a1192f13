"""Shared pieces of the fault-injection suite (``tests/test_faults_*.py``); no tests here.

Each fault test reports how many faults it injected and how many the system survived (ended in
a retried success or a clear error, with a valid session) through ``tally``; the
``pytest_terminal_summary`` hook in conftest.py adds them up at the end of the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest

from reasonix.events import Event, UsageEvent
from reasonix.messages import AssistantMessage, Message, ToolMessage, Usage, UserMessage
from reasonix.testing import Fault
from reasonix.testing.fake_server import RecordedRequest


@dataclass
class Tally:
    """Faults injected and survived by one test (reported via the test's user_properties)."""

    item: pytest.Item
    injected: int = 0
    survived: int = 0

    def add(self, survived: bool = True, count: int = 1) -> None:
        self.injected += count
        self.survived += count if survived else 0
        self._publish()

    def _publish(self) -> None:
        props = [p for p in self.item.user_properties if p[0] != "faults"]
        props.append(("faults", (self.injected, self.survived)))
        self.item.user_properties[:] = props


@pytest.fixture
def tally(request: pytest.FixtureRequest) -> Tally:
    return Tally(request.node)


def session_problems(messages: Sequence[Message]) -> list[str]:
    """What makes a stored session invalid for the next request: an assistant tool call without
    its answer, a tool answer without its call, tool-call arguments that are not complete JSON,
    or a turn left on a dangling user message."""
    problems: list[str] = []
    open_calls: dict[str, str] = {}
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage):
            if open_calls:
                problems.append(f"message {i}: assistant before tool answers {sorted(open_calls)}")
                open_calls.clear()
            for call in m.tool_calls:
                try:
                    json.loads(call.arguments or "{}")
                except ValueError:
                    problems.append(f"message {i}: partial arguments stored: {call.arguments!r}")
                open_calls[call.id] = call.name
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                problems.append(f"message {i}: tool answer to unknown call {m.tool_call_id}")
            open_calls.pop(m.tool_call_id, None)
        elif open_calls:
            problems.append(f"message {i}: {type(m).__name__} before tool answers")
            open_calls.clear()
    if open_calls:
        problems.append(f"unanswered tool calls at the end: {sorted(open_calls)}")
    if messages and isinstance(messages[-1], UserMessage):
        problems.append("the session ends on a dangling user message")
    return problems


def usage_sum(usages: Iterable[Usage | None]) -> Usage:
    total = Usage()
    for u in usages:
        if u is not None:
            total = total + u
    return total


def succeeded(request: RecordedRequest) -> bool:
    """The server answered in full: status 200 and no injected fault beyond keep-alives
    (a stalled or capacity-failed answer is a failed attempt, whatever its status line)."""
    fault = request.reply.fault if request.reply is not None else None
    harmless = fault is None or fault == Fault(keepalive_lines=fault.keepalive_lines)
    return request.status == 200 and harmless


def reported_transient(request: RecordedRequest) -> bool:
    """The server finished with ``aborted`` / ``insufficient_system_resource``: a failed
    attempt, but its usage arrived on the finishing chunk (it may have been billed), so the
    client accounts it."""
    reply = request.reply
    if reply is None or request.status != 200 or request.usage is None:
        return False
    fault = reply.fault
    if fault is not None and (fault.stall_seconds > 0 or fault.cut_after_bytes is not None):
        return False
    transient = reply.finish_reason in ("aborted", "insufficient_system_resource")
    return transient or (fault is not None and fault.insufficient_resource)


def accounting_problems(
    events: Iterable[Event],
    requests: Iterable[RecordedRequest],
    also_reported: Iterable[Usage] = (),
) -> str:
    """Cost accounting is exact when the usage events add up to the usage the servers reported
    for the requests that succeeded (see :func:`succeeded`) or finished with a transient reason
    (see :func:`reported_transient`; a test adds
    ``also_reported`` for a faulted request whose usage chunk it knows got through). A request
    cut off before its usage arrived is counted as an estimate from what streamed (a usage event
    with ``estimated``): labelled apart, and left out of this exact comparison."""
    charged = usage_sum(e.usage for e in events if isinstance(e, UsageEvent) and not e.estimated)
    requests = list(requests)
    reported = usage_sum(
        [
            *(r.usage for r in requests if succeeded(r) or reported_transient(r)),
            *also_reported,
        ]
    )
    return "" if charged == reported else f"charged {charged} but servers reported {reported}"
