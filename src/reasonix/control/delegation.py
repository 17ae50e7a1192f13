"""The ``task`` tool: delegate a bounded piece of work to a child agent.

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

Writer children (``read_only: false``) edit a private copy of the workspace
(:mod:`reasonix.safety.worktree`: a checkout of the workspace as it is now, under our data
folder, never inside the user's repository) with the parent's full tools rebuilt for that copy:
the same permission policy and approver (in ``ask`` mode their edits and commands ask the user,
or are refused when nobody can answer), and bash confined with the copy as its workspace. The
report carries their diff (bounded); nothing reaches the workspace until the parent calls
``task_apply`` with the child's id, which goes through the permission policy as an edit and is
snapshotted first, so ``/undo`` takes it back.

Profiles (:mod:`reasonix.extensions.agents`) select a child's system prompt, tools and model with
``subagent_type``; the list is in the ``task`` tool's description, fixed when the session
starts. A profile's model gets its own provider and prices, so its cost stays its own.

It runs past 500 lines because the isolation rules above (timeouts, no sibling cancellation,
depth, bounded reports, cost stamping) apply to readers and writers alike and must be read
together to be trusted; the writer's private copy itself lives apart, in
:mod:`reasonix.safety.worktree`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from reasonix.agent.agent import Agent, AgentOptions
from reasonix.agent.session import Session
from reasonix.errors import ReasonixError
from reasonix.events import Event, NullSink, Sink, UsageSource
from reasonix.messages import AssistantMessage, Usage
from reasonix.providers.base import Provider
from reasonix.safety.checkpoints import CHECKPOINTS_KEY
from reasonix.safety.worktree import Worktree, WorktreeDiff, WorktreeError, make_worktree
from reasonix.tools.registry import Effect, Tool, ToolContext, ToolRegistry, ToolResult

if TYPE_CHECKING:
    from reasonix.extensions.agents import AgentProfile
    from reasonix.safety.permissions import Subject

__all__ = [
    "SUBAGENT_PROMPT",
    "WRITER_PROMPT",
    "ChildRun",
    "DelegationLimits",
    "Delegator",
    "ModelChoice",
    "WriterSetup",
]

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

#: The subagent types models used to Claude Code's Task tool send, built in (no configuration):
#: name -> (read-only always, what the report should be). ``general-purpose`` is the default
#: subagent (``read_only`` as asked); a configured profile of the same name wins.
BUILTIN_TYPES: dict[str, tuple[bool, str]] = {
    "general-purpose": (False, ""),
    "Explore": (True, ""),
    "Plan": (
        True,
        "\n\nYour report is an implementation plan: the files and functions to change, the "
        "steps in order, and how to check each one.",
    ),
}

WRITER_PROMPT = """\
You are a coding subagent of reasonix, a coding agent. Another agent gave you one task; you
cannot talk to the user and nobody sees your work but that agent.

- You work in a private copy of the project: edit files and run commands there as the task
  needs. Your changes come back to the other agent as a diff, which it may apply or drop.
- Keep to the task: change only what it asks, check your change (run the relevant test or
  command), and stop when it is done.
- Answer in your final message, self-contained: what you changed and why, how you checked it,
  and anything left undone. No preamble.
"""


@dataclass(frozen=True)
class WriterSetup:
    """What writer children need from the host: where their copies go (``root``, a private
    folder), the ``workspace`` they copy, and ``tools``, which builds the parent's tools for a
    copy (same permission policy and approver, bash confined to the copy)."""

    root: Path
    workspace: Path
    tools: Callable[[Path], ToolRegistry]


@dataclass(frozen=True)
class ModelChoice:
    """A profile's model: its provider and the options that price it (``model``, ``prices``,
    ``prices_cny``, ``max_tokens``, thinking); built by the host from the configuration."""

    provider: Provider
    options: AgentOptions


@dataclass(frozen=True)
class DelegationLimits:
    """Bounds on children: how many run at once, how long and how many model steps each may
    take, and how much of a child's answer the parent receives."""

    max_parallel: int = 4
    timeout_s: float = 300.0
    max_steps: int = 30
    report_chars: int = 8_000
    #: how much of a writer child's diff the parent's report shows (task_apply applies all)
    diff_chars: int = 12_000


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
    #: the profile (``subagent_type``) it ran with, "" for the default
    profile: str = ""
    #: a writer child (``read_only: false``): files its diff changes, and whether it was applied
    writer: bool = False
    files_changed: int = 0
    applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "description": self.description,
            "status": self.status,
            "requests": self.requests,
            **self.usage.to_dict(),
            "cost_usd": round(self.cost, 8),
            "model": self.model,
            "session_id": self.session_id,
            "profile": self.profile,
            "read_only": not self.writer,
        }
        if self.writer:
            data["files_changed"] = self.files_changed
            data["applied"] = self.applied
        return data


