"""Typed events and the sinks that receive them.

Every frontend (terminal, JSON output, session store, web view) reads the same events. Events are
small immutable records; each has a ``kind`` tag and ``to_dict()`` for JSON. ``role`` names the
agent that emitted it (``"executor"``, ``"planner"``, or ``"controller"``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from reasonix.messages import ToolCall, Usage


class UsageSource(enum.StrEnum):
    """Who spent the tokens of a request; prices come from that role's own model."""

    EXECUTOR = "executor"
    PLANNER = "planner"
    COMPACTION = "compaction"
    #: a child session (a delegated task): its own prefix-cache chain, its own cost row
    SUBAGENT = "subagent"
    #: auto mode's reviewer of approvals: its own session, its own cost row
    REVIEWER = "reviewer"
    OTHER = "other"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return value.to_dict()
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True)
class Event:
    """Base of all events."""

    kind: ClassVar[str] = "event"
    role: str

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):
            data[f.name] = _plain(getattr(self, f.name))
        return data


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    kind: ClassVar[str] = "turn_started"
    turn: int
    text: str


@dataclass(frozen=True, slots=True)
class TurnEnded(Event):
    """``reason``: ``done`` | ``step_limit`` | ``cancelled`` | ``error`` | ``stalled`` | ..."""

    kind: ClassVar[str] = "turn_ended"
    turn: int
    reason: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class TextDeltaEvent(Event):
    kind: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDeltaEvent(Event):
    kind: ClassVar[str] = "reasoning_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent(Event):
    """A call the model made, before it runs. ``tool_kind`` and ``subject`` are what the tool
    declares it is and acts on (:attr:`~reasonix.tools.registry.Tool.kind`,
    :meth:`~reasonix.tools.registry.Tool.subject_text`), so no frontend keeps a table of tool
    names to show it."""

    kind: ClassVar[str] = "tool_call"
    call: ToolCall
    tool_kind: str = "other"
    subject: str = ""


@dataclass(frozen=True, slots=True)
class ToolResultEvent(Event):
    kind: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class TodoChanged(Event):
    kind: ClassVar[str] = "todo_changed"
    items: tuple[Any, ...]  # tuple[TodoItem, ...]; typed loosely to keep this layer import-free


@dataclass(frozen=True, slots=True)
class RetryEvent(Event):
    kind: ClassVar[str] = "retry"
    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class OutputRetracted(Event):
    """The answer being streamed broke off after output was shown (cut, stalled, aborted) and
    is being retried from the start: a frontend discards (or marks as void) the text and
    reasoning it showed since the turn's last model request began. ``partial_chars`` is how much
    output is withdrawn; ``billed`` is the usage the server reported for the broken attempt,
    None when it reported none (a cut stream's output may still have been billed)."""

    kind: ClassVar[str] = "output_retracted"
    attempt: int
    reason: str
    partial_chars: int = 0
    billed: Usage | None = None


@dataclass(frozen=True, slots=True)
class SessionRepaired(Event):
    """A stored session was repaired on load so the server accepts it: a planned, one-time
    break of the cached prefix (``repair`` names what was fixed, ``messages`` how many)."""

    kind: ClassVar[str] = "session_repaired"
    repair: str
    messages: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class UsageEvent(Event):
    """One request's usage, stamped with who spent it and what it cost (USD, and CNY when the
    model's CNY price list is known)."""

    kind: ClassVar[str] = "usage"
    source: UsageSource
    model: str
    usage: Usage
    cost: float
    cost_cny: float | None = None
    #: the usage never arrived (an interrupted or broken request): counted from what streamed
    estimated: bool = False
    #: our estimate of the input tokens the request's images took (inside ``prompt_tokens``)
    image_tokens: int = 0


def charge_source(service: str, source: str) -> str:
    """The /cost line of a paid tool: ``web_search`` (the executor's), ``web_search:planner``."""
    return service if source == "executor" else f"{service}:{source}"


@dataclass(frozen=True, slots=True)
class ToolCharged(Event):
    """A tool paid a service (``web_search``: DeepSeek's Search API): ``requests`` made,
    ``billed`` of them, their price (USD, CNY), counted on ``source`` (the calling role)."""

    kind: ClassVar[str] = "tool_charged"
    source: UsageSource
    service: str
    requests: int
    billed: int
    cost: float
    cost_cny: float = 0.0


