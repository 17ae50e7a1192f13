"""The request rules DeepSeek enforces, as the fake server checks them.

:func:`validate_request` refuses what DeepSeek refuses today, with its documented status and
error body (:class:`Rejection`): unknown roles, tool calls left unanswered or answered out of
place, tool names outside ``[a-zA-Z0-9_-]{1,64}``, more than 128 tools, an unknown
``reasoning_effort`` (422), a ``required`` or named ``tool_choice`` in thinking mode, a retired
model, ``max_tokens`` out of range, and, in thinking mode with tools, an earlier assistant
message without its ``reasoning_content``; and for images (see :mod:`reasonix.images`): image
parts only in ``user`` and ``tool`` messages, only for a model whose ``/models`` entry lists
the ``image`` input modality, JPEG/PNG/GIF/WebP told from the bytes, at most 32 MiB an image,
64 MiB of images and 600 images a request, 8192 px a side (4096 from 15 images on). The fake
is only as useful as it is strict: a client that passes here should pass there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reasonix.images import ImageInfo

__all__ = [
    "AUTH_FAILED",
    "CONTEXT_WINDOW",
    "EFFORT_ALIASES",
    "EFFORT_LEVELS",
    "IMAGE_MODELS",
    "IMAGE_NOT_SUPPORTED",
    "LEGACY_ALIASES",
    "LISTED_MODELS",
    "MAX_OUTPUT_TOKENS",
    "MAX_TOOLS",
    "REASONING_MUST_BE_PASSED",
    "RETIRED_MODELS",
    "Rejection",
    "bad_request",
    "effective_effort",
    "model_entry",
    "thinking_enabled",
    "validate_request",
]

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
MAX_TOOLS = 128
MAX_OUTPUT_TOKENS = 393_216
CONTEXT_WINDOW = 1_048_576
#: The models ``GET /models`` lists today, the legacy alias still served, the retired names.
LISTED_MODELS = ("deepseek-flash", "deepseek-v4-pro")
LEGACY_ALIASES: Mapping[str, str] = {"deepseek-v4-flash": "deepseek-flash"}
RETIRED_MODELS = ("deepseek-chat", "deepseek-reasoner")
#: The models that accept image input (``input_modalities`` has ``image``), legacy aliases too.
IMAGE_MODELS = frozenset({"deepseek-flash", "deepseek-v4-flash", "deepseek-v4-flash-vision-exp"})
#: The documented 400 message for an image sent to a text-only model.
IMAGE_NOT_SUPPORTED = "This model does not support image"
#: The documented 400 message when an earlier assistant turn lacks its reasoning.
REASONING_MUST_BE_PASSED = (
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)


def thinking_enabled(body: Mapping[str, Any]) -> bool:
    """Thinking mode is on unless the request disables it."""
    thinking = body.get("thinking")
    return not (isinstance(thinking, Mapping) and thinking.get("type") == "disabled")


def effective_effort(body: Mapping[str, Any]) -> str | None:
    """The effort level the server runs a (valid) request at: None with thinking disabled,
    ``high`` when none is given, aliases mapped (minimal→low, medium/xhigh→high, ultra→max)."""
    if not thinking_enabled(body):
        return None
    effort = body.get("reasoning_effort")
    if effort is None:
        return "high"
    return EFFORT_ALIASES.get(str(effort), str(effort))


class Rejection(Exception):
    """A refused request: its HTTP status and DeepSeek's error body."""

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


def bad_request(message: str, param: str | None = None) -> Rejection:
    """A 400 ``invalid_request_error`` naming ``param``."""
    return Rejection(400, message, param=param)


AUTH_FAILED = Rejection(
    401,
    "Authentication Fails, Your api key is invalid",
    type_="authentication_error",
    code="invalid_request_error",
)


def model_entry(name: str) -> dict[str, Any]:
    """One ``GET /models`` entry with the metadata DeepSeek publishes."""
    return {
        "id": name,
        "object": "model",
        "owned_by": "deepseek",
        "context_window": CONTEXT_WINDOW,
        "max_output_tokens": MAX_OUTPUT_TOKENS,
        "input_modalities": ["text", "image"] if name in IMAGE_MODELS else ["text"],
        "output_modalities": ["text"],
        "effort": {"supported_levels": list(EFFORT_LEVELS), "default_level": "high"},
    }


# ---------------------------------------------------------------------------------------------
# Validation


#: The uploaded image a ``file_id`` names (an :class:`~reasonix.images.ImageInfo`), or None.
FileLookup = Callable[[str], "ImageInfo | None"]


