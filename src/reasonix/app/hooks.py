"""Hooks wired into a session: where each event fires and what its answer changes.

- ``PreToolUse``: :class:`HookedPolicy` runs before the permission engine decides a call that
  passed validation. ``deny`` (or exit 2) refuses it with the hook's reason as the tool result
  the model reads; ``ask`` makes the engine ask even where rules allow; ``allow`` (from the
  user's own hooks only) skips the question, but deny rules and plan mode still refuse.
- ``PostToolUse``: after a call that was allowed and ran; a block reason (exit 2 or
  ``decision: block``) is added to the result the model reads.
- ``UserPromptSubmit``: before a turn's prompt is sent; a block keeps the prompt from the model
  and tells the user why.
- ``Stop``: when a turn ends; a block continues the turn with the reason as the next user
  message (``stop_hook_active`` is true then; at most :data:`MAX_STOP_CONTINUATIONS` times).
- ``SessionStart`` / ``SessionEnd``: when a session is opened, resumed, cleared or closed.
- ``PreCompact``: before the history is summarised (``manual`` or ``auto``).
- ``Notification``: when a call waits for the user's approval.

``additionalContext`` (and plain stdout of prompt and start hooks) is queued with
``Agent.add_tail_note``, so it rides at the tail of the next user message. Failures are notices.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reasonix.agent.agent import Agent
from reasonix.config import Config
from reasonix.config.hooks import HookGroup, HookShapeError, parse_hook_table
from reasonix.events import NoticeEvent, Sink
from reasonix.extensions.hooks import (
    CLAUDE_PERMISSION_MODES,
    HookOutcome,
    HookRunner,
    claude_tool_input,
    claude_tool_name,
    load_settings_hooks,
)
from reasonix.messages import ToolCall, message_to_dict
from reasonix.safety.permissions import (
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    PermissionEngine,
)
from reasonix.tools.registry import (
    Permission,
    PermissionDecision,
    Tool,
    ToolContext,
    ToolResult,
)

MAX_STOP_CONTINUATIONS = 5


class SessionHooks:
    """The hook runner of one open session plus what the events need from it: the executor
    (for tail notes), the session id, the transcript file, the permission mode, the sink."""

    def __init__(
        self,
        groups: tuple[HookGroup, ...],
        workspace: Path,
        *,
        env: Mapping[str, str],
        sink: Sink,
        transcripts: Path,
        problems: tuple[str, ...] = (),
    ) -> None:
        self.runner = HookRunner(groups, workspace, env=env, base_input=self._base_input)
        self.sink = sink
        self.transcripts = transcripts
        self.problems = problems
        #: the permission mode now (set once the permission engine exists)
        self.mode: Callable[[], str] = lambda: "ask"
        self.session_id = ""
        self.executor: Agent | None = None
        self._written = 0
        #: calls that passed the permission check, with their tool's name for hooks
        self._ran: dict[str, str] = {}

    @classmethod
    def none(cls, workspace: Path, sink: Sink, data_dir: Path) -> SessionHooks:
        """No hooks (a session built without :func:`make_session_hooks`)."""
        return cls((), workspace, env={}, sink=sink, transcripts=data_dir / "transcripts")

    def __bool__(self) -> bool:
        return bool(self.runner)

    def attach(self, session_id: str, executor: Agent) -> None:
        """Follow a (new) session: its id and executor."""
        if session_id != self.session_id:
            self._written = 0
        self.session_id = session_id
        self.executor = executor

    # -- common input -------------------------------------------------------------------------

    def _base_input(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "transcript_path": str(self._transcript()),
            "permission_mode": CLAUDE_PERMISSION_MODES.get(self.mode(), self.mode()),
        }

    def _transcript(self) -> Path:
        """The executor conversation as JSON lines, brought up to date (appended) for a hook
        to read."""
        path = self.transcripts / f"{self.session_id}.jsonl"
        if self.executor is None:
            return path
        messages = self.executor.session.snapshot()
        if len(messages) < self._written or not path.exists():
            self._written = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            mode = "a" if self._written else "w"
            with path.open(mode, encoding="utf-8") as out:
                for message in messages[self._written :]:
                    out.write(json.dumps(message_to_dict(message), ensure_ascii=False) + "\n")
            self._written = len(messages)
        except OSError:
            pass  # the hook still runs; the transcript is a convenience
        return path

    # -- running and reporting ----------------------------------------------------------------

    async def fire(
        self, event: str, fields: Mapping[str, Any], *, match: tuple[str, ...] = ()
    ) -> HookOutcome:
        """Run ``event``'s hooks, report problems and messages, queue their context."""
        if not self.runner.has(event):
            return HookOutcome(event)
        outcome = await self.runner.run(event, fields, match=match)
        for problem in outcome.problems:
            self.sink.emit(NoticeEvent("hooks", "hook_failed", problem))
        for message in outcome.messages:
            self.sink.emit(NoticeEvent("hooks", "hook_message", message))
        if outcome.context and self.executor is not None:
            self.executor.add_tail_note(
                f"Context from the {event} hook:\n" + "\n".join(outcome.context)
            )
        return outcome

    async def session_start(self, source: str) -> None:
        await self.fire("SessionStart", {"source": source}, match=(source,))

    async def session_end(self, reason: str) -> None:
        await self.fire("SessionEnd", {"reason": reason}, match=(reason,))

    async def user_prompt(self, prompt: str) -> HookOutcome:
        outcome = await self.fire("UserPromptSubmit", {"prompt": prompt})
        if outcome.blocked:
            why = outcome.reason or "no reason given"
            self.sink.emit(
                NoticeEvent("hooks", "prompt_blocked", f"A UserPromptSubmit hook blocked it: {why}")
            )
        return outcome

    async def stop(self, active: bool) -> HookOutcome:
        return await self.fire("Stop", {"stop_hook_active": active})

    async def notify(self, message: str) -> None:
        await self.fire(
            "Notification",
            {"message": message, "notification_type": "permission_prompt"},
            match=("permission_prompt",),
        )

    # -- tool calls ----------------------------------------------------------------------------

    async def pre_tool(
        self, tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> HookOutcome:
        fields = {
            "tool_name": claude_tool_name(tool),
            "tool_input": claude_tool_input(arguments),
            "tool_use_id": ctx.call_id,
        }
        return await self.fire("PreToolUse", fields, match=(tool.name, claude_tool_name(tool)))

    def ran(self, call_id: str, tool: Tool) -> None:
        """The call passed the permission check (its PostToolUse hooks may run)."""
        if call_id:
            self._ran[call_id] = claude_tool_name(tool)

    async def after_tool(self, call: ToolCall, result: ToolResult, ctx: ToolContext) -> ToolResult:
        """``PostToolUse`` for a call that ran; a block reason joins the result."""
        hook_name = self._ran.pop(call.id, None)
        if hook_name is None:
            return result
        if not self.runner.has("PostToolUse"):
            return result
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = {}
        fields = {
            "tool_name": hook_name,
            "tool_input": claude_tool_input(arguments if isinstance(arguments, dict) else {}),
            "tool_response": {
                "output": result.content,
                "is_error": result.is_error,
                "success": not result.is_error,
            },
            "tool_use_id": call.id,
        }
        outcome = await self.fire("PostToolUse", fields, match=(call.name, hook_name))
        if not outcome.blocked:
            return result
        note = f"\n\n[PostToolUse hook] {outcome.reason or 'the hook objected to this result'}"
        return dataclasses.replace(result, content=result.content + note)

    async def before_compact(self, trigger: str) -> None:
        await self.fire(
            "PreCompact", {"trigger": trigger, "custom_instructions": ""}, match=(trigger,)
        )


def make_session_hooks(config: Config, workspace: Path, sink: Sink, data_dir: Path) -> SessionHooks:
    """The hooks of a session: ``[[hooks.EVENT]]`` from the user's config and (when the folder
    is trusted; the loader has checked) the project's, then, in a trusted folder, the
    ``hooks`` of ``.claude/settings.json`` and ``.claude/settings.local.json``. Commands get
    the allowlisted environment (:mod:`reasonix.safety.environment`) without our key
    variables."""
    from reasonix.safety.environment import build_environment

    groups = list(config.hooks)
    problems: list[str] = []
    if config.trusted:
        for name in ("settings.json", "settings.local.json"):
            path = workspace / ".claude" / name
            table, problem = load_settings_hooks(path)
            if problem:
                problems.append(problem)
            if table is None:
                continue
            try:
                groups.extend(parse_hook_table(table, f"project:{path}"))
            except HookShapeError as exc:
                where = ".".join(str(k) for k in exc.key)
                problems.append(f"{path}: {where}: {exc}; its hooks were skipped")
    keys = sorted({p.api_key_env for p in config.providers.values() if p.api_key_env})
    env = build_environment(
        include=config.environment.include, extra=config.environment.set, withheld=keys
    )
    return SessionHooks(
        tuple(groups),
        workspace,
        env=env,
        sink=sink,
        transcripts=data_dir / "transcripts",
        problems=tuple(problems),
    )


class HookedPolicy:
    """A :class:`~reasonix.tools.registry.PermissionPolicy`: ``PreToolUse`` hooks, then the
    permission engine (see the module docstring for what each answer does)."""

    def __init__(self, engine: PermissionEngine, hooks: SessionHooks) -> None:
        self.engine = engine
        self.hooks = hooks

    async def check(
        self, tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> PermissionDecision:
        outcome = await self.hooks.pre_tool(tool, arguments, ctx)
        if outcome.permission == "deny":
            why = outcome.permission_reason or outcome.reason or "no reason given"
            return PermissionDecision(Permission.DENY, f"blocked by a PreToolUse hook: {why}")
        decision = await self.engine.check(tool, arguments, ctx, hook_decision=outcome.permission)
        if decision.allowed:
            self.hooks.ran(ctx.call_id, tool)
        return decision


class NotifyingApprover:
    """Fires ``Notification`` hooks before the frontend's approver is asked."""

    def __init__(self, inner: Approver, hooks: SessionHooks) -> None:
        self.inner = inner
        self.hooks = hooks

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        await self.hooks.notify(f"reasonix needs your permission to use {request.tool}")
        return await self.inner.approve(request)
