"""Checks on what the fake server received: the cache-first invariants on the wire."""

from __future__ import annotations

import json

from reasonix.testing.fake_server import RecordedRequest


def wire_prefix_violations(requests: list[RecordedRequest]) -> list[str]:
    """Every request's serialised messages must be a byte-exact prefix of the next one's, and
    the tool schemas identical. Returns what broke (empty = invariant holds)."""
    problems = []
    for i in range(1, len(requests)):
        prev, cur = requests[i - 1].body, requests[i].body
        prev_msgs = [json.dumps(m, sort_keys=False) for m in prev["messages"]]
        cur_msgs = [json.dumps(m, sort_keys=False) for m in cur["messages"]]
        if cur_msgs[: len(prev_msgs)] != prev_msgs:
            problems.append(f"request {i} is not a prefix extension of request {i - 1}")
        if json.dumps(prev.get("tools")) != json.dumps(cur.get("tools")):
            problems.append(f"tool schemas changed at request {i}")
    return problems
