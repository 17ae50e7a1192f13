"""Checks on what the fake server received: the cache-first invariants on the wire."""

from __future__ import annotations

import itertools
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


def pure_append_hits(requests: list[RecordedRequest], unit: int = 128) -> tuple[int, int]:
    """(cache hits, pure-append ideal) over consecutive requests of one role under the fake's
    measured formula: the ideal of request n is what request n-1 sent and received, in whole
    units, less the unit holding the end of the prompt."""
    actual = ideal = 0
    for prev, cur in itertools.pairwise(requests):
        assert prev.stored_tokens_after_output is not None and cur.prompt_tokens is not None
        units = min(prev.stored_tokens_after_output, cur.prompt_tokens) // unit
        units = min(units, max(0, cur.prompt_tokens // unit - 1))
        actual += cur.cache_hit_tokens or 0
        ideal += units * unit
    return actual, ideal
