"""Prefix size: the tokens every request of a role pays before any conversation — the system
prompt and the tool schemas — as the CLI sends them (the session opened through the CLI's own
assembly, :mod:`bench.shipped`), counted by the fake server (its deterministic tokenisation, ~4
characters per token). The first request also carries the first user message (the environment
facts ride there). Budgets: executor ≤ 3,000 tokens, planner ≤ 2,000; the Go original sends about
11k tokens to its executor and 15k to its planner."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from bench.common import print_table, verdict
from bench.shipped import first_requests

BUDGET = {"executor": 3_000, "planner": 2_000}
GO = {"executor": 11_000, "planner": 15_000}


def run_prefix(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reasonix-bench-") as tmp:
        out = asyncio.run(first_requests(Path(tmp)))
    rows = [
        [
            role,
            m["request_tokens"],
            m["system_prompt_tokens"],
            m["tool_schema_tokens"],
            m["tools"],
            f"≤{BUDGET[role]:,} {verdict(m['request_tokens'] <= BUDGET[role])}",
            f"~{GO[role]:,}",
        ]
        for role, m in out.items()
    ]
    print_table(
        "First request as the CLI sends it (fake-server tokens)",
        rows,
        ["role", "first request", "system", "tool schemas", "tools", "budget", "Go original"],
    )
    for role, m in out.items():
        print_table(
            f"{role} tools, tokens per schema",
            [[name, tokens] for name, tokens in m["per_tool"].items()],
            ["tool", "tokens"],
        )
    for role, m in out.items():
        m["tokens"] = m["request_tokens"]
        m["budget"] = BUDGET[role]
        m["within_budget"] = m["request_tokens"] <= BUDGET[role]
    return out
