"""What each role is told of the other: the bounded brief the planner sees of what the
executor did since it last planned, and the handoff the executor gets with a plan.

The brief is never the raw transcript: the executor's own replies, the commands it ran with
their outcome, and the tool calls that failed with their errors — cut to a budget, newest
kept, with a note of what was dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reasonix.control.plan import Plan
from reasonix.messages import AssistantMessage, Message, ToolMessage


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def executor_brief(
    messages: Sequence[Message], *, budget: int = 4000, item_chars: int = 300
) -> str:
    """Summarise ``messages`` (the executor's messages since the last plan)."""
    calls: dict[str, tuple[str, str]] = {}
    entries: list[str] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            if m.content.strip():
                entries.append(f"- executor said: {_clip(m.content, item_chars)}")
            for c in m.tool_calls:
                calls[c.id] = (c.name, c.arguments)
        elif isinstance(m, ToolMessage):
            name, args = calls.get(m.tool_call_id, (m.name, ""))
            if name == "bash":
                status = "FAILED" if m.is_error else "ok"
                tail = _clip(m.content[-item_chars:], item_chars)
                entries.append(f"- ran {_clip(args, 160)} → {status}: {tail}")
            elif m.is_error:
                entries.append(
                    f"- {name} {_clip(args, 160)} failed: {_clip(m.content, item_chars)}"
                )
    if sum(len(e) + 1 for e in entries) - 1 <= budget:
        return "\n".join(entries)
    # Some must go: keep the newest, leaving room for the note that says how many were dropped
    # (sized for the largest count it could name), so the whole brief stays within the budget.
    room = budget - len(_dropped_note(len(entries))) - 1
    kept: list[str] = []
    used = 0
    for entry in reversed(entries):
        if used + len(entry) + 1 > room:
            break
        kept.append(entry)
        used += len(entry) + 1
    kept.reverse()
    return "\n".join([_dropped_note(len(entries) - len(kept)), *kept])


def _dropped_note(count: int) -> str:
    return f"[{count} earlier entries dropped to fit the brief]"


def plan_handoff(plan: Plan, tool_names: Iterable[str]) -> str:
    """What the executor is told with a plan (at the tail of the turn's user message): the
    plan as its todo list, how to work through it, and the MCP tools it has."""
    mcp_tools = [n for n in tool_names if n.startswith("mcp__")]
    lines = [
        "A planner studied the task and wrote this plan; it is now your todo list "
        "(step 1 is in progress):",
        "",
        plan.to_markdown(),
        "",
        "How to proceed: treat the plan as guidance, not verified fact; check files before "
        "editing. Work through the steps in order. After each step run its verify command and "
        "call complete_step with the evidence: the host accepts only completions it saw "
        "evidence for. If a step is wrong, fix the list with todo_write and say why.",
    ]
    if mcp_tools:
        lines.append("MCP tools available: " + ", ".join(mcp_tools))
    return "\n".join(lines)
