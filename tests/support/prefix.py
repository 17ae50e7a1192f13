"""The fixed-prefix budget: what the first request of a role may cost before any conversation,
checked on what a fake server received (tokens as the fake server counts them)."""

from __future__ import annotations

from typing import Any

from reasonix.messages import canonical_json
from reasonix.testing.fake_server import RecordedRequest, tokenize

#: First-request budgets per role, with every capability available (issue 30).
BUDGET = {"executor": 3_000, "planner": 2_000}
#: No single tool schema may take more than this.
PER_TOOL = 200


def schema_tokens(tool: dict[str, Any]) -> int:
    return len(tokenize([canonical_json(tool)]))


def first_request(request: RecordedRequest) -> tuple[int, list[dict[str, Any]]]:
    """(prompt tokens, tool schemas) of a recorded request."""
    return request.prompt_tokens or 0, list(request.body.get("tools") or [])


def budget_problems(role: str, total: int, tools: list[dict[str, Any]]) -> list[str]:
    """What breaks ``role``'s budget for a first request of ``total`` tokens sending ``tools``
    (empty: within it), naming the tools."""
    sizes = sorted(((schema_tokens(t), t["function"]["name"]) for t in tools), reverse=True)
    problems = [
        f"tool {name} takes {n} tokens (at most {PER_TOOL} per tool)"
        for n, name in sizes
        if n > PER_TOOL
    ]
    if total > BUDGET[role]:
        listing = ", ".join(f"{name} {n}" for n, name in sizes)
        problems.append(
            f"the {role}'s first request takes {total} tokens (budget {BUDGET[role]}); "
            f"tools by size: {listing}"
        )
    return problems
