"""A deterministic tokenisation of a chat request, for the fake server's prefix cache.

A real tokenizer is neither needed nor wanted in tests: what matters for cache figures is that
equal prefixes give equal tokens and that appending a message appends its tokens.
:func:`render_prompt` writes a request as text segments (the tools block, then each message, as
the model "sees" it) and :func:`tokenize` cuts each segment into fixed-size tokens, so the tokens
of ``messages + [m]`` are those of ``messages`` followed by those of ``m``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from reasonix.messages import canonical_json

if TYPE_CHECKING:
    from reasonix.images import ImageInfo

__all__ = ["count_tokens", "render_message", "render_prompt", "tokenize"]


#: characters of one image token in the rendered text (see :func:`_image`)
IMAGE_TOKEN_CHARS = 4


def _image(part: Mapping[str, Any], files: Callable[[str], ImageInfo | None] | None = None) -> str:
    """An image as the model "sees" it: as many tokens as :func:`reasonix.images.image_tokens`
    gives (``IMAGE_TOKEN_CHARS`` characters each, with the default ``chars_per_token``), and
    tokens that depend only on the image's bytes and detail, so the same image sent again
    renders the same. An uploaded image (``file_id``, found by ``files``) counts by its own
    size; a URL image the fake cannot measure counts the per-image maximum."""
    from reasonix import images
    from reasonix.testing.deepseek_rules import part_bytes

    data = part_bytes(part)
    image = part.get("image_url")
    detail = image.get("detail") if isinstance(image, Mapping) else None
    file_id = part.get("file_id")
    uploaded = files(file_id) if files is not None and isinstance(file_id, str) else None
    if uploaded is not None:
        tokens = images.image_tokens(uploaded.width, uploaded.height)
        digest = uploaded.sha256
    elif data is not None:
        try:
            info = images.sniff(data)
            tokens = images.image_tokens(info.width, info.height, detail)
            digest = info.sha256
        except images.ImageError:
            tokens, digest = images.MAX_TOKENS_PER_IMAGE, "bad"
    else:
        import hashlib

        tokens = images.MAX_TOKENS_PER_IMAGE
        digest = hashlib.sha256(canonical_json(part).encode()).hexdigest()
    body = (digest * (1 + tokens * IMAGE_TOKEN_CHARS // len(digest)))[: tokens * IMAGE_TOKEN_CHARS]
    return body


def _text(content: Any, files: Callable[[str], ImageInfo | None] | None = None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        out: list[str] = []
        for part in content:
            if part.get("type") == "text":
                out.append(str(part.get("text", "")))
            elif part.get("type") in ("image_url", "file"):
                out.append(_image(part, files))
            else:
                out.append(canonical_json(part))
        return "".join(out)
    return canonical_json(content)


def render_message(
    message: Mapping[str, Any],
    *,
    with_reasoning: bool = True,
    files: Callable[[str], ImageInfo | None] | None = None,
) -> str:
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
        content = _text(message.get("content"), files)
        return f"<|tool|>{message.get('tool_call_id', '')}\n{content}<|end|>"
    return f"<|{role}|>{_text(message.get('content'), files)}<|end|>"


def render_prompt(
    body: Mapping[str, Any], *, files: Callable[[str], ImageInfo | None] | None = None
) -> list[str]:
    """The request as a list of text segments: canonical tools JSON first, then each message
    (earlier reasoning only when the request carries tools, as DeepSeek does); ``files`` finds
    the uploaded images ``file`` parts name."""
    segments: list[str] = []
    tools = body.get("tools")
    if tools:
        segments.append("<|tools|>" + canonical_json(tools))
    with_reasoning = bool(tools)
    segments.extend(
        render_message(m, with_reasoning=with_reasoning, files=files)
        for m in body.get("messages") or ()
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


def count_tokens(text: str | None, chars_per_token: int) -> int:
    """How many tokens ``text`` takes (a partial last token counts)."""
    if not text:
        return 0
    return -(-len(text) // chars_per_token)
