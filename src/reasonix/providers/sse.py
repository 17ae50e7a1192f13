"""Server-sent events and chat-completions chunk assembly: pure, synchronous, no I/O.

Two pieces, used by :class:`reasonix.providers.openai_compat.OpenAICompatProvider` and testable
on their own:

- :class:`SSEDecoder` turns raw bytes (split anywhere, even inside a UTF-8 character or between
  ``\\r`` and ``\\n``) into :class:`SSEEvent` records. Comment lines (``: keep-alive``) and blank
  lines between events are skipped; several ``data:`` lines of one event are joined with ``\\n``.
- :class:`StreamAssembler` turns the ``data`` of each event (a chat-completions chunk, or
  ``[DONE]``) into :mod:`reasonix.messages` stream events, and at the end into the assembled
  :class:`~reasonix.messages.AssistantMessage`. Tool calls are reported complete only when the
  stream finished cleanly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reasonix.errors import (
    MalformedChunkError,
    StreamCutError,
    StreamError,
    TransientFinishError,
)
from reasonix.messages import (
    AssistantMessage,
    ReasoningDelta,
    StreamEvent,
    StreamFinished,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
    Usage,
    UsageReported,
)

__all__ = [
    "DONE",
    "SSEDecoder",
    "SSEEvent",
    "StreamAssembler",
    "is_output_event",
    "output_chars",
]

#: The data of the event that ends an OpenAI-style stream.
DONE = "[DONE]"

#: DeepSeek's finish reasons for an incomplete answer that may be retried: no capacity right
#: now, and "the generation process was interrupted".
INSUFFICIENT_RESOURCE = "insufficient_system_resource"
ABORTED = "aborted"
TRANSIENT_FINISHES: dict[str, str] = {
    INSUFFICIENT_RESOURCE: "no capacity right now",
    ABORTED: "the generation process was interrupted",
}

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched server-sent event. ``event`` is None when the server named none."""

    data: str
    event: str | None = None
    id: str | None = None


