"""Scripted tools for agent and orchestrator tests, and a check that a conversation is one
DeepSeek accepts."""

from __future__ import annotations

import hashlib
import itertools
from typing import Any

from reasonix.control.todo_tools import executor_plan_tools
from reasonix.messages import AssistantMessage, ToolMessage, UserMessage
from reasonix.tools.registry import Effect, ToolRegistry, ToolResult, tool


def digest(text: str) -> str:
    """A short content hash, as the tools' effects carry."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fake_tools(*, plan_tools: bool = True) -> ToolRegistry:
    """A writer and a shell whose commands fail when they contain "fail" (plus the executor's
    todo tools, which the Controller adds itself)."""

    @tool
    def write(path: str, text: str) -> ToolResult:
        """Write a file."""
        return ToolResult(f"wrote {path}", effects=(Effect("write", path, digest(text)),))

    @tool
    def bash(command: str) -> ToolResult:
        """Run a command."""
        ok = "fail" not in command
        out = f"ran {command}: {'ok' if ok else 'FAILED'}"
        return ToolResult(
            out, is_error=not ok, effects=(Effect("command", command, digest(out), ok=ok),)
        )

    registry = ToolRegistry([write, bash])
    return registry.with_tools(executor_plan_tools()) if plan_tools else registry


def session_problems(messages: tuple[Any, ...]) -> list[str]:
    """Two user messages in a row, or an unanswered tool call."""
    problems = []
    for i, (a, b) in enumerate(itertools.pairwise(messages)):
        if isinstance(a, UserMessage) and isinstance(b, UserMessage):
            problems.append(f"two user messages at {i}")
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            answered = {t.tool_call_id for t in messages[i + 1 :] if isinstance(t, ToolMessage)}
            problems += [f"unanswered {c.id}" for c in m.tool_calls if c.id not in answered]
    if messages and isinstance(messages[-1], UserMessage):
        problems.append("ends on a user message")
    return problems


def counting_tools() -> ToolRegistry:
    @tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}: " + ("data " * (len(key) % 7 + 3))

    @tool
    def store(key: str, value: str) -> str:
        """Store a value."""
        return f"stored {key}={value}"

    @tool
    def crash() -> str:
        """Raises."""
        raise RuntimeError("tool blew up")

    return ToolRegistry([lookup, store, crash])
