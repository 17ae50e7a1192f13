"""Plain typed data shared by every layer: chat messages, tool calls, model requests, usage,
and the events a provider streams back.

Everything here is immutable and does no I/O. Messages serialise to the exact wire form the
chat-completions API expects (``to_wire``) and to a lossless storage form (``to_dict`` /
``message_from_dict``). The wire form is a pure function of the message, so a stored message is
sent as the same bytes on every request: the cache-first invariants depend on that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
FinishReason: TypeAlias = str  # stop | length | content_filter | tool_calls | ...


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call the model asked for. ``arguments`` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class ImagePart:
    """One image a user turn or a tool result carries: inline as a base64 ``data:`` URL, or,
    over DeepSeek's 32 MiB inline limit, as the ``file_id`` of its Files API upload.

    Built by :func:`reasonix.images.load_image` (format and size told from the bytes). An image
    too large to go inline starts *pending*: ``url`` empty, its bytes in ``data`` (never
    stored), until the agent uploads it once per session and the part carries the ``file_id``
    instead (:meth:`uploaded`); only then does it enter a session. The wire part is a pure
    function of the URL and ``detail`` (or of the ``file_id``), so the same image is sent as
    the same bytes on every later request. ``description`` is local: a short text written once
    by an image model, sent in the image's place to a text-only model (the planner), never to a
    model that sees the image itself.
    """

    url: str
    mime: str
    width: int
    height: int
    size: int
    sha256: str
    detail: str | None = None
    name: str = ""
    description: str | None = None
    file_id: str | None = None
    data: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def pending(self) -> bool:
        """Too large to go inline and not uploaded yet: it cannot be sent as it is."""
        return self.file_id is None and not self.url

    def uploaded(self, file_id: str) -> ImagePart:
        """This image as its Files API upload (the bytes are the server's from now on)."""
        return ImagePart(
            "",
            self.mime,
            self.width,
            self.height,
            self.size,
            self.sha256,
            None,  # a ``file`` part has no detail
            self.name,
            self.description,
            file_id,
        )

    def to_wire(self) -> dict[str, Any]:
        if self.file_id is not None:
            return {"type": "file", "file_id": self.file_id}
        if not self.url:
            raise ValueError(
                f"the image {self.name or self.sha256[:12]} waits for its Files API upload "
                "and cannot be sent yet"
            )
        image: dict[str, Any] = {"url": self.url}
        if self.detail is not None:
            image["detail"] = self.detail
        return {"type": "image_url", "image_url": image}

    def placeholder(self, index: int) -> str:
        """The image in text, for a model that cannot see it."""
        label = f"[image {index}{': ' + self.name if self.name else ''}, {self.mime}, "
        label += f"{self.width}x{self.height}"
        if self.description:
            return f"{label}; described by an image model: {self.description}]"
        return f"{label}; not described]"

    def to_dict(self) -> dict[str, Any]:
        stored: dict[str, Any] = {
            "url": self.url,
            "mime": self.mime,
            "width": self.width,
            "height": self.height,
            "size": self.size,
            "sha256": self.sha256,
            "detail": self.detail,
            "name": self.name,
            "description": self.description,
        }
        if self.file_id is not None:
            stored["file_id"] = self.file_id
        return stored

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ImagePart:
        detail, description = data.get("detail"), data.get("description")
        file_id = data.get("file_id")
        return cls(
            url=str(data["url"]),
            mime=str(data["mime"]),
            width=int(data["width"]),
            height=int(data["height"]),
            size=int(data["size"]),
            sha256=str(data["sha256"]),
            detail=None if detail is None else str(detail),
            name=str(data.get("name") or ""),
            description=None if description is None else str(description),
            file_id=None if file_id is None else str(file_id),
        )


def _content_with_images(text: str, images: tuple[ImagePart, ...]) -> str | list[Any]:
    if not images:
        return text
    parts: list[Any] = [{"type": "text", "text": text}] if text else []
    parts.extend(image.to_wire() for image in images)
    return parts


def _text_with_placeholders(text: str, images: tuple[ImagePart, ...]) -> str:
    lines = [image.placeholder(i) for i, image in enumerate(images, 1)]
    return "\n\n".join([text, *lines]) if text else "\n\n".join(lines)


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str
    role: Literal["system"] = field(default="system", init=False)

    def to_wire(self) -> dict[str, Any]:
        return {"role": "system", "content": self.content}


@dataclass(frozen=True, slots=True)
class UserMessage:
    content: str
    images: tuple[ImagePart, ...] = ()
    role: Literal["user"] = field(default="user", init=False)

    def to_wire(self) -> dict[str, Any]:
        return {"role": "user", "content": _content_with_images(self.content, self.images)}

    def text_only(self) -> UserMessage:
        """This turn for a model that cannot see images: each image as its description."""
        if not self.images:
            return self
        return UserMessage(_text_with_placeholders(self.content, self.images))


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A complete assistant turn, stored whole and sent back unchanged.

    ``reasoning_content`` is sent whenever it is not None, on every turn (tool calls or not):
    DeepSeek's thinking mode answers 400 when a request with tools lacks the reasoning of any
    earlier assistant turn, and an empty string is a valid value. A session gives every
    assistant message a reasoning (``""`` when there was none) as it enters
    (:func:`with_reasoning`), so its bytes never change after they were first sent; None only
    survives in messages loaded from a store written before that rule, which a resume repairs.
    """

    content: str = ""
    reasoning_content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = field(default="assistant", init=False)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning_content is not None:
            wire["reasoning_content"] = self.reasoning_content
        if self.tool_calls:
            wire["tool_calls"] = [c.to_wire() for c in self.tool_calls]
        return wire


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call. ``is_error`` and ``name`` are local: never sent."""

    tool_call_id: str
    content: str
    name: str = ""
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()
    role: Literal["tool"] = field(default="tool", init=False)

    def to_wire(self) -> dict[str, Any]:
        content = _content_with_images(self.content, self.images)
        return {"role": "tool", "tool_call_id": self.tool_call_id, "content": content}

    def text_only(self) -> ToolMessage:
        """This result for a model that cannot see images: each image as its description."""
        if not self.images:
            return self
        text = _text_with_placeholders(self.content, self.images)
        return ToolMessage(self.tool_call_id, text, self.name, self.is_error)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def with_reasoning(message: Message) -> Message:
    """``message`` as it must enter a session: an assistant message always carries a
    ``reasoning_content`` (``""`` when the model gave none or the host wrote it)."""
    if isinstance(message, AssistantMessage) and message.reasoning_content is None:
        return AssistantMessage(message.content, "", message.tool_calls)
    return message


def message_to_dict(message: Message) -> dict[str, Any]:
    """Lossless storage form (includes local-only fields)."""
    if isinstance(message, AssistantMessage):
        return {
            "role": "assistant",
            "content": message.content,
            "reasoning_content": message.reasoning_content,
            "tool_calls": [c.to_wire() for c in message.tool_calls],
        }
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content,
            "name": message.name,
            "is_error": message.is_error,
            **_images_dict(message.images),
        }
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content, **_images_dict(message.images)}
    return {"role": message.role, "content": message.content}


