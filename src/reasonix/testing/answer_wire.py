"""One successful answer as the fake server writes it, and where an injected fault falls in it.

:class:`Answer` holds what the server decided to answer (content, reasoning, tool calls, the
finish reason, usage) and writes it as DeepSeek does: as SSE chunks (a first ``role`` chunk,
reasoning deltas before content, tool-call fragments, usage on the finishing chunk or, in the
OpenAI style, on a separate ``choices: []`` chunk, then ``[DONE]``) or as one
``chat.completion`` object. :func:`place_fault` turns a fault aimed at a part of the answer
(``cut_in="text"``) into a byte offset in that body.

The shapes follow DeepSeek's recorded live streams (the chunk files vercel/ai keeps under
``packages/deepseek/src/chat/__fixtures__``, summarised in shared/reference/deepseek-api.md,
"Observed on the wire"): compact JSON; in thinking mode a first delta
``{"role":"assistant","content":null,"reasoning_content":""}``, reasoning deltas with
``content: null``, answer deltas with ``reasoning_content: null`` and a finishing delta
``{"content":"","reasoning_content":null}``; without thinking a first delta
``{"role":"assistant","content":""}``, no ``reasoning_content`` keys and no
``completion_tokens_details`` in usage; about one token per chunk; tool-call chunks carrying
only ``tool_calls``; a 32-hex ``system_fingerprint``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reasonix.messages import Usage
from reasonix.testing.script import Fault

__all__ = ["Answer", "UsageStyle", "compact", "place_fault", "wire_usage"]

UsageStyle = Literal["deepseek", "openai"]
#: 32 hex characters without an ``fp_`` prefix, as in the 2026 recordings.
_FINGERPRINT = "5f2c0e4a9b7d41e38c6a2f0d1b9e7a34"


def compact(obj: Any) -> bytes:
    """JSON as DeepSeek writes it: no spaces, non-ASCII kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Answer:
    """Everything needed to write one successful answer."""

    id: str
    created: int
    model: str
    thinking: bool
    content: str
    reasoning: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    usage_wire: dict[str, Any]
    usage_style: UsageStyle
    include_usage: bool
    #: characters per streamed delta (about one token by default)
    delta_chars: int = 4

    def _chunk(
        self,
        delta: dict[str, Any] | None,
        finish: str | None = None,
        usage: dict[str, Any] | Literal[False] | None = False,
    ) -> bytes:
        """``usage=False`` leaves the field out; ``None`` sends ``"usage": null``."""
        obj: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": _FINGERPRINT,
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if usage is not False:
            obj["usage"] = usage
        return b"data: " + compact(obj) + b"\n\n"

    def sse_events(self, *, malformed: bool) -> Iterator[bytes]:
        pending: dict[str, Any] | Literal[False] | None = None if self.include_usage else False
        size = max(1, self.delta_chars)
        first: dict[str, Any] = {"role": "assistant", "content": ""}
        if self.thinking:
            first = {"role": "assistant", "content": None, "reasoning_content": ""}
        yield self._chunk(first, usage=pending)
        if malformed:
            yield b"data: {not json\n\n"
        if self.reasoning:
            for piece in _pieces(self.reasoning, size):
                yield self._chunk({"content": None, "reasoning_content": piece}, usage=pending)
        for piece in _pieces(self.content, size):
            delta: dict[str, Any] = {"content": piece}
            if self.thinking:
                delta["reasoning_content"] = None
            yield self._chunk(delta, usage=pending)
        for index, call in enumerate(self.tool_calls):
            fn = call["function"]
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": fn["name"], "arguments": ""},
            }
            yield self._chunk({"tool_calls": [head]}, usage=pending)
            for piece in _pieces(fn["arguments"], size):
                frag = {"index": index, "function": {"arguments": piece}}
                yield self._chunk({"tool_calls": [frag]}, usage=pending)
        last: dict[str, Any] = {"content": ""}
        if self.thinking:
            last["reasoning_content"] = None
        if self.usage_style == "deepseek":
            yield self._chunk(last, self.finish_reason, usage=self.usage_wire)
        else:
            yield self._chunk({}, self.finish_reason, usage=pending)
            if self.include_usage:
                yield self._chunk(None, usage=self.usage_wire)
        yield b"data: [DONE]\n\n"

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.thinking:
            message["reasoning_content"] = self.reasoning
        if self.tool_calls:
            # Non-streamed tool calls carry their position as ``index`` too.
            message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(self.tool_calls)]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": _FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage_wire,
        }


#: At most this many deltas per streamed part. A real answer is bounded by the model's output
#: limit, so token-sized deltas stay realistic; a test that streams a synthetic 100 MB argument
#: gets larger pieces instead of 25 million chunks.
MAX_PIECES = 65_536


def _pieces(text: str, size: int) -> list[str]:
    size = max(size, -(-len(text) // MAX_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


def wire_usage(usage: Usage, style: UsageStyle, *, thinking: bool = True) -> dict[str, Any]:
    """``usage`` as the wire carries it, with DeepSeek's cache fields in its style; without
    thinking DeepSeek sends no ``completion_tokens_details``."""
    wire: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_hit_tokens},
    }
    if thinking:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    if style == "deepseek":
        wire["prompt_cache_hit_tokens"] = usage.cache_hit_tokens
        wire["prompt_cache_miss_tokens"] = usage.cache_miss_tokens
    return wire


_PART_KEYS: Mapping[str, str] = {
    "reasoning": "reasoning_content",
    "text": "content",
    "tool_arguments": "tool_calls",
}


def _part_spans(events: Sequence[bytes], part: str) -> list[tuple[int, int]]:
    """Byte ranges (within ``events`` joined) of the chunks carrying ``part`` of the answer."""
    key = _PART_KEYS[part]
    offset = 0
    spans: list[tuple[int, int]] = []
    for event in events:
        delta: Any = None
        if event.startswith(b"data: {"):
            try:
                chunk = json.loads(event[6:])
                delta = chunk["choices"][0]["delta"] if chunk.get("choices") else None
            except (ValueError, KeyError, IndexError):
                delta = None
        value = delta.get(key) if isinstance(delta, dict) else None
        if part == "tool_arguments" and isinstance(value, list):
            value = "".join(
                str((frag.get("function") or {}).get("arguments") or "")
                for frag in value
                if isinstance(frag, dict) and "id" not in frag
            )
        if value:
            spans.append((offset, offset + len(event)))
        offset += len(event)
    return spans


def place_fault(fault: Fault, prefix_len: int, events: Sequence[bytes]) -> Fault:
    """Turn ``cut_in`` / ``stall_in`` into byte offsets for this body: inside the part, after
    at least one whole chunk of it reached the client (so output was shown), before its end."""
    from dataclasses import replace

    changes: dict[str, Any] = {}
    for part, name in ((fault.cut_in, "cut_after_bytes"), (fault.stall_in, "stall_after_bytes")):
        if part is None:
            continue
        spans = _part_spans(events, part)
        if not spans:
            raise ValueError(f"Fault placed in {part!r}, but the answer has no {part} part")
        if len(spans) == 1:
            point = spans[0][1]
        else:
            k = min(max(int(len(spans) * fault.at), 1), len(spans) - 1)
            start, end = spans[k]
            point = start + (end - start) // 2
        changes[name] = prefix_len + point
    return replace(fault, **changes)
