"""The ``task`` tool: delegate a bounded piece of read-only work to a child agent.

A child is one more session, never a shared one: it starts with no inherited conversation
(only the prompt the parent wrote), keeps its own prefix-cache chain, runs on the executor's
model with the read-only view of the tools, and stamps its usage with the ``subagent`` source,
so the per-role cost table stays true however the work is split. Its events reach the parent's
sink under its own role (``task-1``, ``task-2``, …), and the host can store its transcript
(``on_child``).

Isolation, so one child never costs the others or the parent anything but its own time:

- each child runs under its own timeout; a child that fails, hangs or is cancelled becomes a
  tool result that says so (what it had found is kept), never an exception in the parent;
- several ``task`` calls in one step run in parallel (the tool is read-only, so the agent batches
  them), at most ``max_parallel`` at once;
- children cannot delegate further (depth 1): their tools do not include ``task``;
- the parent receives a bounded report: the child's answer (capped) and one line of figures.

Writer children (a child that edits in an isolated copy and returns its diff) are not here
yet: ``task`` children are read-only explorers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from reasonix.agent.agent import Agent, AgentOptions
from reasonix.agent.session import Session
from reasonix.events import Event, NullSink, Sink, UsageSource
from reasonix.messages import AssistantMessage, Usage
from reasonix.providers.base import Provider
from reasonix.tools.registry import Tool, ToolRegistry, ToolResult

__all__ = ["SUBAGENT_PROMPT", "ChildRun", "DelegationLimits", "Delegator"]

SUBAGENT_PROMPT = """\
You are a research subagent of reasonix, a coding agent. Another agent gave you one task; you
cannot talk to the user and nobody sees your work but that agent.

- Investigate with the read-only tools you have (read files, list folders, search). You cannot
  change files or run commands that change anything.
- Be efficient: search before reading whole files, read only what the task needs, stop as soon
  as you can answer.
- Answer in your final message, self-contained: the findings the task asked for, with file
  paths and line numbers where they matter, and what you could not determine. No preamble.
"""


@dataclass(frozen=True)
class DelegationLimits:
    """Bounds on children: how many run at once, how long and how many model steps each may
    take, and how much of a child's answer the parent receives."""

    max_parallel: int = 4
    timeout_s: float = 300.0
    max_steps: int = 30
    report_chars: int = 8_000


@dataclass
class ChildRun:
    """One child's record: what it was asked, how it ended, and what it cost."""

    id: str
    description: str
    status: str = "running"  # running | done | failed | timed_out | cancelled
    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    model: str = ""
    session_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "status": self.status,
            "requests": self.requests,
            **self.usage.to_dict(),
            "cost_usd": round(self.cost, 8),
            "model": self.model,
            "session_id": self.session_id,
        }


class _ChildSink:
    """Re-stamps a child's events with its own role before they reach the parent's sink."""

    def __init__(self, role: str, parent: Callable[[], Sink]) -> None:
        self.role = role
        self.parent = parent

    def emit(self, event: Event) -> None:
        self.parent().emit(dataclasses.replace(event, role=self.role))