@dataclass
class _WriterResult:
    child: ChildRun
    worktree: Worktree
    diff: WorktreeDiff


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
    limits unless its profile names a model; its own prompt, steps and usage source);
    ``registry`` is the parent's registry, of which a read-only child gets the read-only view;
    ``sink`` receives every child event (set it after the Controller exists: its sink counts
    the cost); ``on_child`` is told of each child's session as it starts, so the host can store
    its transcript; ``session_prefix`` names the children's sessions. ``writers`` enables
    writer children; ``profiles`` are the ``subagent_type`` choices; ``model_for`` builds a
    profile's model (raising ReasonixError for one it does not know).
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
        writers: WriterSetup | None = None,
        profiles: Mapping[str, AgentProfile] | None = None,
        model_for: Callable[[str], ModelChoice] | None = None,
    ) -> None:
        self.provider = provider
        self.registry = registry.read_only()
        self.options = options
        self.limits = limits or DelegationLimits()
        self.sink: Sink = sink or NullSink()
        self.on_child = on_child
        self.session_prefix = session_prefix
        self.writers = writers
        self.profiles = dict(profiles or {})
        self.model_for = model_for
        self.children: list[ChildRun] = []
        self._ids = itertools.count(1)
        self._bound: asyncio.Semaphore | None = None
        self._written: dict[str, _WriterResult] = {}
        self._models: dict[str, ModelChoice] = {}
        if writers is not None:
            # task_apply of a diff that touches what makes code run later asks in every mode
            # but yolo, like a file tool's write of it.
            policy = registry.policy
            engine = getattr(policy, "engine", policy)
            checks = getattr(engine, "ask_checks", None)
            if isinstance(checks, list):
                checks.append(self.protected_apply)

    def protected_apply(self, tool: Tool, subject: Subject) -> str | None:
        """Why ``task_apply`` of this subject must ask: its diff writes protected paths of the
        workspace (:func:`reasonix.safety.protected.protection`, from the workspace's own git
        configuration, not the copy's), or None."""
        if tool.name != "task_apply" or self.writers is None or not subject.values:
            return None
        try:
            arguments = json.loads(subject.values[0])
        except ValueError:
            return None
        task_id = arguments.get("task_id") if isinstance(arguments, dict) else None
        entry = self._written.get(str(task_id).strip())
        if entry is None:
            return None
        from reasonix.safety.protected import protection

        workspace = Path(os.path.realpath(self.writers.workspace))
        hits = [n for n in entry.diff.names if protection(workspace / n, workspace) is not None]
        if not hits:
            return None
        shown = ", ".join(hits[:5]) + (f" and {len(hits) - 5} more" if len(hits) > 5 else "")
        return f"its changes write {shown}, which make code run later outside the sandbox"

    def tool(self) -> Tool:
        """The ``task`` tool for the parent's registry (read-only, so calls in one step run in
        parallel). Its description lists the profiles: fixed for the session."""
        return Tool.from_function(
            self.task,
            name="task",
            description=self._description(),
            read_only=True,
            category="task",
            timeout=None,
            kind="think",
            aliases=("Task",),
            subjects=("description",),
        )

    def tools(self) -> list[Tool]:
        """``task``, plus ``task_apply`` when writer children are enabled."""
        tools = [self.tool()]
        if self.writers is not None:
            # Judged by its whole arguments (protected_apply reads the task id from them).
            apply = Tool.from_function(
                self.task_apply, name="task_apply", category="edit", kind="edit", writes=True
            )
            tools.append(dataclasses.replace(apply, preview=self._apply_preview))
        return tools

    def _apply_preview(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """What an approval of ``task_apply`` shows, as an edit's shows its diff: the files the
        child's diff writes and the diff itself (capped like the report's)."""
        entry = self._written.get(str(arguments.get("task_id", "")).strip())
        if entry is None or entry.child.applied:
            return ToolResult("")  # the call itself says what is wrong
        patch, limit = entry.diff.patch, self.limits.diff_chars
        cut = len(patch) > limit
        if cut:
            patch = patch[:limit] + f"\n[... {len(patch) - limit:,} more characters of diff cut]"
        files = ", ".join(entry.diff.names)
        return ToolResult(
            f"Applies the changes of {entry.child.id} to {entry.diff.files} file(s): {files}\n"
            f"{entry.diff.stat}\n\n{patch}",
            cut=cut,  # the arguments are only the task's id: the reviewer would judge unseen
        )

    def _description(self) -> str:
        lines = [
            "A subagent does a self-contained task and reports back: by default a read-only "
            "researcher, for surveys that would flood this conversation; calls in one step run "
            "in parallel."
        ]
        if self.writers is not None:
            lines.append(
                "read_only false: a coder in a private copy; it reports its diff, applied only "
                "by task_apply."
            )
        lines.append(
            "subagent_type: general-purpose; Explore, Plan: read-only"
            + ("; or a specialist:" if self.profiles else "")
        )
        lines += [p.listing() for p in self.profiles.values()]
        return "\n".join(lines)

    async def task(
        self,
        description: Annotated[str, "3-6 word name"],
        prompt: Annotated[
            str,
            "all it needs (it sees nothing of this conversation) and what to report",
        ],
        subagent_type: Annotated[str, "a type above, or empty"] = "",
        read_only: Annotated[bool, "false: may edit and run commands"] = True,
    ) -> ToolResult:
        """Run one child (see :meth:`_description` for what the model is told)."""
        if not prompt.strip():
            return ToolResult.error("task needs a prompt saying what the subagent should do")
        profile = None
        note, brief = "", ""
        wanted = subagent_type.strip()
        if wanted:
            profile = self.profiles.get(wanted)
            builtin = _builtin(wanted) if profile is None else None
            if builtin is not None:
                always_read_only, brief = BUILTIN_TYPES[builtin]
                read_only = read_only or always_read_only
            elif profile is None:
                # Not a failed call (a model that does not retry would never delegate): the
                # default subagent runs, and the result says so.
                known = ", ".join([*self.profiles, *BUILTIN_TYPES])
                note = (
                    f"[Note: there is no subagent_type {wanted!r} (available: {known}); the "
                    "default subagent ran.]\n\n"
                )
        if not read_only and self.writers is None:
            return ToolResult.error(
                "Writer subagents are off ([subagents] writers = false): only read_only tasks "
                "can be delegated."
            )
        choice = None
        if profile is not None and profile.model:
            try:
                choice = self._model(profile.model)
            except ReasonixError as exc:
                return ToolResult.error(
                    f"subagent_type {profile.name!r} names model {profile.model!r}, which "
                    f"cannot be used: {exc}"
                )
        if self._bound is None:
            self._bound = asyncio.Semaphore(self.limits.max_parallel)
        n = next(self._ids)
        child = ChildRun(f"task-{n}", description.strip()[:80] or f"task {n}")
        child.model = (
            choice.options.model if choice is not None else self.options.model
        ) or self.provider.model
        child.session_id = f"{self.session_prefix}:{child.id}"
        child.profile = profile.name if profile is not None else ""
        child.writer = not read_only
        self.children.append(child)
        async with self._bound:
            result = await self._run(child, prompt, profile, choice, brief)
        if note:
            result = dataclasses.replace(result, content=note + result.content)
        return result

    def _model(self, model: str) -> ModelChoice:
        if model not in self._models:
            if self.model_for is None:
                raise ReasonixError("this host does not choose models for subagents")
            self._models[model] = self.model_for(model)
        return self._models[model]

    async def _run(
        self,
        child: ChildRun,
        prompt: str,
        profile: AgentProfile | None = None,
        choice: ModelChoice | None = None,
        brief: str = "",
    ) -> ToolResult:
        session = Session(child.session_id)
        base = choice.options if choice is not None else self.options
        provider = choice.provider if choice is not None else self.provider
        registry = self.registry
        worktree: Worktree | None = None
        if child.writer:
            assert self.writers is not None
            try:
                worktree = await asyncio.to_thread(
                    make_worktree,
                    self.writers.workspace,
                    self.writers.root,
                    f"{_safe_name(self.session_prefix)}-{child.id}",
                )
            except WorktreeError as exc:
                child.status = "failed"
                return ToolResult.error(
                    f"Could not make the subagent's copy of the workspace: {exc}"
                )
            registry = self.writers.tools(worktree.path)
            base = dataclasses.replace(base, workspace=worktree.path)
        if profile is not None:
            from reasonix.extensions.agents import profile_tool_names

            allowed = profile_tool_names(profile, registry)
            if allowed is not None:
                registry = _only(registry, allowed)
        system = profile.prompt if profile is not None else None
        options = dataclasses.replace(
            base,
            system_prompt=system or (WRITER_PROMPT if child.writer else SUBAGENT_PROMPT) + brief,
            max_steps=self.limits.max_steps,
            usage_source=UsageSource.SUBAGENT,
            role=child.id,
            compaction_threshold=None,
        )
        agent = Agent(provider, registry, session, options, _ChildSink(child.id, lambda: self.sink))
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
            if worktree is not None:  # the copy's own tools: its bash sandbox ends with it
                registry.close()
        report = self._report(child, answer or _last_text(session))
        if worktree is None:
            return report
        return await self._with_diff(child, worktree, report)

    async def _with_diff(
        self, child: ChildRun, worktree: Worktree, report: ToolResult
    ) -> ToolResult:
        try:
            diff = await asyncio.to_thread(worktree.diff)
        except WorktreeError as exc:
            return ToolResult(
                f"{report.content}\n\nIts diff could not be read: {exc}", is_error=True
            )
        child.files_changed = diff.files
        if not diff.files:
            worktree.remove()
            return ToolResult(f"{report.content}\n\nIt changed no files.", is_error=report.is_error)
        self._written[child.id] = _WriterResult(child, worktree, diff)
        patch, limit = diff.patch, self.limits.diff_chars
        if len(patch) > limit:
            patch = patch[:limit] + f"\n[... {len(patch) - limit:,} more characters of diff cut]"
        text = (
            f"{report.content}\n\nIts changes, made in a private copy (the workspace is "
            f"unchanged):\n{diff.stat}\n\n```diff\n{patch}\n```\n"
            f'To apply them to the workspace, call task_apply with task_id "{child.id}" '
            "(through more_tools); to drop them, do nothing."
        )
        return ToolResult(text, is_error=report.is_error)

    async def task_apply(
        self,
        task_id: Annotated[str, "a writer task's id (task-1)"],
        ctx: ToolContext,
    ) -> ToolResult:
        """Apply a writer subagent's changes to the workspace."""
        entry = self._written.get(task_id.strip())
        if entry is None:
            known = ", ".join(k for k, v in self._written.items() if not v.child.applied)
            return ToolResult.error(
                f"No changes of {task_id.strip()!r} wait to be applied"
                + (f"; these do: {known}." if known else ".")
            )
        if entry.child.applied:
            return ToolResult.error(f"The changes of {task_id} were applied already.")
        checkpoints = CHECKPOINTS_KEY.get(ctx.state)
        if checkpoints is not None:
            checkpoints.before_step(ctx.turn, ctx.call_id, "task_apply", task_id)
        try:
            await asyncio.to_thread(entry.worktree.apply, entry.diff.patch)
        except WorktreeError as exc:
            return ToolResult.error(
                f"The changes of {task_id} were not applied (nothing changed): {exc}. The "
                "workspace probably changed in those places since the subagent started; make "
                "the change directly, or delegate it again."
            )
        entry.child.applied = True
        entry.worktree.remove()
        digest = hashlib.sha256(entry.diff.patch.encode()).hexdigest()[:16]
        return ToolResult(
            f"Applied the changes of {task_id} to {entry.diff.files} file(s):\n{entry.diff.stat}",
            effects=(Effect("write", f"task_apply:{task_id}", digest),),
        )

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

    async def aclose(self) -> None:
        """Remove the copies of writer children whose changes were never applied, and release
        the providers of profile models."""
        for entry in self._written.values():
            entry.worktree.remove()
        self._written.clear()
        for choice in self._models.values():
            close = getattr(choice.provider, "aclose", None)
            if close is not None and choice.provider is not self.provider:
                await close()
        self._models.clear()


def _only(registry: ToolRegistry, names: list[str]) -> ToolRegistry:
    """The view of ``registry`` with only ``names`` (same policy and limits)."""
    return ToolRegistry(
        (t for t in registry if t.name in names),
        policy=registry.policy,
        default_timeout=registry.default_timeout,
        limits=registry.limits,
    )


def _safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:80]


def _builtin(name: str) -> str | None:
    """The built-in type ``name`` names (any case), or None."""
    return next((b for b in BUILTIN_TYPES if b.lower() == name.lower()), None)


def _last_text(session: Session) -> str:
    for message in reversed(session.snapshot()):
        if isinstance(message, AssistantMessage) and message.content:
            return message.content
    return ""