class SSEDecoder:
    """Incremental SSE parser (the parts of the WHATWG rules a chat stream uses).

    ``feed(bytes)`` returns the events completed by those bytes; ``close()`` returns an event left
    without its terminating blank line (a lenient reading of servers that end the body right
    after the last ``data:`` line). ``comments`` counts comment lines seen, e.g. keep-alives.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._at_start = True
        self.comments = 0
        self._scanned = 0  # buffered bytes already searched for a line end

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume ``chunk``; return the events it completed, in order."""
        self._buffer += chunk
        if self._at_start:
            # The SSE rules strip one UTF-8 byte order mark at the start of the stream; left in,
            # it would turn the first field name into "\ufeffdata" and lose the first event.
            if len(self._buffer) < len(_BOM) and _BOM.startswith(self._buffer):
                return []
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
            self._at_start = False
        events: list[SSEEvent] = []
        start = 0
        while True:
            # Resume where the last search ended: a long line arriving in many chunks would
            # otherwise be searched again from its start on every chunk (quadratic).
            match = _LINE_END.search(self._buffer, max(start, self._scanned))
            if match is None:
                break
            # A lone "\r" at the very end may be the first half of "\r\n": wait for more bytes
            # so the "\n" is not read as a second (blank) line that would dispatch early.
            if match.group() == b"\r" and match.end() == len(self._buffer):
                break
            line = bytes(self._buffer[start : match.start()])
            start = match.end()
            event = self._line(line)
            if event is not None:
                events.append(event)
        del self._buffer[:start]
        # The last byte is searched again: a "\r" there may be the start of "\r\n".
        self._scanned = max(len(self._buffer) - 1, 0)
        return events

    def close(self) -> list[SSEEvent]:
        """End of input: flush a final line and any event still being collected."""
        events: list[SSEEvent] = []
        if self._buffer:
            line = bytes(self._buffer).rstrip(b"\r")
            self._buffer.clear()
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _line(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        # Decode per line: line ends are ASCII, so a line never splits a UTF-8 sequence.
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            self.comments += 1
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value or None
        elif name == "id":
            self._id = value
        # "retry" and unknown fields are ignored, as the SSE rules say.
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = None
            return None
        event = SSEEvent("\n".join(self._data), self._event, self._id)
        self._data = []
        self._event = None
        return event


def is_output_event(event: StreamEvent) -> bool:
    """True for events that carry model output to the caller (a retry after them must tell
    the caller to retract that output)."""
    return isinstance(event, TextDelta | ReasoningDelta | ToolCallStarted | ToolCallArgumentsDelta)


def output_chars(event: StreamEvent) -> int:
    """Characters of model output an event carries (0 for the others)."""
    if isinstance(event, TextDelta | ReasoningDelta):
        return len(event.text)
    if isinstance(event, ToolCallArgumentsDelta):
        return len(event.delta)
    if isinstance(event, ToolCallStarted):
        return len(event.name)
    return 0


@dataclass(slots=True)
class _PartialCall:
    ordinal: int
    id: str | None
    name: str | None
    arguments: list[str] = field(default_factory=list)
    started: bool = False
    pending: list[str] = field(default_factory=list)


def _error_message(error: Any) -> str:
    if isinstance(error, Mapping):
        message = error.get("message") or error.get("code") or error.get("type")
        if message:
            return str(message)
    return str(error)


class StreamAssembler:
    """Builds stream events and the final assistant message from chat-completions chunks.

    Feed each SSE event with :meth:`feed` (``[DONE]`` included), then call :meth:`finish` once the
    body ended. ``finish`` raises :class:`StreamCutError` unless a finish reason was seen; only
    then are ``ToolCallComplete`` events emitted, so half-streamed arguments never look complete.

    ``ToolCallStarted.index`` / ``ToolCallArgumentsDelta.index`` are the call's position in this
    message (0, 1, ...), not the wire ``index``: some servers reuse a wire index for a new call
    (a new id on the same index), and callers need one key per call.
    """

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self._last_index: int | None = None
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.done = False
        self.chunks = 0
        #: the ``model`` the chunks name (the first one seen), None when they name none
        self.model: str | None = None

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Consume one SSE event; return the output events it produced."""
        data = event.data
        if data.strip() == DONE:
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise MalformedChunkError(
                f"the server sent a stream chunk that is not JSON: {data[:200]!r}"
            ) from exc
        if event.event == "error" or (isinstance(chunk, Mapping) and chunk.get("error")):
            error = chunk.get("error") or chunk if isinstance(chunk, Mapping) else chunk
            raise StreamError(f"the server reported an error mid-stream: {_error_message(error)}")
        if not isinstance(chunk, Mapping):
            raise MalformedChunkError(
                f"the server sent a stream chunk that is not a JSON object: {data[:200]!r}"
            )
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: Mapping[str, Any]) -> list[StreamEvent]:
        """Consume one decoded chunk (``{"choices": [...], "usage": ...}``)."""
        self.chunks += 1
        model = chunk.get("model")
        if self.model is None and isinstance(model, str) and model:
            self.model = model
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            try:
                self.usage = Usage.from_api(usage)
            except (TypeError, ValueError) as exc:
                raise MalformedChunkError(
                    f"the server sent a usage object with non-numeric counts: {usage!r:.200}"
                ) from exc
        choices = chunk.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise MalformedChunkError(f"'choices' is not a list in stream chunk: {chunk!r:.200}")
        out: list[StreamEvent] = []
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise MalformedChunkError(f"a choice is not an object: {choice!r:.200}")
            # We always ask for one completion; ignore others should a server send them.
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                self._delta(delta, out)
            reason = choice.get("finish_reason")
            if reason:
                if reason in TRANSIENT_FINISHES:
                    raise TransientFinishError(
                        f"the server finished with {reason!r} ({TRANSIENT_FINISHES[reason]}); "
                        "the answer is incomplete and the request can be retried",
                        finish_reason=str(reason),
                        usage=self.usage,
                    )
                self.finish_reason = str(reason)
        return out

    def feed_completion(self, completion: Mapping[str, Any]) -> list[StreamEvent]:
        """Consume a whole non-streamed ``chat.completion`` object, as if it were one chunk.

        For servers that ignore ``stream: true`` and answer with plain JSON.
        """
        error = completion.get("error")
        if error:
            raise StreamError(f"the server reported an error: {_error_message(error)}")
        choices = completion.get("choices")
        if not isinstance(choices, list):
            raise MalformedChunkError(f"a completion without 'choices': {completion!r:.200}")
        as_chunk: dict[str, Any] = {
            "model": completion.get("model"),
            "usage": completion.get("usage"),
            "choices": [],
        }
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise MalformedChunkError(f"a choice is not an object: {choice!r:.200}")
            message = choice.get("message")
            delta = dict(message) if isinstance(message, Mapping) else {}
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                delta["tool_calls"] = [
                    {**call, "index": i} if isinstance(call, Mapping) else call
                    for i, call in enumerate(calls)
                ]
            as_chunk["choices"].append(
                {
                    "index": choice.get("index", 0),
                    "delta": delta,
                    "finish_reason": choice.get("finish_reason"),
                }
            )
        out = self.feed_chunk(as_chunk)
        self.done = True
        return out

    def _delta(self, delta: Mapping[str, Any], out: list[StreamEvent]) -> None:
        # DeepSeek names it reasoning_content; some compatible servers use "reasoning".
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning.append(reasoning)
            out.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._content.append(content)
            out.append(TextDelta(content))
        calls = delta.get("tool_calls")
        if calls is None:
            return
        if not isinstance(calls, list):
            raise MalformedChunkError(f"'tool_calls' is not a list: {calls!r:.200}")
        for fragment in calls:
            if not isinstance(fragment, Mapping):
                raise MalformedChunkError(
                    f"a tool-call fragment is not an object: {fragment!r:.200}"
                )
            self._tool_fragment(fragment, out)

    def _tool_fragment(self, fragment: Mapping[str, Any], out: list[StreamEvent]) -> None:
        raw_index = fragment.get("index")
        call_id = fragment.get("id") or None
        function = fragment.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name") or None
        arguments = function.get("arguments")
        if raw_index is None:
            # Servers that omit the index: a new id opens a new call, the id of a call already
            # open (some servers repeat it on every fragment) continues it, and a fragment
            # without an id continues the latest call.
            known = None
            if call_id is not None:
                known = next((i for i, c in self._by_index.items() if c.id == call_id), None)
            if known is not None:
                index = known
            elif call_id is not None or self._last_index is None:
                index = max(self._by_index, default=-1) + 1
            else:
                index = self._last_index
        elif isinstance(raw_index, int):
            index = raw_index
        else:
            raise MalformedChunkError(f"tool-call index is not an integer: {raw_index!r}")
        self._last_index = index

        current = self._by_index.get(index)
        if current is None or (
            call_id is not None and current.id is not None and call_id != current.id
        ):
            if call_id is None and name is None:
                raise MalformedChunkError(
                    f"tool-call arguments for index {index} arrived before the call's id and name"
                )
            current = _PartialCall(len(self._calls), call_id and str(call_id), None)
            self._calls.append(current)
            self._by_index[index] = current
        elif current.id is None and call_id is not None:
            current.id = str(call_id)
        if current.name is None and name is not None:
            current.name = str(name)

        if isinstance(arguments, str) and arguments:
            current.arguments.append(arguments)
            current.pending.append(arguments)
        if not current.started and current.name is not None:
            if current.id is None:
                # A server that sends no ids at all: give the call a stable local one.
                current.id = f"call_{current.ordinal}"
            current.started = True
            out.append(ToolCallStarted(current.ordinal, current.id, current.name))
        if current.started and current.pending:
            assert current.id is not None
            out.extend(
                ToolCallArgumentsDelta(current.ordinal, current.id, piece)
                for piece in current.pending
            )
            current.pending.clear()

    # -- the end --------------------------------------------------------------------------------

    @property
    def has_output(self) -> bool:
        """Whether any text, reasoning or tool-call output was assembled."""
        return bool(self._content or self._reasoning or self._calls)

    def message(self) -> AssistantMessage:
        """The assistant message assembled so far (tool calls only once they have a name)."""
        calls = tuple(
            ToolCall(c.id or f"call_{c.ordinal}", c.name or "", "".join(c.arguments))
            for c in self._calls
        )
        return AssistantMessage(
            content="".join(self._content),
            reasoning_content="".join(self._reasoning) if self._reasoning else None,
            tool_calls=calls,
        )

    def finish(self) -> list[StreamEvent]:
        """The body ended: return the closing events, or raise if the stream was cut."""
        if self.finish_reason is None:
            seen = "after [DONE]" if self.done else "without [DONE]"
            raise StreamCutError(
                f"the stream ended {seen} and without a finish reason after {self.chunks} "
                "chunk(s); the answer is incomplete"
            )
        for call in self._calls:
            if not call.started:
                raise MalformedChunkError(
                    f"tool call #{call.ordinal} (id {call.id!r}) never got a function name"
                )
        message = self.message()
        out: list[StreamEvent] = [ToolCallComplete(call) for call in message.tool_calls]
        if self.usage is not None:
            out.append(UsageReported(self.usage))
        out.append(StreamFinished(self.finish_reason, message, self.usage, self.model))
        return out
