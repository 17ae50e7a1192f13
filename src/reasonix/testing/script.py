"""What a scripted model says: the ``Reply`` and ``Fault`` records shared by the in-process test
providers and :class:`reasonix.testing.FakeDeepSeekServer`."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from reasonix.messages import AssistantMessage, ToolCall

_counter = itertools.count()

#: The parts of a streamed answer a fault can be placed in.
StreamPart: TypeAlias = Literal["reasoning", "text", "tool_arguments"]


def make_call_id(seed: str = "") -> str:
    """An id shaped like DeepSeek's (``call_00_`` + 24 characters), unique per process."""
    n = next(_counter)
    digest = hashlib.sha256(f"{seed}:{n}".encode()).hexdigest()[:24]
    return f"call_{n % 100:02d}_{digest}"


@dataclass(frozen=True)
class Fault:
    """A failure the fake server injects instead of (or while) answering.

    - ``status``: answer with this HTTP status and an OpenAI-shaped error body (``message``).
    - ``keepalive_lines``: send this many ``: keep-alive`` comments (or blank lines when not
      streaming) before the first byte of the answer.
    - ``cut_after_bytes``: close the connection after this many bytes of the SSE body.
    - ``stall_seconds`` (with ``stall_after_bytes``): stop sending for this long at that point.
    - ``malformed_chunk``: send one chunk that is not valid JSON.
    - ``insufficient_resource``: finish with ``finish_reason: insufficient_system_resource``.
    - ``cut_in`` / ``stall_in``: cut the connection, or stall for ``stall_seconds``, in the middle
      of a part of the streamed answer: ``"reasoning"``, ``"text"`` or ``"tool_arguments"``
      (after output has reached the client). ``at`` (0..1) places the point inside that part.
    """

    status: int | None = None
    message: str | None = None
    keepalive_lines: int = 0
    cut_after_bytes: int | None = None
    stall_seconds: float = 0.0
    stall_after_bytes: int = 0
    malformed_chunk: bool = False
    insufficient_resource: bool = False
    cut_in: StreamPart | None = None
    stall_in: StreamPart | None = None
    at: float = 0.5


@dataclass(frozen=True)
class Reply:
    """One assistant turn the scripted model produces (or a fault instead of it)."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    fault: Fault | None = None
    #: for the in-process providers: usage to report (the fake server computes its own).
    usage: Any = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def effective_finish_reason(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def message(self) -> AssistantMessage:
        return AssistantMessage(
            content=self.content, reasoning_content=self.reasoning, tool_calls=self.tool_calls
        )

    # -- convenient constructors ---------------------------------------------------------------

    @classmethod
    def text(cls, content: str, *, reasoning: str | None = None) -> Reply:
        return cls(content=content, reasoning=reasoning)

    @classmethod
    def calls(
        cls,
        *calls: tuple[str, Mapping[str, Any] | str],
        content: str = "",
        reasoning: str | None = None,
    ) -> Reply:
        """``Reply.calls(("read_file", {"path": "a.py"}), ("ls", {}))``."""
        built = tuple(
            ToolCall(
                id=make_call_id(name),
                name=name,
                arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
            )
            for name, args in calls
        )
        return cls(content=content, reasoning=reasoning, tool_calls=built)

    @classmethod
    def call(
        cls,
        name: str,
        args: Mapping[str, Any] | str | None = None,
        *,
        content: str = "",
        reasoning: str | None = None,
    ) -> Reply:
        return cls.calls(
            (name, args if args is not None else {}), content=content, reasoning=reasoning
        )

    @classmethod
    def failing(cls, fault: Fault) -> Reply:
        return cls(fault=fault)


def chunk_text(text: str, size: int = 7) -> Sequence[str]:
    """Split text the way a model streams it (small pieces)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or []
