"""``/context``: what fills each role's context window, part by part.

Per role (the executor, the planner) the next request is made of the system prompt, the tool
schemas and the conversation; the conversation is split by kind (the user's messages, the
model's text, its reasoning, its tool calls, the tool results, compaction summaries). Each part
is estimated the way compaction estimates (characters / :data:`CHARS_PER_TOKEN`) and set
against the model's window; the last request's measured prompt size is shown beside it when
there is one. Subagents run in windows of their own: what each starts with (its system prompt
and tools) and what the children of this session have read so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasonix.agent.compaction import CHARS_PER_TOKEN
from reasonix.messages import (
    AssistantMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
    canonical_json,
)

if TYPE_CHECKING:
    from reasonix.agent.agent import Agent
    from reasonix.app.session import AgentSession

__all__ = ["ContextPart", "RoleContext", "context_lines", "context_report"]

#: the parts of a request, in the order they are sent
PARTS = (
    "system prompt",
    "tool schemas",
    "user messages",
    "assistant text",
    "reasoning",
    "tool calls",
    "tool results",
    "summaries",
)


@dataclass(frozen=True, slots=True)
class ContextPart:
    """One part of a role's next request: its name, how many items (messages, tools) and
    about how many tokens."""

    name: str
    count: int
    tokens: int


@dataclass(frozen=True, slots=True)
class RoleContext:
    """What fills one role's window: its parts, the window, and the last request's measured
    prompt tokens (None when nothing was measured since the history last changed shape)."""

    role: str
    model: str
    window: int
    parts: tuple[ContextPart, ...]
    measured: int | None = None

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.parts)

    def share(self, tokens: int) -> float:
        """``tokens`` as a fraction of the window."""
        return tokens / self.window if self.window else 0.0


def _tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def agent_parts(agent: Agent) -> tuple[ContextPart, ...]:
    """The parts of ``agent``'s next request (before the next user message)."""
    counts = dict.fromkeys(PARTS, 0)
    chars = dict.fromkeys(PARTS, 0)

    def add(part: str, size: int, items: int = 1) -> None:
        counts[part] += items
        chars[part] += size

    messages = agent.session.snapshot()
    if not messages or not isinstance(messages[0], SystemMessage):
        add("system prompt", len(agent.options.system_prompt or ""))
    schemas = agent.tools.schemas()
    add("tool schemas", len(canonical_json(list(schemas))), len(schemas))
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            add("system prompt" if index == 0 else "summaries", len(message.content))
        elif isinstance(message, UserMessage):
            add("user messages", len(message.content))
        elif isinstance(message, AssistantMessage):
            if message.content:
                add("assistant text", len(message.content))
            if message.reasoning_content:
                add("reasoning", len(message.reasoning_content))
            for call in message.tool_calls:
                add("tool calls", len(call.name) + len(call.arguments))
        elif isinstance(message, ToolMessage):
            add("tool results", len(message.content))
    return tuple(ContextPart(p, counts[p], _tokens(chars[p])) for p in PARTS if counts[p])


def context_report(session: AgentSession) -> list[RoleContext]:
    """Per active role, what fills its window."""
    ctrl = session.controller
    out = []
    for role, model in session.models().items():
        agent = ctrl.executor if role == "executor" else ctrl.planner
        if agent is None:
            continue
        window = session.config.model_info(model).context_window
        last = session._events.last_prompt.get(role)
        out.append(RoleContext(role, model, window, agent_parts(agent), last))
    return out


def _subagent_lines(session: AgentSession) -> list[str]:
    from reasonix.control.delegation import SUBAGENT_PROMPT

    delegator = session.controller.delegator
    if delegator is None:
        return []
    system = _tokens(len(SUBAGENT_PROMPT))
    tools = _tokens(len(canonical_json(list(delegator.registry.schemas()))))
    lines = [
        "subagents (task): each runs in a window of its own; a default child starts with "
        f"about {system + tools:,} tokens (system prompt {system:,}, tool schemas {tools:,})"
    ]
    for child in delegator.figures():
        lines.append(
            f"  {child['id']:<8} {child['status']:<10} {child['requests']:>3} requests  "
            f"{child['prompt_tokens']:>10,} prompt tokens read in all  {child['description']}"
        )
    return lines


def context_lines(session: AgentSession) -> list[str]:
    """``/context``: the report as text."""
    lines: list[str] = []
    for ctx in context_report(session):
        head = (
            f"{ctx.role} ({ctx.model}, window {ctx.window:,} tokens): about {ctx.tokens:,} "
            f"tokens, {ctx.share(ctx.tokens):.1%} of the window"
        )
        if ctx.measured is not None:
            head += f"; the last request measured {ctx.measured:,}"
        lines.append(head)
        for part in ctx.parts:
            name = f"{part.name} ({part.count})"
            lines.append(f"  {name:<24} {part.tokens:>10,}  {ctx.share(part.tokens):>6.1%}")
    lines += _subagent_lines(session)
    lines.append(
        f"Estimates are characters / {CHARS_PER_TOKEN}; the conversation grows with every step "
        "and /compact summarises the executor's older history."
    )
    return lines