def _images_dict(images: tuple[ImagePart, ...]) -> dict[str, Any]:
    return {"images": [image.to_dict() for image in images]} if images else {}


def _images_from(data: Mapping[str, Any]) -> tuple[ImagePart, ...]:
    return tuple(ImagePart.from_dict(d) for d in data.get("images") or ())


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """Inverse of :func:`message_to_dict`; also accepts the wire form."""
    role = data.get("role")
    if role == "system":
        return SystemMessage(str(data["content"]))
    if role == "user":
        return UserMessage(str(data["content"]), _images_from(data))
    if role == "assistant":
        calls = tuple(
            ToolCall(
                id=str(c["id"]),
                name=str(c["function"]["name"]),
                arguments=str(c["function"]["arguments"]),
            )
            for c in data.get("tool_calls") or ()
        )
        reasoning = data.get("reasoning_content")
        return AssistantMessage(
            content=str(data.get("content") or ""),
            reasoning_content=None if reasoning is None else str(reasoning),
            tool_calls=calls,
        )
    if role == "tool":
        return ToolMessage(
            tool_call_id=str(data["tool_call_id"]),
            content=str(data["content"]),
            name=str(data.get("name") or ""),
            is_error=bool(data.get("is_error", False)),
            images=_images_from(data),
        )
    raise ValueError(f"unknown message role: {role!r}")


