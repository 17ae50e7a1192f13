"""Our events as ACP ``session/update`` payloads.

:class:`UpdateMapper` is the whole translation, with no I/O but reading the files an edit is
about to change (so an editor can show the diff before and after the call runs). One mapper per
ACP session: it remembers which tool calls are open, so an approval question can point at the
call it is about, and the per-role cost so far, for ``usage_update``.

What the planner does is marked as such: its reasoning and text arrive as
``agent_thought_chunk`` prefixed with ``[planner]``, its tool calls carry ``planner:`` in their
titles, and every update has ``_meta.reasonix.role``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acp import schema

from reasonix.control.cost import RoleCost
from reasonix.events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    GateDecided,
    NoticeEvent,
    PlanProduced,
    ReasoningDeltaEvent,
    ReplanTriggered,
    RetryEvent,
    ReviewVerdict,
    TextDeltaEvent,
    TodoChanged,
    ToolCallEvent,
    ToolResultEvent,
)
from reasonix.tools.registry import Tool, ToolKind

__all__ = ["Update", "UpdateMapper", "stop_reason_for", "tool_kind"]

Update = (
    schema.AgentMessageChunk
    | schema.AgentThoughtChunk
    | schema.ToolCallStart
    | schema.ToolCallProgress
    | schema.AgentPlanUpdate
    | schema.UsageUpdate
    | schema.UserMessageChunk
)

_PLAN_STATUS: dict[str, Literal["pending", "in_progress", "completed"]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}

#: How much of a tool's output an update carries; the editor shows it in the call's panel.
OUTPUT_LIMIT = 8_000


def tool_kind(tool: Tool | None) -> ToolKind:
    """The ACP kind a tool declares (:attr:`Tool.kind`; ``other`` for an unknown one)."""
    return tool.kind if tool is not None else "other"


def stop_reason_for(
    stop_reason: str, interrupted: bool
) -> Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]:
    """Our turn's stop reason as ACP's (the table is :data:`reasonix.app.outcomes.ENDINGS`;
    ours, ``plan_incomplete`` for one, rides in the response's ``_meta``)."""
    from reasonix.app.outcomes import ending

    if interrupted:
        return "cancelled"
    if stop_reason == "max_tokens":
        return "max_tokens"
    return ending(stop_reason).acp


def _meta(role: str, **extra: Any) -> dict[str, Any]:
    return {"reasonix": {"role": role, **extra}}


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def _args(call_arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(call_arguments)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _dispatched(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call through ``more_tools`` shown as the tool it runs (its kind, title and path)."""
    from reasonix.tools.registry import DISCOVERY_TOOL_NAME

    target, inner = args.get("name"), args.get("arguments")
    if name == DISCOVERY_TOOL_NAME and isinstance(target, str) and target:
        return target, inner if isinstance(inner, dict) else {}
    return name, args


def _canonical(name: str, arguments: Mapping[str, Any]) -> str:
    return name + "\0" + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class _OpenCall:
    call_id: str
    name: str
    arguments: dict[str, Any]
    title: str
    kind: ToolKind
    role: str
    diff: list[Any] = field(default_factory=list)


@dataclass
class UpdateMapper:
    """Turns one ACP session's events into updates (see the module docstring).

    ``workspace`` resolves the relative paths tools are given (ACP locations are absolute);
    ``context_window`` is the executor model's window, the ``size`` of ``usage_update``;
    ``cost`` returns the session's per-role totals so far; ``currency`` labels them; ``tools``
    finds a tool by name (its kind is what the editor shows).
    """

    workspace: Path
    context_window: int
    cost: Callable[[], Mapping[str, RoleCost]]
    currency: str = "USD"
    tools: Callable[[str], Tool | None] = lambda name: None
    _open: dict[str, _OpenCall] = field(default_factory=dict)
    _by_args: dict[str, str] = field(default_factory=dict)
    _last_prompt: int = 0
    _role_streaming: str = ""
    _last_usage: tuple[int, float] | None = None

    # -- events -> updates ------------------------------------------------------------------------

    def updates(self, event: Event) -> list[Update]:
        """The updates one event becomes (often none: most bookkeeping events stay internal)."""
        role = event.role
        if isinstance(event, TextDeltaEvent):
            return self._stream(role, event.text, thought=role != "executor")
        if isinstance(event, ReasoningDeltaEvent):
            return self._stream(role, event.text, thought=True)
        if isinstance(event, ToolCallEvent):
            self._role_streaming = ""
            return [self._start_call(role, event.call.id, event.call.name, event.call.arguments)]
        if isinstance(event, ToolResultEvent):
            return self._finish_call(role, event)
        if isinstance(event, TodoChanged):
            return [self._plan(event.items, role)]
        if isinstance(event, PlanProduced):
            self._role_streaming = ""
            text = f"\n[planner] plan (round {event.round}):\n{event.markdown}\n"
            return [
                schema.AgentThoughtChunk(
                    session_update="agent_thought_chunk",
                    content=_text(text),
                    field_meta=_meta(role),
                )
            ]
        if isinstance(event, GateDecided):
            from reasonix.control.gate import ROUTE_WORDS

            words = ROUTE_WORDS.get(event.route, "")
            if not words:
                return []
            # Plain words in the stream; the route and reason codes ride in _meta.
            thought = self._thought(role, f"{words}\n")
            thought.field_meta = _meta(role, route=event.route, reason=event.reason)
            return [thought]
        if isinstance(event, ReplanTriggered):
            return [self._thought(role, f"\n[reasonix] re-planning: {event.reason}\n")]
        if isinstance(event, RetryEvent):
            return [self._thought(role, f"\n[reasonix] retrying: {event.reason}\n")]
        if isinstance(event, CompactionEvent):
            what = "compacted" if event.accepted else "compaction skipped"
            return [self._thought(role, f"\n[reasonix] {what}: {event.reason}\n")]
        if isinstance(event, NoticeEvent):
            from reasonix.app.outcomes import CLOSING_NOTICES

            if event.code in CLOSING_NOTICES:  # why the turn ended: part of the answer
                self._role_streaming = ""
                return [self._message(role, f"\n\nreasonix: {event.message}\n")]
            return [self._thought(role, f"\n[reasonix] {event.message}\n")]
        if isinstance(event, ReviewVerdict):
            return [self._thought(role, f"\n[reasonix] {event.line()}\n")]
        if isinstance(event, ErrorEvent):
            self._role_streaming = ""
            return [self._message(role, f"\n\nreasonix: {event.message}\n")]
        if event.kind == "usage":
            return [self.usage_update(getattr(event, "usage", None), role)]
        if event.kind == "tool_charged":  # a paid search: the cost so far, its own role line
            return [self.usage_update(None, role)]
        return []

    def _stream(self, role: str, text: str, *, thought: bool) -> list[Update]:
        if not text:
            return []
        if role != "executor" and self._role_streaming != role:
            text = f"[{role}] " + text
        self._role_streaming = role
        if thought:
            return [self._thought(role, text)]
        return [self._message(role, text)]

    @staticmethod
    def _thought(role: str, text: str) -> schema.AgentThoughtChunk:
        return schema.AgentThoughtChunk(
            session_update="agent_thought_chunk", content=_text(text), field_meta=_meta(role)
        )

    @staticmethod
    def _message(role: str, text: str) -> schema.AgentMessageChunk:
        return schema.AgentMessageChunk(
            session_update="agent_message_chunk", content=_text(text), field_meta=_meta(role)
        )

    # -- tool calls -------------------------------------------------------------------------------

    def _path(self, value: Any) -> str | None:
        if not isinstance(value, str) or not value:
            return None
        path = Path(value)
        return str(path if path.is_absolute() else self.workspace / path)

    def _read(self, path: str | None) -> str | None:
        if path is None:
            return None
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    def _title(self, role: str, name: str, args: Mapping[str, Any]) -> str:
        tool = self.tools(name)
        detail = tool.subject_text(args) if tool is not None else ""
        detail = detail if len(detail) <= 120 else detail[:117] + "..."
        title = f"{name} {detail}".strip()
        return title if role == "executor" else f"{role}: {title}"

    def _diff(self, name: str, args: Mapping[str, Any]) -> list[Any]:
        """The edit a call of an ``edit`` tool is about to make, as ACP diff content, read from
        its arguments' shape (a whole ``content``, one ``old_string``/``new_string``, or a list
        of ``edits``); empty when it cannot be worked out (the tool's own result still says
        what happened)."""
        if tool_kind(self.tools(name)) != "edit":
            return []
        path = self._path(args.get("path"))
        if path is None:
            return []
        old = self._read(path)
        new: str | None
        edits = args.get("edits")
        if isinstance(edits, list):
            new = _apply(old, edits)
        elif "old_string" in args:
            new = _apply(old, [args])
        elif isinstance(args.get("content"), str):
            new = args["content"]
        else:
            return []
        if new is None:
            return []
        return [schema.FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)]

    def _start_call(self, role: str, call_id: str, name: str, arguments: str) -> Update:
        args = _args(arguments)
        name, args = _dispatched(name, args)
        kind = tool_kind(self.tools(name))
        title = self._title(role, name, args)
        path = self._path(args.get("path"))
        locations = [schema.ToolCallLocation(path=path)] if path else None
        content = self._diff(name, args)
        self._open[call_id] = _OpenCall(call_id, name, args, title, kind, role, content or [])
        self._by_args[_canonical(name, args)] = call_id
        return schema.ToolCallStart(
            session_update="tool_call",
            tool_call_id=call_id,
            title=title,
            kind=kind,
            status="in_progress",
            locations=locations,
            content=content or None,
            raw_input=args,
            field_meta=_meta(role),
        )

    def _finish_call(self, role: str, event: ToolResultEvent) -> list[Update]:
        opened = self._open.pop(event.call_id, None)
        if opened is not None:
            self._by_args.pop(_canonical(opened.name, opened.arguments), None)
        output = event.content
        if len(output) > OUTPUT_LIMIT:
            output = output[:OUTPUT_LIMIT] + f"\n[... {len(event.content) - OUTPUT_LIMIT} more]"
        body = schema.ContentToolCallContent(type="content", content=_text(output))
        # A new content array replaces the old one: an edit's diff goes first again, so an
        # editor keeps showing it once the edit is done; the tool's words follow it.
        diff = opened.diff if opened is not None else []
        return [
            schema.ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=event.call_id,
                status="failed" if event.is_error else "completed",
                content=[*diff, body],
                raw_output={"content": event.content, "is_error": event.is_error},
                field_meta=_meta(role),
            )
        ]

    def call_for_approval(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        subject: str,
        reason: str = "",
        preview: str = "",
    ) -> schema.ToolCallUpdate:
        """The ``toolCall`` of a ``session/request_permission``: the open call the question is
        about (matched by tool and arguments), or a call of its own. Its content is what the
        terminal's approval shows — the subject exactly as it will run (a title is cut at 120
        characters), why it asks, and the tool's preview — after an edit's diff."""
        diff = self._diff(tool, arguments)
        note = subject + (f"\n\n{reason}" if reason else "")
        if preview and not diff:  # what the call will do, when no file diff shows it
            note += f"\n\n{preview}"
        content: list[Any] = [
            *diff,
            schema.ContentToolCallContent(type="content", content=_text(note)),
        ]
        call_id = self._by_args.get(_canonical(tool, dict(arguments)))
        opened = self._open.get(call_id) if call_id else None
        if opened is not None:
            return schema.ToolCallUpdate(
                tool_call_id=opened.call_id,
                title=opened.title,
                kind=opened.kind,
                status="pending",
                content=content,
                raw_input=opened.arguments,
            )
        return schema.ToolCallUpdate(
            tool_call_id=f"approval:{tool}:{abs(hash(subject)) % 10**8}",
            title=f"{tool} {subject}".strip(),
            kind=tool_kind(self.tools(tool)),
            status="pending",
            content=content,
            raw_input=dict(arguments),
        )

    # -- plan and usage ---------------------------------------------------------------------------

    @staticmethod
    def _plan(items: Sequence[Any], role: str) -> schema.AgentPlanUpdate:
        entries = []
        for item in items:
            content = str(getattr(item, "content", item))
            status = _PLAN_STATUS.get(str(getattr(item, "status", "")), "pending")
            level = int(getattr(item, "level", 0) or 0)
            entries.append(
                schema.PlanEntry(
                    content=("  " * level) + content,
                    priority="high" if level == 0 else "medium",
                    status=status,
                )
            )
        return schema.AgentPlanUpdate(
            session_update="plan", entries=entries, field_meta=_meta(role)
        )

    def usage_update(self, usage: Any, role: str = "executor") -> schema.UsageUpdate:
        """Context used and size (the executor's last prompt against its window), the cost so
        far, and every role's tokens and cost under ``_meta.reasonix.roles``."""
        if usage is not None and role != "reviewer":
            # (the reviewer's prompt is its own session's, not the conversation's context)
            # The context in use is the prompt of the role now running: the planner's during
            # the planning phase, the executor's after it.
            self._last_prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        totals = self.cost()
        roles = {
            name: {
                "requests": c.requests,
                "prompt_tokens": c.usage.prompt_tokens,
                "cache_hit_tokens": c.usage.cache_hit_tokens,
                "cache_miss_tokens": c.usage.cache_miss_tokens,
                "completion_tokens": c.usage.completion_tokens,
                "reasoning_tokens": c.usage.reasoning_tokens,
                "cache_hit_ratio": round(c.hit_ratio, 4),
                "cost": round(c.cost, 8),
            }
            for name, c in totals.items()
        }
        total = round(sum(c.cost for c in totals.values()), 8)
        self._last_usage = (self._last_prompt, total)
        return schema.UsageUpdate(
            session_update="usage_update",
            used=self._last_prompt,
            size=self.context_window,
            cost=schema.Cost(amount=total, currency=self.currency),
            field_meta={"reasonix": {"role": role, "roles": roles, "total_cost": total}},
        )

    def closing_usage(self) -> schema.UsageUpdate | None:
        """The turn's last ``usage_update``, or None when it would repeat the one sent last."""
        totals = self.cost()
        total = round(sum(c.cost for c in totals.values()), 8)
        if self._last_usage == (self._last_prompt, total):
            return None
        return self.usage_update(None)

    def prompt_usage(self) -> schema.Usage:
        """The session's tokens so far, every role's, as the prompt response's ``usage``."""
        totals = self.cost().values()
        prompt = sum(c.usage.prompt_tokens for c in totals)
        completion = sum(c.usage.completion_tokens for c in totals)
        return schema.Usage(
            total_tokens=prompt + completion,
            input_tokens=prompt,
            output_tokens=completion,
            thought_tokens=sum(c.usage.reasoning_tokens for c in totals),
            cached_read_tokens=sum(c.usage.cache_hit_tokens for c in totals),
        )


def _apply(old: str | None, edits: Sequence[Any]) -> str | None:
    """The text after ``edits`` (dicts with old_string/new_string/replace_all), or None when
    one of them does not apply cleanly: the tool will report that itself."""
    text = old if old is not None else ""
    for edit in edits:
        if not isinstance(edit, Mapping):
            return None
        before, after = edit.get("old_string"), edit.get("new_string")
        if not isinstance(before, str) or not isinstance(after, str):
            return None
        if before == "":
            if old is not None and old != "":
                return None
            text = after
            continue
        if before not in text:
            return None
        text = (
            text.replace(before, after)
            if edit.get("replace_all")
            else text.replace(before, after, 1)
        )
    return text
