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
    kept: list[str] = []
    used = 0
    for entry in reversed(entries):
        if used + len(entry) + 1 > budget:
            break
        kept.append(entry)
        used += len(entry) + 1
    kept.reverse()
    dropped = len(entries) - len(kept)
    if dropped:
        kept.insert(0, f"[{dropped} earlier entries dropped to fit the brief]")
    return "\n".join(kept)