def canonical_json(value: Any) -> str:
    """The one JSON encoding used for anything whose bytes must stay stable."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


# ---------------------------------------------------------------------------------------------
# Usage


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more requests. ``prompt_tokens == cache_hit + cache_miss``."""

    prompt_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.cache_hit_tokens + other.cache_hit_tokens,
            self.cache_miss_tokens + other.cache_miss_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def __sub__(self, other: Usage) -> Usage:
        """What was spent since ``other`` (an earlier total of the same counter)."""
        return Usage(
            self.prompt_tokens - other.prompt_tokens,
            self.cache_hit_tokens - other.cache_hit_tokens,
            self.cache_miss_tokens - other.cache_miss_tokens,
            self.completion_tokens - other.completion_tokens,
            self.reasoning_tokens - other.reasoning_tokens,
        )

    @property
    def hit_ratio(self) -> float:
        return self.cache_hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "cache_hit_tokens": self.cache_hit_tokens,
            "cache_miss_tokens": self.cache_miss_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Usage:
        """Read a chat-completions ``usage`` object (DeepSeek or OpenAI flavour)."""
        details = data.get("prompt_tokens_details") or {}
        hit_raw = data.get("prompt_cache_hit_tokens")
        if hit_raw is None:
            hit_raw = details.get("cached_tokens") if isinstance(details, Mapping) else None
        hit = int(hit_raw or 0)
        miss_raw = data.get("prompt_cache_miss_tokens")
        prompt_raw = data.get("prompt_tokens")
        if prompt_raw is None and miss_raw is not None:
            # Without prompt_tokens the two cache figures still add up to the prompt.
            prompt = hit + int(miss_raw)
        else:
            prompt = int(prompt_raw or 0)
        miss = int(miss_raw) if miss_raw is not None else max(prompt - hit, 0)
        completion_details = data.get("completion_tokens_details") or {}
        reasoning = 0
        if isinstance(completion_details, Mapping):
            reasoning = int(completion_details.get("reasoning_tokens") or 0)
        return cls(prompt, hit, miss, int(data.get("completion_tokens") or 0), reasoning)


# ---------------------------------------------------------------------------------------------
# Requests


#: What DeepSeek accepts today (it maps minimal→low, medium/xhigh→high, ultra→max itself).
ReasoningEffort: TypeAlias = Literal["low", "high", "max"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One chat-completions request, provider-neutral.

    ``tools`` holds tool schemas in wire form (``{"type": "function", "function": {...}}``), already
    in canonical order. ``thinking`` None means "leave the server default".
    """

    messages: tuple[Message, ...]
    model: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    thinking: bool | None = None
    reasoning_effort: ReasoningEffort | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | None = None
    user_id: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Stream events (what a Provider yields)


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgumentsDelta:
    index: int
    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallComplete:
    """Emitted only once the stream finished cleanly: never for half-streamed arguments."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class UsageReported:
    usage: Usage


@dataclass(frozen=True, slots=True)
class StreamRetry:
    """The provider is about to retry the request.

    ``retract`` is True when output of the failed attempt had already reached the caller: it
    must discard that partial output (the retry starts the answer afresh). ``partial_chars``
    counts the characters of that output; ``billed`` is the usage the server reported for the
    failed attempt (it may have been billed), None when it reported none.
    """

    attempt: int
    delay: float
    reason: str
    retract: bool = False
    partial_chars: int = 0
    billed: Usage | None = None


@dataclass(frozen=True, slots=True)
class StreamFinished:
    """The last event of a successful stream: the assembled message and why it stopped.
    ``model`` is the model the server says answered (None when it named none); it can differ
    from the requested one (DeepSeek serves a retired alias with today's model)."""

    finish_reason: FinishReason
    message: AssistantMessage
    usage: Usage | None
    model: str | None = None


StreamEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ToolCallComplete
    | UsageReported
    | StreamRetry
    | StreamFinished
)


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.to_wire() for m in messages]


def message_images(messages: Sequence[Message]) -> list[ImagePart]:
    """Every image the messages carry, in order."""
    found: list[ImagePart] = []
    for m in messages:
        if isinstance(m, UserMessage | ToolMessage):
            found.extend(m.images)
    return found


def text_only(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The messages for a model that cannot see images (images become their descriptions)."""
    return tuple(m.text_only() if isinstance(m, UserMessage | ToolMessage) else m for m in messages)