@dataclass(frozen=True, slots=True)
class CacheMissExplained(Event):
    """The server reported fewer cache hits than a pure-append history allows; ``changed`` says
    which part of the prefix changed (``system``, ``tools``, ``history``) or ``unknown``."""

    kind: ClassVar[str] = "cache_miss_explained"
    expected_hit_tokens: int
    actual_hit_tokens: int
    changed: tuple[str, ...]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ErrorEvent(Event):
    kind: ClassVar[str] = "error"
    error_type: str
    message: str


@dataclass(frozen=True, slots=True)
class NoticeEvent(Event):
    """Something the user should know that is not an error (e.g. output capped, step limit)."""

    kind: ClassVar[str] = "notice"
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class ReviewVerdict(Event):
    """Auto mode's reviewer answered a question about a call: ``decision`` (``allow``, ``ask``,
    ``deny``), its one-line ``reason``, the call (``tool``, ``subject``, ``call_hash``: the
    identity the verdict is bound to) and ``via`` (``reviewer``, ``earlier`` for the same call's
    verdict reused, ``malformed``, ``budget``, ``error``)."""

    kind: ClassVar[str] = "review_verdict"
    tool: str
    subject: str
    call_hash: str
    decision: str
    reason: str
    via: str = "reviewer"

    def line(self) -> str:
        """The transcript's one line: ``reviewer: allow bash `touch x` (creates the file)``."""
        subject = " ".join(self.subject.split())
        if len(subject) > 80:
            subject = subject[:79] + "…"
        earlier = " (same call as before)" if self.via == "earlier" else ""
        return f"reviewer: {self.decision} {self.tool} `{subject}`{earlier} — {self.reason}"


E = TypeVar("E", bound=Event)


@runtime_checkable
class Sink(Protocol):
    def emit(self, event: Event) -> None: ...


class NullSink:
    """Discards everything."""

    def emit(self, event: Event) -> None:
        return None


@dataclass
class CollectingSink:
    """Keeps every event in memory; for tests and scripts."""

    events: list[Event] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, cls: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, cls)]

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


class JsonLinesSink:
    """Writes one JSON object per event to a text stream (flushes each line)."""

    def __init__(self, stream: IO[str], *, skip_deltas: bool = False) -> None:
        self._stream = stream
        self._skip = {"text_delta", "reasoning_delta"} if skip_deltas else set()
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        if event.kind in self._skip:
            return
        line = json.dumps(event.to_dict(), ensure_ascii=False)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


class FanoutSink:
    """Sends each event to several sinks in order."""

    def __init__(self, sinks: Iterable[Sink]) -> None:
        self.sinks = list(sinks)

    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink.emit(event)


# ---------------------------------------------------------------------------------------------
# Orchestration events (emitted by the controller layer)


@dataclass(frozen=True, slots=True)
class GateDecided(Event):
    """The planner gate's route for a turn and why (``reason`` is a stable code)."""

    kind: ClassVar[str] = "gate_decided"
    route: str
    reason: str
    score: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PlanProduced(Event):
    kind: ClassVar[str] = "plan_produced"
    round: int
    markdown: str
    plan: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlanFailed(Event):
    kind: ClassVar[str] = "plan_failed"
    round: int
    reason: str


@dataclass(frozen=True, slots=True)
class ReplanTriggered(Event):
    kind: ClassVar[str] = "replan_triggered"
    round: int
    reason: str
    brief: str = ""


@dataclass(frozen=True, slots=True)
class PlanApproval(Event):
    kind: ClassVar[str] = "plan_approval"
    approved: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class StepCompleted(Event):
    """A ``complete_step`` claim and the host's verdict."""

    kind: ClassVar[str] = "step_completed"
    step: str
    accepted: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CompactionEvent(Event):
    """A compaction attempt: the one planned break of a session's prefix (when accepted)."""

    kind: ClassVar[str] = "compaction"
    accepted: bool
    reason: str
    messages_before: int
    messages_after: int
    chars_replaced: int = 0
    chars_summary: int = 0