def validate_request(
    body: Any, *, models: frozenset[str] | None, files: FileLookup | None = None
) -> None:
    """Raise :class:`Rejection` for a request body DeepSeek would refuse; ``models`` limits the
    accepted model names (None accepts any); ``files`` finds uploaded images by id."""
    if not isinstance(body, dict):
        raise bad_request("Failed to deserialize the JSON body: expected a JSON object")
    model = body.get("model")
    if isinstance(model, str) and model in RETIRED_MODELS:
        raise bad_request(
            f"Model Not Exist: {model} was retired on 2026-07-24; use deepseek-flash or "
            "deepseek-v4-pro",
            "model",
        )
    if not isinstance(model, str) or (models is not None and model not in models):
        raise bad_request("Model Not Exist", "model")

    thinking = body.get("thinking")
    if thinking is not None and (
        not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled")
    ):
        raise bad_request('thinking.type must be "enabled" or "disabled"', "thinking")
    effort = body.get("reasoning_effort")
    if effort is not None and (
        not isinstance(effort, str)
        or (effort not in EFFORT_LEVELS and effort not in EFFORT_ALIASES)
    ):
        raise Rejection(
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
        raise bad_request(
            f"Invalid max_tokens value, the valid range of max_tokens is [1, {MAX_OUTPUT_TOKENS}]",
            "max_tokens",
        )
    thinking_on = thinking_enabled(body)

    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise bad_request("tools must be a list", "tools")
        if len(tools) > MAX_TOOLS:
            raise bad_request(
                f"Too many tools: {len(tools)} given, at most {MAX_TOOLS} are supported", "tools"
            )
        for i, tool in enumerate(tools):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if (
                not isinstance(tool, dict)
                or tool.get("type") != "function"
                or not isinstance(fn, dict)
            ):
                raise bad_request(f"tools[{i}] must be a function tool", "tools")
            name = fn.get("name")
            if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
                raise bad_request(
                    f"Invalid 'tools[{i}].function.name': {name!r} does not match "
                    "'^[a-zA-Z0-9_-]{1,64}$'",
                    "tools",
                )

    choice = body.get("tool_choice")
    if choice is not None:
        named = isinstance(choice, dict)
        if not named and choice not in ("none", "auto", "required"):
            raise bad_request(f"Invalid tool_choice {choice!r}", "tool_choice")
        if thinking_on and (named or choice == "required"):
            raise bad_request(
                "tool_choice 'required' or a named function is not supported in thinking mode",
                "tool_choice",
            )

    fmt = body.get("response_format")
    if fmt is not None and (
        not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object")
    ):
        raise bad_request("response_format.type must be 'text' or 'json_object'", "response_format")

    validate_messages(body.get("messages"), reasoning_required=thinking_on and bool(tools))
    validate_images(body.get("messages"), model=model, files=files)


_IMAGE_PARTS = ("image_url", "file")


def image_parts(messages: Any) -> list[tuple[int, str, dict[str, Any]]]:
    """Every image part of the messages: (message index, role, part)."""
    found: list[tuple[int, str, dict[str, Any]]] = []
    for i, msg in enumerate(messages if isinstance(messages, list) else ()):
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") in _IMAGE_PARTS:
                    found.append((i, str(msg.get("role")), part))
    return found


def part_bytes(part: Mapping[str, Any]) -> bytes | None:
    """The inline bytes of an image part (None for a URL or a file id)."""
    from reasonix.images import decode_data_url

    if part.get("type") == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        return decode_data_url(url) if isinstance(url, str) else None
    data = part.get("file_data")
    return decode_data_url(data) if isinstance(data, str) else None


def validate_images(messages: Any, *, model: str, files: FileLookup | None = None) -> None:
    """The vision rules (see the module docstring), in the order a client meets them. A
    ``file`` part names an image uploaded to the Files API (``files`` finds it): up to 64 MiB,
    outside the 64 MiB inline total, inside the 200 MiB total of a request with such parts."""
    from reasonix import images

    parts = image_parts(messages)
    if not parts:
        return
    for i, role, _part in parts:
        if role not in ("user", "tool"):
            raise bad_request(
                f"messages[{i}]: images are accepted only in user and tool messages, not {role}",
                "messages",
            )
    if model not in IMAGE_MODELS:
        raise bad_request(IMAGE_NOT_SUPPORTED, "messages")
    if len(parts) > images.MAX_IMAGES:
        raise bad_request(
            f"Too many images: {len(parts)} in the request, at most {images.MAX_IMAGES}",
            "messages",
        )
    side = images.MAX_SIDE_MANY if len(parts) >= images.MANY_IMAGES else images.MAX_SIDE
    total = 0
    filed = 0
    for i, _role, part in parts:
        info: ImageInfo | None = None
        if part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else None
            if not isinstance(url, str):
                raise bad_request(f"messages[{i}]: image_url.url is required", "messages")
            detail = image.get("detail") if isinstance(image, dict) else None
            if detail is not None and detail not in images.DETAILS:
                raise bad_request(
                    f"messages[{i}]: unknown image detail {detail!r}, expected one of "
                    "low, high, original, auto",
                    "messages",
                )
            if url.startswith(("http://", "https://")):
                if len(url) > 8192:
                    raise bad_request(f"messages[{i}]: image URL over 8192 characters", "messages")
                continue  # the fake downloads nothing
        elif "file_id" in part and "file_data" in part:
            raise bad_request(
                f"messages[{i}]: file_id and file_data are mutually exclusive", "messages"
            )
        elif "filename" in part and "file_data" not in part:
            raise bad_request(
                f"messages[{i}]: filename is accepted only with file_data", "messages"
            )
        elif "file_id" in part:
            file_id = part.get("file_id")
            info = files(file_id) if files is not None and isinstance(file_id, str) else None
            if info is None:
                raise bad_request(f"messages[{i}]: file not found: {file_id!r}", "messages")
            filed += info.size
        if info is None:
            data = part_bytes(part)
            if data is None:
                raise bad_request(
                    f"messages[{i}]: the image is neither a base64 data URL nor an http(s) URL",
                    "messages",
                )
            try:
                info = images.sniff(data, what=f"messages[{i}]: the image")
            except images.ImageError as exc:
                raise bad_request(str(exc), "messages") from None
            total += info.size
        if max(info.width, info.height) > side:
            raise bad_request(
                f"messages[{i}]: the image is {info.width}x{info.height} px; with "
                f"{len(parts)} images a request takes at most {side} px a side",
                "messages",
            )
    if total > images.MAX_TOTAL_IMAGE_BYTES:
        raise bad_request(
            f"The images of the request total {total:,} bytes, at most "
            f"{images.MAX_TOTAL_IMAGE_BYTES:,} (64 MiB) without file ids",
            "messages",
        )
    if filed and total + filed > images.MAX_TOTAL_WITH_FILES:
        raise bad_request(
            f"The images of the request total {total + filed:,} bytes, at most "
            f"{images.MAX_TOTAL_WITH_FILES:,} (200 MiB) with file ids",
            "messages",
        )


def validate_messages(messages: Any, *, reasoning_required: bool) -> None:
    """Roles, tool answers, and the reasoning rule: in thinking mode, when the request carries
    tools, *every* earlier assistant message must carry ``reasoning_content`` (a string, empty
    allowed), whether or not it made tool calls."""
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list", "messages")
    answered_ids: set[str] = set()
    called_ids: set[str] = set()
    pending: set[str] = set()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise bad_request(f"messages[{i}] must be an object", "messages")
        role = msg.get("role")
        if role not in _ROLES:
            raise bad_request(
                f"Failed to deserialize the JSON body into the target type: messages[{i}].role: "
                f"unknown variant `{role}`, expected one of `system`, `user`, `assistant`, `tool`",
                "messages",
            )
        if role != "tool" and pending:
            raise bad_request(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. (insufficient tool messages following "
                "tool_calls message)",
                "messages",
            )
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in called_ids:
                raise bad_request(
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
                    raise bad_request(f"messages[{i}].tool_calls must be a list", "messages")
                for j, call in enumerate(calls):
                    fn = call.get("function") if isinstance(call, dict) else None
                    if (
                        not isinstance(call, dict)
                        or not isinstance(call.get("id"), str)
                        or not isinstance(fn, dict)
                        or not isinstance(fn.get("name"), str)
                        or not isinstance(fn.get("arguments"), str)
                    ):
                        raise bad_request(
                            f"messages[{i}].tool_calls[{j}] must have an id and a function "
                            "with a name and string arguments",
                            "messages",
                        )
                    called_ids.add(call["id"])
                    pending.add(call["id"])
            if reasoning_required and not isinstance(msg.get("reasoning_content"), str):
                raise bad_request(REASONING_MUST_BE_PASSED, "messages")
        if isinstance(msg.get("content"), list):
            for j, part in enumerate(msg["content"]):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind not in ("text", "image_url", "file"):
                    raise bad_request(
                        f"Failed to deserialize the JSON body into the target type: "
                        f"messages[{i}].content[{j}]: unknown variant `{kind}`, expected one "
                        "of `text`, `image_url`, `file`",
                        "messages",
                    )
        if role not in ("assistant", "tool") and msg.get("content") is None:
            raise bad_request(f"messages[{i}].content is required", "messages")
    if pending:
        raise bad_request(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. (insufficient tool messages following "
            "tool_calls message)",
            "messages",
        )
