"""Context compaction: the one planned break of a session's cache prefix.

When a session's prompt reaches a share of the model's context window (or on request), the
history is replaced by: the unchanged system prompt, a structured summary written by the
session's own model (usage source ``COMPACTION``), the current todo list and plan, and the most
recent turns verbatim. The summary request itself is the session's current prefix plus one
instruction, so it is served from the cache. The result is accepted only if it is much smaller
than what it replaces; otherwise the history is kept and the refusal reported. Either way an
event says what happened; afterwards requests are prefix extensions again.

Superseded tool outputs go first: in the recent steps kept verbatim, the output of a call made
again later (a file read again, a test re-run) is replaced by a one-line note. When to compact
by price is :mod:`reasonix.agent.economics`; :func:`economic_inputs` measures a session for it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Protocol

from reasonix.agent.economics import DEFAULT_SUMMARY_TOKENS, EconomicInputs, coming_steps
from reasonix.agent.session import Session
from reasonix.events import CompactionEvent, NoticeEvent, Sink, UsageSource
from reasonix.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    StreamFinished,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
    wire_messages,
)
from reasonix.providers.base import Provider
from reasonix.tools.state import StateKey

SUMMARY_INSTRUCTION = """\
Write a compact summary of the conversation so far so that work can continue without it.
Use these headings: Goal; Decisions and findings; Files changed (path: what changed);
Commands run and results that matter; Open problems; Next steps. Be specific (paths, names,
error messages); drop chit-chat and anything already superseded. Do not call tools."""

SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted]"
SUMMARY_ACK = "Understood. I will continue from this summary."
CONTINUE_NOTE = "The latest steps follow verbatim; continue the current task."
REQUEST_NOTE = "The request being worked on, verbatim:"
PLAN_STATE_KEY = StateKey("plan_markdown", str)
SUPERSEDED_NOTE = "[superseded: the same call ran again later; its newer output follows]"
#: Characters per token, for estimating what a compaction would leave (the fake server's and,
#: roughly, DeepSeek's rate for code and English).
CHARS_PER_TOKEN = 4
#: Messages kept verbatim by an economic compaction (the cut is made inside the current turn).
ECONOMIC_KEEP_MESSAGES = 6


class CompactionHost(Protocol):
    """What compaction needs from the agent whose session it compacts (an
    :class:`~reasonix.agent.Agent` is one): its session, its provider and its own request
    shape, a way to account the summary's usage, and the host state to carry over."""

    @property
    def role(self) -> str: ...

    @property
    def session(self) -> Session: ...

    @property
    def provider(self) -> Provider: ...

    @property
    def sink(self) -> Sink: ...

    def build_request(
        self, messages: Sequence[Message] | None = None, *, tool_choice: str | None = None
    ) -> ModelRequest:
        """The agent's request (same model, tools and options) over ``messages``."""
        ...

    def account_usage(
        self, model: str, usage: Usage | None, source: UsageSource | None = None
    ) -> float: ...

    def carried_state(self) -> list[str]:
        """Host state the summary must keep (the todo list, the plan), one block each."""
        ...


def _chars(messages: tuple[Message, ...] | list[Message]) -> int:
    return len(json.dumps(wire_messages(messages), ensure_ascii=False))


def recent_cut(
    messages: tuple[Message, ...], keep_recent_turns: int, keep_recent_messages: int = 8
) -> int:
    """Index of the first message kept verbatim.

    Normally the start of the K-th last user turn. When there are not that many turns (one
    long turn of tool calls), an assistant message at least ``keep_recent_messages`` from the
    end whose predecessor closes a step (a tool result or a plain answer), so a tool call is
    never separated from its results. Returns the start index when nothing can be cut."""
    start = 1 if messages and isinstance(messages[0], SystemMessage) else 0
    user_idx = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    if keep_recent_turns > 0 and len(user_idx) > keep_recent_turns:
        return user_idx[-keep_recent_turns]
    for i in range(len(messages) - keep_recent_messages, start + 1, -1):
        m, prev = messages[i], messages[i - 1]
        if isinstance(m, AssistantMessage) and not isinstance(prev, UserMessage | SystemMessage):
            if isinstance(prev, AssistantMessage) and prev.tool_calls:
                continue
            return i
    return start


def economic_keep_turns(messages: tuple[Message, ...]) -> int:
    """The user turns an economic compaction keeps: none (the cut falls inside the current
    turn, :data:`ECONOMIC_KEEP_MESSAGES` from the end) when a step boundary is there to cut at;
    otherwise (short conversational turns) the last turn."""
    start = 1 if messages and isinstance(messages[0], SystemMessage) else 0
    return 0 if recent_cut(messages, 0, ECONOMIC_KEEP_MESSAGES) > start else 1


