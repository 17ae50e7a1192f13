"""The bounded brief the planner sees of what the executor did since it last planned.

Never the raw transcript: the executor's own replies, the commands it ran with their outcome,
and the tool calls that failed with their errors — cut to a budget, newest kept, with a note of
what was dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

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
