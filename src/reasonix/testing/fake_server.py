"""A faithful fake of DeepSeek's chat-completions endpoint, served over real HTTP on loopback.

Use it to test a client (reasonix's own provider, the ``openai`` SDK, plain ``httpx``) against
the wire format DeepSeek actually speaks, without the internet::

    with FakeDeepSeekServer([Reply.text("hi", reasoning="think")]) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
        ...
        srv.assert_exhausted()

What it models:

- SSE framing (``data: <json>`` events, ``: keep-alive`` comments, ``data: [DONE]``), the first
  ``role`` chunk, ``reasoning_content`` deltas before ``content``, tool-call fragments, usage on
  the finishing chunk (or, with ``usage_style="openai"``, on a separate ``choices: []`` chunk);
- non-streamed ``chat.completion`` objects;
- usage with ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens`` computed by a prefix-cache
  simulator (:class:`~reasonix.testing.prefix_cache.PrefixCache`) over a deterministic
  tokenisation of the request (see :func:`render_prompt`);
- the request validation DeepSeek performs (roles, tool names, tool answers, the
  ``reasoning_content`` rule of thinking mode, ``tool_choice`` in thinking mode, models, auth);
- injected faults (:class:`~reasonix.testing.script.Fault`): error statuses, keep-alives, cut
  connections, stalls, a malformed chunk, ``insufficient_system_resource``.

Responses use HTTP/1.1 chunked transfer encoding (as the real service does) and
``Connection: close``, so every request opens its own connection and a cut connection surfaces
in the client as an incomplete chunked body.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from reasonix.messages import Usage, canonical_json
from reasonix.testing.prefix_cache import PrefixCache
from reasonix.testing.script import Fault, Reply

__all__ = [
    "FakeDeepSeekServer",
    "RecordedRequest",
    "render_message",
    "render_prompt",
    "tokenize",
]

UsageStyle = Literal["deepseek", "openai"]
#: ``units``: whole stored units (see PrefixCache); ``measured``: the 2026-09 fit on
#: deepseek-flash, ``cached = 128 * max(0, floor(n / 128) - 1)`` for a fully matched prefix.
CacheFormula = Literal["units", "measured"]

_PATHS = frozenset({"/chat/completions", "/v1/chat/completions"})
_MODELS_PATHS = frozenset({"/models", "/v1/models"})
_BALANCE_PATHS = frozenset({"/user/balance", "/v1/user/balance"})
_ROLES = ("system", "user", "assistant", "tool")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: The effort levels the server knows, and the names it maps onto them.
EFFORT_LEVELS = ("low", "high", "max")
EFFORT_ALIASES: Mapping[str, str] = {
    "minimal": "low",
    "medium": "high",
    "xhigh": "high",
    "ultra": "max",
}
_MAX_TOOLS = 128
MAX_OUTPUT_TOKENS = 393_216
CONTEXT_WINDOW = 1_048_576
_FINGERPRINT = "fp_reasonix_fake"
#: The models ``GET /models`` lists today, the legacy alias still served, the retired names.
LISTED_MODELS = ("deepseek-flash", "deepseek-v4-pro")
LEGACY_ALIASES: Mapping[str, str] = {"deepseek-v4-flash": "deepseek-flash"}
RETIRED_MODELS = ("deepseek-chat", "deepseek-reasoner")
#: The documented 400 message when an earlier assistant turn lacks its reasoning.
REASONING_MUST_BE_PASSED = (
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)
DEFAULT_BALANCE: Mapping[str, Any] = {
    "is_available": True,
    "balance_infos": [
        {
            "currency": "USD",
            "total_balance": "110.00",
            "granted_balance": "10.00",
            "topped_up_balance": "100.00",
        }
    ],
}

#: DeepSeek-like default messages for injected error statuses.
STATUS_MESSAGES: Mapping[int, tuple[str, str]] = {
    400: ("Invalid request", "invalid_request_error"),
    401: ("Authentication Fails, Your api key is invalid", "authentication_error"),
    402: ("Insufficient Balance", "insufficient_balance"),
    422: ("Invalid Parameters", "invalid_request_error"),
    429: ("Rate Limit Reached", "rate_limit_error"),
    500: ("Server Error", "server_error"),
    503: ("Server Overloaded", "server_error"),
}


# ---------------------------------------------------------------------------------------------
# Deterministic tokenisation


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return canonical_json(content)


def render_message(message: Mapping[str, Any], *, with_reasoning: bool = True) -> str:
    """One message as the model "sees" it, in a canonical text form.

    Assistant messages render ``content`` and ``tool_calls``, and their ``reasoning_content``
    (when present) if ``with_reasoning``: DeepSeek concatenates the reasoning of every earlier
    turn into the context when the request carries tools, and ignores it otherwise. Tool calls
    render id, name and the raw ``arguments`` string, so JSON key order of the call object does
    not matter but the argument bytes do.
    """
    role = str(message.get("role"))
    if role == "assistant":
        calls = message.get("tool_calls") or []
        parts = ["<|assistant|>"]
        reasoning = message.get("reasoning_content")
        if with_reasoning and reasoning is not None:
            parts.append(f"<think>{_text(reasoning)}</think>")
        parts.append(_text(message.get("content")))
        for call in calls:
            fn = (call.get("function") or {}) if isinstance(call, Mapping) else {}
            call_id = call.get("id", "") if isinstance(call, Mapping) else ""
            parts.append(
                f"<|tool_call|>{call_id}\n{fn.get('name', '')}\n{_text(fn.get('arguments'))}"
            )
        parts.append("<|end|>")
        return "".join(parts)
    if role == "tool":
        return f"<|tool|>{message.get('tool_call_id', '')}\n{_text(message.get('content'))}<|end|>"
    return f"<|{role}|>{_text(message.get('content'))}<|end|>"


def render_prompt(body: Mapping[str, Any]) -> list[str]:
    """The request as a list of text segments: canonical tools JSON first, then each message
    (earlier reasoning only when the request carries tools, as DeepSeek does)."""
    segments: list[str] = []
    tools = body.get("tools")
    if tools:
        segments.append("<|tools|>" + canonical_json(tools))
    with_reasoning = bool(tools)
    segments.extend(
        render_message(m, with_reasoning=with_reasoning) for m in body.get("messages") or ()
    )
    return segments


def tokenize(segments: Iterable[str], chars_per_token: int = 4) -> list[str]:
    """Tokens = consecutive ``chars_per_token``-character chunks of each segment.

    Each segment (tools block, message) starts on a token boundary, as role markers are special
    tokens in a real tokenizer. That makes tokenisation append-only: the tokens of
    ``messages + [m]`` are the tokens of ``messages`` followed by the tokens of ``m``.
    """
    tokens: list[str] = []
    c = chars_per_token
    for segment in segments:
        tokens.extend(segment[i : i + c] for i in range(0, len(segment), c))
    return tokens


def _count(text: str | None, chars_per_token: int) -> int:
    if not text:
        return 0
    return -(-len(text) // chars_per_token)


# ---------------------------------------------------------------------------------------------
# Records


@dataclass
class RecordedRequest:
    """One request the server received, and what it answered.

    ``body`` is the parsed JSON body (``{}`` when it was not valid JSON; see ``raw_body``).
    ``headers`` has lower-cased names. ``usage`` is the usage the server reported (None when the
    request was rejected or faulted). ``prompt_tokens`` is the simulated token length of the
    request; ``stored_tokens_after_output`` the length of its input plus its generated output as
    the next request of a pure-append client would replay it.
    """

    index: int
    path: str
    headers: dict[str, str]
    raw_body: bytes
    body: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    error: str | None = None
    reply: Reply | None = None
    usage: Usage | None = None
    prompt_tokens: int | None = None
    cache_hit_tokens: int | None = None
    stored_tokens_after_output: int | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return list(msgs) if isinstance(msgs, list) else []

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def thinking(self) -> bool:
        """Thinking mode as the server understood it (on unless explicitly disabled)."""
        return _thinking_enabled(self.body)


def _thinking_enabled(body: Mapping[str, Any]) -> bool:
    thinking = body.get("thinking")
    return not (isinstance(thinking, Mapping) and thinking.get("type") == "disabled")


def effective_effort(body: Mapping[str, Any]) -> str | None:
    """The effort level the server runs a (valid) request at: None with thinking disabled,
    ``high`` when none is given, aliases mapped (minimal→low, medium/xhigh→high, ultra→max)."""
    if not _thinking_enabled(body):
        return None
    effort = body.get("reasoning_effort")
    if effort is None:
        return "high"
    return EFFORT_ALIASES.get(str(effort), str(effort))


class _Rejection(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


def _bad(message: str, param: str | None = None) -> _Rejection:
    return _Rejection(400, message, param=param)


_AUTH_FAILED = _Rejection(
    401,
    "Authentication Fails, Your api key is invalid",
    type_="authentication_error",
    code="invalid_request_error",
)


def _model_entry(name: str) -> dict[str, Any]:
    """One ``GET /models`` entry with the metadata DeepSeek publishes."""
    return {
        "id": name,
        "object": "model",
        "owned_by": "deepseek",
        "context_window": CONTEXT_WINDOW,
        "max_output_tokens": MAX_OUTPUT_TOKENS,
        "input_modalities": ["text"],
        "effort": {"supported_levels": list(EFFORT_LEVELS), "default_level": "high"},
    }


# ---------------------------------------------------------------------------------------------
# Validation


def _validate(body: Any, *, models: frozenset[str] | None) -> None:
    if not isinstance(body, dict):
        raise _bad("Failed to deserialize the JSON body: expected a JSON object")
    model = body.get("model")
    if isinstance(model, str) and model in RETIRED_MODELS:
        raise _bad(
            f"Model Not Exist: {model} was retired on 2026-07-24; use deepseek-flash or "
            "deepseek-v4-pro",
            "model",
        )
    if not isinstance(model, str) or (models is not None and model not in models):
        raise _bad("Model Not Exist", "model")

    thinking = body.get("thinking")
    if thinking is not None and (
        not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled")
    ):
        raise _bad('thinking.type must be "enabled" or "disabled"', "thinking")
    effort = body.get("reasoning_effort")
    if effort is not None and (
        not isinstance(effort, str)
        or (effort not in EFFORT_LEVELS and effort not in EFFORT_ALIASES)
    ):
        raise _Rejection(
            422,
            f"Failed to deserialize the JSON body into the target type: reasoning_effort: "
            f"unknown variant `{effort}`, expected one of `low`, `high`, `max`",
            param="reasoning_effort",
        )
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 1 <= max_tokens <= MAX_OUTPUT_TOKENS
    ):
        raise _bad(
            f"Invalid max_tokens value, the valid range of max_tokens is [1, {MAX_OUTPUT_TOKENS}]",
            "max_tokens",
        )
    thinking_on = _thinking_enabled(body)

    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise _bad("tools must be a list", "tools")
        if len(tools) > _MAX_TOOLS:
            raise _bad(
                f"Too many tools: {len(tools)} given, at most {_MAX_TOOLS} are supported", "tools"
            )
        for i, tool in enumerate(tools):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if (
                not isinstance(tool, dict)
                or tool.get("type") != "function"
                or not isinstance(fn, dict)
            ):
                raise _bad(f"tools[{i}] must be a function tool", "tools")
            name = fn.get("name")
            if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
                raise _bad(
                    f"Invalid 'tools[{i}].function.name': {name!r} does not match "
                    "'^[a-zA-Z0-9_-]{1,64}$'",
                    "tools",
                )

    choice = body.get("tool_choice")
    if choice is not None:
        named = isinstance(choice, dict)
        if not named and choice not in ("none", "auto", "required"):
            raise _bad(f"Invalid tool_choice {choice!r}", "tool_choice")
        if thinking_on and (named or choice == "required"):
            raise _bad(
                "tool_choice 'required' or a named function is not supported in thinking mode",
                "tool_choice",
            )

    fmt = body.get("response_format")
    if fmt is not None and (
        not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object")
    ):
        raise _bad("response_format.type must be 'text' or 'json_object'", "response_format")

    _validate_messages(body.get("messages"), reasoning_required=thinking_on and bool(tools))


def _validate_messages(messages: Any, *, reasoning_required: bool) -> None:
    """Roles, tool answers, and the reasoning rule: in thinking mode, when the request carries
    tools, *every* earlier assistant message must carry ``reasoning_content`` (a string, empty
    allowed), whether or not it made tool calls."""
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list", "messages")
    answered_ids: set[str] = set()
    called_ids: set[str] = set()
    pending: set[str] = set()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise _bad(f"messages[{i}] must be an object", "messages")
        role = msg.get("role")
        if role not in _ROLES:
            raise _bad(
                f"Failed to deserialize the JSON body into the target type: messages[{i}].role: "
                f"unknown variant `{role}`, expected one of `system`, `user`, `assistant`, `tool`",
                "messages",
            )
        if role != "tool" and pending:
            raise _bad(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. (insufficient tool messages following "
                "tool_calls message)",
                "messages",
            )
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in called_ids:
                raise _bad(
                    f"Messages with role 'tool' must be a response to a preceding message with "
                    f"'tool_calls': messages[{i}].tool_call_id {call_id!r} does not match one",
                    "messages",
                )
            answered_ids.add(call_id)
            pending.discard(call_id)
        elif role == "assistant":
            calls = msg.get("tool_calls")
            if calls:
                if not isinstance(calls, list):
                    raise _bad(f"messages[{i}].tool_calls must be a list", "messages")
                for j, call in enumerate(calls):
                    fn = call.get("function") if isinstance(call, dict) else None
                    if (
                        not isinstance(call, dict)
                        or not isinstance(call.get("id"), str)
                        or not isinstance(fn, dict)
                        or not isinstance(fn.get("name"), str)
                        or not isinstance(fn.get("arguments"), str)
                    ):
                        raise _bad(
                            f"messages[{i}].tool_calls[{j}] must have an id and a function "
                            "with a name and string arguments",
                            "messages",
                        )
                    called_ids.add(call["id"])
                    pending.add(call["id"])
            if reasoning_required and not isinstance(msg.get("reasoning_content"), str):
                raise _bad(REASONING_MUST_BE_PASSED, "messages")
        elif msg.get("content") is None:
            raise _bad(f"messages[{i}].content is required", "messages")
    if pending:
        raise _bad(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. (insufficient tool messages following "
            "tool_calls message)",
            "messages",
        )


# ---------------------------------------------------------------------------------------------
# Response bodies


@dataclass
class _Answer:
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
        return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"

    def sse_events(self, *, malformed: bool) -> Iterator[bytes]:
        pending: dict[str, Any] | Literal[False] | None = None if self.include_usage else False
        yield self._chunk({"role": "assistant", "content": ""}, usage=pending)
        if malformed:
            yield b"data: {not json\n\n"
        if self.reasoning:
            for piece in _pieces(self.reasoning, 6):
                yield self._chunk({"content": None, "reasoning_content": piece}, usage=pending)
        for piece in _pieces(self.content, 6):
            delta: dict[str, Any] = {"content": piece}
            if self.thinking:
                delta["reasoning_content"] = None
            yield self._chunk(delta, usage=pending)
        for index, call in enumerate(self.tool_calls):
            fn = call["function"]
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": fn["name"], "arguments": ""},
            }
            yield self._chunk({"tool_calls": [first]}, usage=pending)
            for piece in _pieces(fn["arguments"], max(4, -(-len(fn["arguments"]) // 3))):
                frag = {"index": index, "function": {"arguments": piece}}
                yield self._chunk({"tool_calls": [frag]}, usage=pending)
        if self.usage_style == "deepseek":
            yield self._chunk({"content": ""}, self.finish_reason, usage=self.usage_wire)
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
            message["tool_calls"] = self.tool_calls
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


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage_wire(usage: Usage, style: UsageStyle) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_hit_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }
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


def _place_fault(fault: Fault, prefix_len: int, events: Sequence[bytes]) -> Fault:
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


class _Cut(Exception):
    """The injected fault closes the connection here."""


class _BodyWriter:
    """Writes a chunked body, applying the byte-offset faults (stall, cut)."""

    def __init__(self, wfile: Any, fault: Fault | None, stop: threading.Event) -> None:
        self._wfile = wfile
        self._stop = stop
        self.sent = 0
        self._cut_at = fault.cut_after_bytes if fault else None
        self._stall_at: int | None = None
        self._stall_for = 0.0
        if fault and fault.stall_seconds > 0:
            self._stall_at = max(0, fault.stall_after_bytes)
            self._stall_for = fault.stall_seconds

    def _emit(self, data: bytes) -> None:
        self._wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def write(self, data: bytes) -> None:
        while True:
            limit = len(data)
            if self._stall_at is not None:
                limit = min(limit, self._stall_at - self.sent)
            if self._cut_at is not None:
                limit = min(limit, self._cut_at - self.sent)
            if limit > 0:
                self._emit(data[:limit])
                self.sent += limit
                data = data[limit:]
            if self._stall_at is not None and self.sent >= self._stall_at:
                self._stall_at = None
                self._stop.wait(self._stall_for)  # the server's shutdown ends a stall early
            if self._cut_at is not None and self.sent >= self._cut_at:
                raise _Cut
            if not data:
                return

    def finish(self) -> None:
        self._wfile.write(b"0\r\n\r\n")


# ---------------------------------------------------------------------------------------------
# HTTP plumbing


class _HTTPServer(ThreadingHTTPServer):
    # join handler threads on close so nothing outlives the fake (no stray sockets or warnings)
    daemon_threads = False
    block_on_close = True
    # the default backlog of 5 makes bursts of concurrent clients wait for SYN retries (~1 s)
    request_queue_size = 128
    fake: FakeDeepSeekServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hangs up mid-answer is normal in fault tests; anything else is recorded
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError | TimeoutError):
            self.fake._note_error(f"fake server handler crashed: {exc!r}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeDeepSeek/1.0"
    sys_version = ""
    timeout = 30  # bound any blocked socket operation so shutdown can always join
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload = self.server.fake._get(path, headers)
        self._send_json(status, payload)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path not in _PATHS:
            self._send_json(404, _Rejection(404, f"Not Found: {path}", code=None).body())
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            self.server.fake._serve(self, path, headers, raw)
        except (ConnectionError, TimeoutError):
            pass  # the client went away
        self.close_connection = True

    def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _start_body(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True


# ---------------------------------------------------------------------------------------------
# The server


class FakeDeepSeekServer:
    """A DeepSeek-compatible chat-completions server on ``127.0.0.1`` (ephemeral port).

    Use as a context manager (``with`` or ``async with``), or call :meth:`start` / :meth:`close`.
    Answers come from ``script`` (first in, first out, extended by :meth:`push`) and, once the
    script is empty, from ``handler(request)``; with neither, the server answers 500 and the
    problem is recorded in :attr:`errors` (and :meth:`assert_exhausted` fails).

    - ``models``: accepted model names (None accepts any); others get 400 "Model Not Exist".
    - ``api_key``: when set, any other bearer token gets 401.
    - ``unit_tokens`` / ``count_last_unit``: prefix-cache settings (see
      :class:`~reasonix.testing.prefix_cache.PrefixCache`; the 2026 measurement is
      ``unit_tokens=128, count_last_unit=False``). One cache per (model, ``user_id``).
    - ``chars_per_token``: the deterministic tokenisation (see :func:`tokenize`).
    - ``usage_style``: ``"deepseek"`` puts usage (with ``prompt_cache_hit_tokens`` /
      ``prompt_cache_miss_tokens``) on the finishing chunk; ``"openai"`` sends it only with
      ``stream_options.include_usage``, on a separate final chunk with ``choices: []``, with
      ``prompt_tokens_details.cached_tokens`` as the only cache figure.

    - ``cache_formula``: ``"measured"`` applies the 2026-09 fit (128-token units, the unit holding
      the end of the matched prefix never counts: a full match of ``n`` tokens hits
      ``128 * max(0, n // 128 - 1)``); it sets ``unit_tokens`` to 128.
    - ``listed_models``: the ids ``GET /models`` lists (None answers 404, like a server without
      a model list); by default today's ``deepseek-flash`` and ``deepseek-v4-pro``.
    - ``balance``: the ``GET /user/balance`` answer (None answers 404).

    The server enforces DeepSeek's documented rules with its documented error bodies: in
    thinking mode a request that carries tools must pass back the ``reasoning_content`` of
    every earlier assistant message (400 otherwise); at most 128 tools with names matching
    ``[a-zA-Z0-9_-]{1,64}``; ``reasoning_effort`` ``low|high|max`` (minimal, medium, xhigh,
    ultra are mapped; anything else is 422 "unknown variant"); no ``required`` or named
    ``tool_choice`` in thinking mode; the retired ``deepseek-chat`` / ``deepseek-reasoner`` are
    400; ``max_tokens`` within 1..393216. The effort is part of the cache identity.

    In thinking mode (the default), a scripted reply with tool calls but no reasoning gets a short
    generated ``reasoning_content``, as the real model always reasons before calling tools; with
    thinking disabled a reply's reasoning is never sent. ``Reply.meta["raw_sse"]`` (bytes) is
    sent verbatim as the streamed body, for protocol edge cases.
    """

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        handler: Callable[[RecordedRequest], Reply] | None = None,
        models: Iterable[str] | None = None,
        api_key: str | None = None,
        unit_tokens: int = 64,
        count_last_unit: bool = True,
        chars_per_token: int = 4,
        usage_style: UsageStyle = "deepseek",
        cache_formula: CacheFormula = "units",
        listed_models: Iterable[str] | None = LISTED_MODELS,
        balance: Mapping[str, Any] | None = DEFAULT_BALANCE,
    ) -> None:
        if cache_formula not in ("units", "measured"):
            raise ValueError(f"cache_formula must be 'units' or 'measured', not {cache_formula!r}")
        if cache_formula == "measured":
            unit_tokens = 128
        if chars_per_token < 1:
            raise ValueError("chars_per_token must be at least 1")
        if usage_style not in ("deepseek", "openai"):
            raise ValueError(f"usage_style must be 'deepseek' or 'openai', not {usage_style!r}")
        self._queue: deque[Reply] = deque(script)
        self.handler = handler
        self.models = frozenset(models) if models is not None else None
        self.api_key = api_key
        self.unit_tokens = unit_tokens
        self.count_last_unit = count_last_unit
        self.chars_per_token = chars_per_token
        self.usage_style: UsageStyle = usage_style
        self.cache_formula: CacheFormula = cache_formula
        self.listed_models = tuple(listed_models) if listed_models is not None else None
        self.balance = balance
        #: every request received on the chat-completions paths, in arrival order
        self.requests: list[RecordedRequest] = []
        #: paths of the GET requests answered (``/models``, ``/user/balance``)
        self.get_requests: list[str] = []
        #: problems on the server side (script exhausted, handler errors), for tests to see
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._caches: dict[tuple[str, str | None, str | None], PrefixCache] = {}
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> FakeDeepSeekServer:
        """Bind and serve in a background thread."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._stop.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeDeepSeekServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end stalls, join handler threads and close the listening socket."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeDeepSeekServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> FakeDeepSeekServer:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # joining handler threads must not block the event loop a client may still be using
        await asyncio.to_thread(self.close)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeDeepSeekServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (both ``/chat/completions`` and ``/v1/...`` are served)."""
        return f"http://127.0.0.1:{self.port}"

    # -- script -----------------------------------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    def assert_exhausted(self) -> None:
        """Fail if scripted replies are left, or if a request found the script empty."""
        with self._lock:
            left = len(self._queue)
            errors = list(self.errors)
        if left:
            raise AssertionError(f"{left} scripted replies were never requested")
        if errors:
            raise AssertionError("fake server problems: " + "; ".join(errors))

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self.requests:
                raise AssertionError("the fake server received no request")
            return self.requests[-1]

    def reset_cache(self) -> None:
        """Forget all cached prefixes (as if the cache had expired)."""
        with self._lock:
            self._caches.clear()

    def _note_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    # -- serving ----------------------------------------------------------------------------------

    def _authorised(self, headers: Mapping[str, str]) -> bool:
        return self.api_key is None or headers.get("authorization", "") == f"Bearer {self.api_key}"

    def _get(self, path: str, headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        """``GET /models`` and ``GET /user/balance`` (with or without ``/v1``)."""
        if path in _MODELS_PATHS and self.listed_models is not None:
            payload: Mapping[str, Any] = {
                "object": "list",
                "data": [_model_entry(name) for name in self.listed_models],
            }
        elif path in _BALANCE_PATHS and self.balance is not None:
            payload = self.balance
        else:
            return 404, _Rejection(404, f"Not Found: {path}", code=None).body()
        if not self._authorised(headers):
            return 401, _AUTH_FAILED.body()
        with self._lock:
            self.get_requests.append(path)
        return 200, dict(payload)

    def _serve(self, http: _Handler, path: str, headers: dict[str, str], raw: bytes) -> None:
        with self._lock:
            record = RecordedRequest(len(self.requests), path, headers, raw)
            self.requests.append(record)
        try:
            reply = self._accept(record)
        except _Rejection as rejection:
            record.status = rejection.status
            record.error = rejection.message
            http._send_json(rejection.status, rejection.body())
            return
        record.reply = reply
        fault = reply.fault
        if fault is not None and fault.status is not None:
            default_msg, err_type = STATUS_MESSAGES.get(fault.status, ("Error", "api_error"))
            failure = _Rejection(
                fault.status, fault.message or default_msg, type_=err_type, code=err_type
            )
            record.status = fault.status
            record.error = failure.message
            http._send_json(fault.status, failure.body())
            return
        answer = self._answer(record, reply)
        self._write_answer(http, record, reply, answer)

    def _accept(self, record: RecordedRequest) -> Reply:
        """Authenticate, parse, validate and pick the reply; raise ``_Rejection`` to refuse."""
        if not self._authorised(record.headers):
            raise _AUTH_FAILED
        try:
            body = json.loads(record.raw_body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _bad(f"Failed to parse the request body as JSON: {exc}") from None
        if isinstance(body, dict):
            record.body = body  # recorded even when validation rejects it below
        _validate(body, models=self.models)

        with self._lock:
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        if self.handler is None:
            message = (
                f"FakeDeepSeekServer: script exhausted at request #{record.index} "
                "(push() more replies or pass handler=)"
            )
            self._note_error(message)
            raise _Rejection(500, message, type_="server_error", code="script_exhausted")
        try:
            reply: object = self.handler(record)
        except Exception as exc:
            message = f"FakeDeepSeekServer: handler raised {exc!r}"
            self._note_error(message)
            raise _Rejection(500, message, type_="server_error", code="handler_error") from None
        if not isinstance(reply, Reply):
            message = f"FakeDeepSeekServer: handler must return a Reply, got {reply!r}"
            self._note_error(message)
            raise _Rejection(500, message, type_="server_error", code="handler_error")
        return reply

    def _answer(self, record: RecordedRequest, reply: Reply) -> _Answer:
        body = record.body
        thinking = _thinking_enabled(body)
        fault = reply.fault
        reasoning = reply.reasoning if thinking else None
        if thinking and reply.tool_calls and reasoning is None:
            names = ", ".join(c.name for c in reply.tool_calls)
            reasoning = f"I should call {names}."
        tool_calls = [c.to_wire() for c in reply.tool_calls]
        finish = reply.effective_finish_reason
        if fault is not None and fault.insufficient_resource:
            finish = "insufficient_system_resource"

        # The output as a client that stores it whole replays it in the next request.
        replayed: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content,
            "reasoning_content": reasoning or "",
        }
        if tool_calls:
            replayed["tool_calls"] = tool_calls
        c = self.chars_per_token
        prompt = tokenize(render_prompt(body), c)
        output = tokenize([render_message(replayed, with_reasoning=bool(body.get("tools")))], c)
        # The effort is part of the cache identity: changing it breaks prefix reuse.
        key = (str(body.get("model")), body.get("user_id"), effective_effort(body))
        with self._lock:
            cache = self._caches.get(key)
            if cache is None:
                cache = self._caches[key] = PrefixCache(
                    self.unit_tokens,
                    self.count_last_unit,
                    drop_last_unit=self.cache_formula == "measured",
                )
            outcome = cache.process(prompt, output)

        reasoning_tokens = _count(reasoning, c)
        completion = reasoning_tokens + _count(reply.content, c)
        completion += sum(_count(t.name + t.arguments, c) for t in reply.tool_calls)
        usage = Usage(
            prompt_tokens=outcome.prompt_tokens,
            cache_hit_tokens=outcome.hit_tokens,
            cache_miss_tokens=outcome.miss_tokens,
            completion_tokens=completion,
            reasoning_tokens=reasoning_tokens,
        )
        record.prompt_tokens = outcome.prompt_tokens
        record.cache_hit_tokens = outcome.hit_tokens
        record.stored_tokens_after_output = outcome.stored_tokens
        stream_options = body.get("stream_options")
        include_usage = isinstance(stream_options, dict) and bool(
            stream_options.get("include_usage")
        )
        reported = self.usage_style == "deepseek" or include_usage or not record.stream
        clean = fault is None or not (
            fault.cut_after_bytes is not None or fault.malformed_chunk or fault.cut_in is not None
        )
        if reported and clean and "raw_sse" not in reply.meta:
            record.usage = usage
        return _Answer(
            id=str(uuid.uuid4()),
            created=int(time.time()),
            model=str(body.get("model")),
            thinking=thinking,
            content=reply.content,
            reasoning=reasoning,
            tool_calls=tool_calls,
            finish_reason=finish,
            usage_wire=_usage_wire(usage, self.usage_style),
            usage_style=self.usage_style,
            include_usage=include_usage,
        )

    def _write_answer(
        self, http: _Handler, record: RecordedRequest, reply: Reply, answer: _Answer
    ) -> None:
        fault = reply.fault
        keepalives = fault.keepalive_lines if fault else 0
        events: Sequence[bytes]
        if record.stream:
            http._start_body("text/event-stream; charset=utf-8")
            prefix = b": keep-alive\n\n" * keepalives
            raw_sse = reply.meta.get("raw_sse")
            if isinstance(raw_sse, bytes | bytearray):
                events = [bytes(raw_sse)]
            else:
                malformed = bool(fault and fault.malformed_chunk)
                events = list(answer.sse_events(malformed=malformed))
        else:
            http._start_body("application/json")
            prefix = b"\n" * keepalives
            events = [json.dumps(answer.completion(), ensure_ascii=False).encode()]
        if fault is not None and (fault.cut_in or fault.stall_in) and record.stream:
            fault = _place_fault(fault, len(prefix), events)
        writer = _BodyWriter(http.wfile, fault, self._stop)
        try:
            if prefix:
                writer.write(prefix)
            for event in events:
                writer.write(event)
            writer.finish()
        except _Cut:
            return  # closing without the terminating chunk: the client sees a cut body