def economic_inputs(
    host: CompactionHost,
    *,
    prompt_tokens: int,
    schema_chars: int,
    steps_since_reset: int,
    summary_tokens: int | None,
    hit: float,
    miss: float,
    output: float,
) -> EconomicInputs:
    """The inputs of :func:`reasonix.agent.economics.economic_verdict` for ``host``'s session
    now: the size after an economic compaction is estimated from what it would keep (system
    prompt, tool schemas, the recent messages, the carried todo list and plan, the summary)."""
    messages = host.session.snapshot()
    cut = recent_cut(messages, economic_keep_turns(messages), ECONOMIC_KEEP_MESSAGES)
    system = [m for m in messages[:1] if isinstance(m, SystemMessage)]
    kept_chars = _chars([*system, *messages[cut:]]) + schema_chars
    kept_chars += sum(len(part) for part in host.carried_state())
    summary = summary_tokens if summary_tokens is not None else DEFAULT_SUMMARY_TOKENS
    return EconomicInputs(
        prompt_tokens=prompt_tokens,
        after_tokens=kept_chars // CHARS_PER_TOKEN + summary,
        summary_tokens=summary,
        coming_steps=coming_steps(steps_since_reset),
        hit=hit,
        miss=miss,
        output=output,
    )


def elide_superseded(kept: Sequence[Message]) -> list[Message]:
    """``kept`` with the output of every call made again later (same tool, same arguments)
    replaced by :data:`SUPERSEDED_NOTE`."""
    calls: dict[str, str] = {}
    for m in kept:
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                calls[c.id] = f"{c.name}\0{c.arguments}"
    last: dict[str, int] = {}
    for i, m in enumerate(kept):
        if isinstance(m, ToolMessage) and m.tool_call_id in calls:
            last[calls[m.tool_call_id]] = i
    out: list[Message] = []
    for i, m in enumerate(kept):
        key = calls.get(m.tool_call_id) if isinstance(m, ToolMessage) else None
        if isinstance(m, ToolMessage) and key is not None and last[key] != i:
            m = dataclasses.replace(m, content=SUPERSEDED_NOTE)
        out.append(m)
    return out


async def compact_session(
    agent: CompactionHost,
    *,
    keep_recent_turns: int = 4,
    keep_recent_messages: int = 8,
    max_ratio: float = 0.5,
    reason: str = "manual",
) -> CompactionEvent:
    """Compact ``agent``'s session in place (see the module docstring). The returned event
    (also emitted on the agent's sink) says whether it happened and why."""
    messages = agent.session.snapshot()
    before = len(messages)
    system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
    start = 1 if system else 0
    cut = recent_cut(messages, keep_recent_turns, keep_recent_messages)
    # Recent turns must start at a user message; never split a tool call from its results.
    middle = messages[start:cut]
    if len(middle) < 2:
        return _report(agent, False, "nothing old enough to compact", before, before)

    # The agent's own request shape (same tools): the summary request reuses the cached prefix.
    request = agent.build_request(
        (*messages[:cut], UserMessage(SUMMARY_INSTRUCTION)), tool_choice="none"
    )
    # Said before the paid summary request, so a frontend can show what the wait is for.
    agent.sink.emit(
        NoticeEvent(agent.role, "compaction_started", f"Compacting history ({reason}).")
    )
    finished: StreamFinished | None = None
    async for event in agent.provider.stream(request):
        if isinstance(event, StreamFinished):
            finished = event
    if finished is None:
        return _report(agent, False, "the summary request did not finish", before, before)
    model = request.model or agent.provider.model
    agent.account_usage(model, finished.usage, UsageSource.COMPACTION)

    summary = finished.message.content.strip()
    parts = [SUMMARY_HEADER, summary, *agent.carried_state()]
    block = "\n\n".join(parts)
    replaced = _chars(middle)
    if not summary or len(block) > max_ratio * replaced:
        return _report(
            agent,
            False,
            f"summary too large ({len(block)} chars for {replaced} replaced); history kept",
            before,
            before,
            replaced,
            len(block),
        )

    new_messages: list[Message] = [system] if system else []
    if isinstance(messages[cut], UserMessage):
        new_messages += [
            UserMessage(block),
            AssistantMessage(content=SUMMARY_ACK, reasoning_content=""),
        ]
    else:
        # Cut inside a turn: the summary is the user message the kept steps answer to. The
        # turn's own request was in the summarised part: it is carried over verbatim, not left
        # to the summary's paraphrase.
        asked = _in_progress_request(middle)
        carried = f"\n\n{REQUEST_NOTE}\n{asked}" if asked else ""
        new_messages.append(UserMessage(block + carried + "\n\n" + CONTINUE_NOTE))
    new_messages += elide_superseded(messages[cut:])
    agent.session.rewrite(new_messages, reason="compaction")
    return _report(agent, True, reason, before, len(new_messages), replaced, len(block))


def _in_progress_request(middle: tuple[Message, ...]) -> str:
    """The text of the user request the summarised steps answer to (the last user message of
    ``middle``); when that is an earlier compaction's summary, the request it carried."""
    last = next((m for m in reversed(middle) if isinstance(m, UserMessage)), None)
    if last is None:
        return ""
    text = last.content
    if text.startswith(SUMMARY_HEADER):
        _, found, rest = text.partition(f"\n\n{REQUEST_NOTE}\n")
        return rest.removesuffix("\n\n" + CONTINUE_NOTE) if found else ""
    return text


def _report(
    agent: CompactionHost,
    accepted: bool,
    reason: str,
    messages_before: int,
    messages_after: int,
    chars_replaced: int = 0,
    chars_summary: int = 0,
) -> CompactionEvent:
    """Emit what happened on the agent's sink and return it."""
    event = CompactionEvent(
        agent.role, accepted, reason, messages_before, messages_after, chars_replaced, chars_summary
    )
    agent.sink.emit(event)
    return event
