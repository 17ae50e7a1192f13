"""The body of a chat-completions request, as
:class:`~reasonix.providers.openai_compat.OpenAICompatProvider` sends it: keys in a fixed order
and encoded so that equal requests are equal bytes (the prefix cache matches bytes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from reasonix.errors import ConfigError
from reasonix.messages import ModelRequest

__all__ = ["build_request_body", "check_user_id", "encode_body"]

_USER_ID = re.compile(r"[A-Za-z0-9_-]{1,512}")


def check_user_id(user_id: str) -> str:
    """``user_id`` when DeepSeek accepts it; a :class:`~reasonix.errors.ConfigError` otherwise."""
    if not _USER_ID.fullmatch(user_id):
        raise ConfigError(
            f"invalid user_id {user_id[:40]!r}: use 1 to 512 characters from A-Z, a-z, 0-9, "
            "'_' and '-'",
            key="user_id",
        )
    return user_id


def build_request_body(
    request: ModelRequest,
    *,
    model: str,
    user_id: str | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming chat-completions request for ``request``.

    Keys are always inserted in the same order so equal requests encode to equal bytes. The
    provider's ``extra_body`` and then the request's are merged last (shallowly); a ``None``
    value there removes a key, for servers that reject one (e.g. ``stream_options``).
    """
    body: dict[str, Any] = {
        "model": request.model or model,
        "messages": [m.to_wire() for m in request.messages],
    }
    if request.tools:
        body["tools"] = [dict(t) for t in request.tools]
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    if request.thinking is not None:
        body["thinking"] = {"type": "enabled" if request.thinking else "disabled"}
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    uid = request.user_id if request.user_id is not None else user_id
    if uid is not None:
        body["user_id"] = check_user_id(uid)
    for extra in (extra_body or {}, request.extra_body):
        for key, value in extra.items():
            if value is None:
                body.pop(key, None)
            else:
                body[key] = value
    return body


def encode_body(body: Mapping[str, Any]) -> bytes:
    """Deterministic bytes for a request body (UTF-8, no spaces, key order as built)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