class Delegator:
    """Runs ``task`` calls as child agents (see the module docstring).

    ``provider`` and ``options`` are the executor's (a child uses the same model, effort and
    limits; its own prompt, steps and usage source); ``registry`` is the parent's registry, of
    which a child gets the read-only view; ``sink`` receives every child event (set it after
    the Controller exists: its sink counts the cost); ``on_child`` is told of each child's
    session as it starts, so the host can store its transcript; ``session_prefix`` names the
    children's sessions.
    """

    def __init__(
        self,
        provider: Provider,
        registry: ToolRegistry,
        options: AgentOptions,
        *,
        limits: DelegationLimits | None = None,
        sink: Sink | None = None,
        on_child: Callable[[ChildRun, Session], None] | None = None,
        session_prefix: str = "session",
    ) -> None:
        self.provider = provider
        self.registry = registry.read_only()
        self.options = options
        self.limits = limits or DelegationLimits()
        self.sink: Sink = sink or NullSink()
        self.on_child = on_child
        self.session_prefix = session_prefix
        self.children: list[ChildRun] = []
        self._ids = itertools.count(1)
        self._bound: asyncio.Semaphore | None = None

    def tool(self) -> Tool:
        """The ``task`` tool for the parent's registry (read-only, so calls in one step run in
        parallel)."""
        return Tool.from_function(
            self.task, name="task", read_only=True, category="task", timeout=None
        )

    async def task(
        self,
        description: Annotated[str, "a short (3-6 word) name for the task"],
        prompt: Annotated[
            str,
            "everything the subagent needs: it sees none of this conversation; say what to find "
            "and what to report",
        ],
    ) -> ToolResult:
        """Delegate a self-contained research task to a subagent with read-only tools (it
        reads and searches the workspace, then reports back). Use it for broad surveys that
        would fill this conversation with file contents; several calls in one step run in
        parallel. The subagent cannot edit files or run commands."""
        if not prompt.strip():
            return ToolResult.error("task needs a prompt saying what the subagent should do")
        if self._bound is None:
            self._bound = asyncio.Semaphore(self.limits.max_parallel)
        n = next(self._ids)
        child = ChildRun(f"task-{n}", description.strip()[:80] or f"task {n}")
        child.model = self.options.model or self.provider.model
        child.session_id = f"{self.session_prefix}:{child.id}"
        self.children.append(child)
        async with self._bound:
            return await self._run(child, prompt)

    async def _run(self, child: ChildRun, prompt: str) -> ToolResult:
        session = Session(child.session_id)
        options = dataclasses.replace(
            self.options,
            system_prompt=SUBAGENT_PROMPT,
            max_steps=self.limits.max_steps,
            usage_source=UsageSource.SUBAGENT,
            role=child.id,
            compaction_threshold=None,
        )
        agent = Agent(
            self.provider,
            self.registry,
            session,
            options,
            _ChildSink(child.id, lambda: self.sink),
        )
        if self.on_child is not None:
            self.on_child(child, session)
        answer = ""
        try:
            result = await asyncio.wait_for(agent.run(prompt), self.limits.timeout_s)
            answer = result.text
            child.status = "done"
        except TimeoutError:
            child.status = "timed_out"
        except asyncio.CancelledError:
            child.status = "cancelled"
            raise
        except Exception as exc:  # a child's failure is its own: the parent gets a result
            child.status = "failed"
            answer = f"{type(exc).__name__}: {exc}"
        finally:
            child.requests = agent.requests
            child.usage = agent.usage_total
            child.cost = agent.cost_total
        return self._report(child, answer or _last_text(session))

    def _report(self, child: ChildRun, answer: str) -> ToolResult:
        limit = self.limits.report_chars
        if len(answer) > limit:
            answer = answer[:limit] + f"\n[... {len(answer) - limit:,} more characters cut]"
        u = child.usage
        figures = (
            f"[{child.id} {child.status}: {child.requests} requests, {u.prompt_tokens:,} prompt "
            f"tokens ({u.hit_ratio:.0%} cached), {u.completion_tokens:,} output, "
            f"${child.cost:.6f}]"
        )
        if child.status == "done":
            return ToolResult(f"{answer}\n\n{figures}".strip())
        why = {
            "timed_out": f"did not finish within {self.limits.timeout_s:g} s",
            "failed": "failed",
        }.get(child.status, child.status)
        found = f"\nWhat it had found:\n{answer}" if answer else ""
        return ToolResult.error(f"The subagent {why}.{found}\n\n{figures}")

    def figures(self) -> list[dict[str, Any]]:
        """Every child of this session so far, as plain data (``/cost``, JSON results)."""
        return [c.to_dict() for c in self.children]


def _last_text(session: Session) -> str:
    for message in reversed(session.snapshot()):
        if isinstance(message, AssistantMessage) and message.content:
            return message.content
    return ""
