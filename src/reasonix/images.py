"""Images as DeepSeek takes them: formats told from the bytes, sizes, limits, token estimates.

One source of truth for the client (refusing an image before any request) and the fake server
(refusing it as DeepSeek does). Facts from shared/reference/deepseek-api.md, "Vision":

- formats JPEG, PNG, GIF, WebP, detected from the bytes, never from a name or declared type;
- one inline image ≤ 32 MiB, request body ≤ 48 MiB, ≤ 600 images per request, total inline image
  bytes ≤ 64 MiB, ≤ 8192 px per side (≤ 4096 once a request holds 15 or more images);
- an image over the inline limit goes through the Files API (``POST /files``, ``purpose`` =
  ``user_data``) and is sent as a ``{"type": "file", "file_id": …}`` part: ≤ 64 MiB an image,
  ≤ 200 MiB of images in a request with such parts ("Files API");
- ``detail``: ``low`` (downscaled to 512×512), ``high`` (alias of ``original``), ``original``,
  ``auto`` (today the same as ``original``).

The token rule is the third-party one the reference gives for ``deepseek-flash`` (unconfirmed):
an image's pixel area is scaled into [544², 1300²], cut into 14-px patches, 3:1 downsampled
(9 patches a token), at most 1024 tokens. ``usage`` from the server is the authority; this is
an estimate for display and for the fake server's counts.

Pure functions on bytes, stdlib only (imported lazily by whoever needs images).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from reasonix.errors import ReasonixError

if TYPE_CHECKING:
    from reasonix.messages import ImagePart, Message

__all__ = [
    "DETAILS",
    "MANY_IMAGES",
    "MAX_BODY_BYTES",
    "MAX_FILE_IMAGE_BYTES",
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "MAX_SIDE",
    "MAX_SIDE_MANY",
    "MAX_TOTAL_IMAGE_BYTES",
    "MAX_TOTAL_WITH_FILES",
    "ImageError",
    "ImageInfo",
    "check_request_images",
    "data_url",
    "decode_data_url",
    "image_tokens",
    "load_image",
    "looks_like_image",
    "sniff",
    "upload_name",
]

ImageFormat = Literal["jpeg", "png", "gif", "webp"]
MIME: dict[str, str] = {
    "jpeg": "image/jpeg",
    "png": "image/png",
    "gif": "image/gif",
    "webp": "image/webp",
}
DETAILS = ("low", "high", "original", "auto")
MAX_BODY_BYTES = 48 * 1024 * 1024
MAX_IMAGE_BYTES = 32 * 1024 * 1024
MAX_TOTAL_IMAGE_BYTES = 64 * 1024 * 1024
#: one image uploaded through the Files API, and all images of a request that has such parts
MAX_FILE_IMAGE_BYTES = 64 * 1024 * 1024
MAX_TOTAL_WITH_FILES = 200 * 1024 * 1024
MAX_IMAGES = 600
MAX_SIDE = 8192
MAX_SIDE_MANY = 4096
MANY_IMAGES = 15
#: the token rule's constants (see the module docstring)
_MIN_AREA = 544 * 544
_MAX_AREA = 1300 * 1300
_PATCH = 14
_PATCHES_PER_TOKEN = 9
MAX_TOKENS_PER_IMAGE = 1024


class ImageError(ReasonixError, ValueError):
    """An image DeepSeek would refuse, with a message that says what to change."""


@dataclass(frozen=True, slots=True)
class ImageInfo:
    format: ImageFormat
    width: int
    height: int
    size: int
    sha256: str

    @property
    def mime(self) -> str:
        return MIME[self.format]


def _kind(data: bytes) -> ImageFormat | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def looks_like_image(head: bytes) -> bool:
    """The first bytes of a JPEG, PNG, GIF or WebP file."""
    return _kind(head) is not None


def _png_size(data: bytes) -> tuple[int, int]:
    if data[12:16] != b"IHDR" or len(data) < 24:
        raise ImageError("the PNG has no IHDR header (a truncated or damaged file)")
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


def _gif_size(data: bytes) -> tuple[int, int]:
    if len(data) < 10:
        raise ImageError("the GIF is truncated")
    w, h = struct.unpack("<HH", data[6:10])
    return int(w), int(h)


def _jpeg_size(data: bytes) -> tuple[int, int]:
    i = 2
    n = len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE):
            if i + 9 > n:
                break
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    raise ImageError("the JPEG has no frame header (a truncated or damaged file)")


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        w = 1 + int.from_bytes(data[24:27], "little")
        h = 1 + int.from_bytes(data[27:30], "little")
        return w, h
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and len(data) >= 30:
        w, h = struct.unpack("<HH", data[26:30])
        return int(w) & 0x3FFF, int(h) & 0x3FFF
    raise ImageError("the WebP has no VP8/VP8L/VP8X header (a truncated or damaged file)")


def sniff(data: bytes, *, what: str = "the image", limit: int = MAX_IMAGE_BYTES) -> ImageInfo:
    """Format and size from the bytes; :class:`ImageError` for anything DeepSeek refuses on
    its own (not an image of the four formats, damaged, over ``limit`` bytes — 32 MiB inline,
    :data:`MAX_FILE_IMAGE_BYTES` through the Files API — or 8192 px a side)."""
    kind = _kind(data)
    if kind is None:
        raise ImageError(
            f"{what} is not a JPEG, PNG, GIF or WebP image (told from its bytes); "
            "convert it to PNG or JPEG"
        )
    if len(data) > limit:
        how = "through its Files API" if limit > MAX_IMAGE_BYTES else "inline"
        raise ImageError(
            f"{what} is {len(data):,} bytes; DeepSeek takes at most {limit:,} "
            f"({limit >> 20} MiB) for one image {how}: scale it down"
        )
    size = {"png": _png_size, "gif": _gif_size, "jpeg": _jpeg_size, "webp": _webp_size}[kind]
    width, height = size(data)
    if width < 1 or height < 1:
        raise ImageError(f"{what} has no pixels ({width}×{height})")
    if max(width, height) > MAX_SIDE:
        raise ImageError(
            f"{what} is {width}×{height} px; DeepSeek takes at most {MAX_SIDE} px a side: "
            "scale it down"
        )
    return ImageInfo(kind, width, height, len(data), hashlib.sha256(data).hexdigest())


def image_tokens(width: int, height: int, detail: str | None = None) -> int:
    """Estimated input tokens of one image (the rule in the module docstring)."""
    if detail == "low":
        scale = min(1.0, 512 / max(width, height))
        width, height = max(1, int(width * scale)), max(1, int(height * scale))
    area = min(max(width * height, _MIN_AREA), _MAX_AREA)
    patches = -(-area // (_PATCH * _PATCH))
    return min(MAX_TOKENS_PER_IMAGE, -(-patches // _PATCHES_PER_TOKEN))


def data_url(data: bytes, info: ImageInfo) -> str:
    """The inline form: ``data:<mime>;base64,<bytes>`` (the same bytes give the same text)."""
    return f"data:{info.mime};base64," + base64.b64encode(data).decode("ascii")


def decode_data_url(url: str) -> bytes | None:
    """The bytes of a base64 ``data:`` URL (None for anything else)."""
    if not url.startswith("data:"):
        return None
    head, sep, payload = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    try:
        return base64.b64decode(payload, validate=True)
    except ValueError:
        return None


def load_image(
    data: bytes, *, name: str = "", detail: str | None = None, what: str | None = None
) -> ImagePart:
    """An image part for a message, or :class:`ImageError` saying what to change. An image
    over the 32 MiB inline limit (up to the Files API's 64 MiB) comes back *pending*: the
    agent uploads it once before it is sent (:meth:`ImagePart.pending`)."""
    from reasonix.messages import ImagePart

    label = what or (f"{name!r}" if name else "the image")
    if detail is not None and detail not in DETAILS:
        raise ImageError(f"image detail {detail!r} is not one of {', '.join(DETAILS)}")
    info = sniff(data, what=label, limit=MAX_FILE_IMAGE_BYTES)
    inline = info.size <= MAX_IMAGE_BYTES
    return ImagePart(
        url=data_url(data, info) if inline else "",
        mime=info.mime,
        width=info.width,
        height=info.height,
        size=info.size,
        sha256=info.sha256,
        detail=detail if inline else None,
        name=name,
        data=None if inline else data,
    )


def upload_name(image: ImagePart) -> str:
    """The file name an upload carries: the image's own (at most 512 characters, as the
    Files API takes) or one made from its digest, with the extension of its format."""
    ext = {"image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp"}
    name = image.name.replace("/", "_").replace("\\", "_").strip() or image.sha256[:16]
    if not name.lower().endswith((*ext.values(), ".jpeg")):
        name += ext.get(image.mime, "")
    return name[-512:]


def check_request_images(
    messages: Sequence[Message], *, model: str, accepts_images: bool, image_models: Sequence[str]
) -> None:
    """Refuse, before it is sent, a request DeepSeek would refuse for its images: any image to
    a model that does not read them (naming a configured model that does), more than 600, over
    4096 px a side from 15 on, over 64 MiB of inline images (200 MiB with Files API ones), a
    body over 48 MiB, or an image still waiting for its upload."""
    from reasonix.messages import message_images

    found = message_images(messages)
    if not found:
        return
    if not accepts_images:
        others = ", ".join(image_models) or "none is configured"
        raise ImageError(
            f"{model} does not read images (its /models entry lists text only), so the "
            f"{len(found)} image(s) of this turn were not sent. Models that read images: "
            f'{others}; make one the executor (e.g. [executor] model = "deepseek-flash") '
            "or send the turn without images."
        )
    waiting = [i for i in found if i.pending]
    if waiting:
        raise ImageError(
            f"{waiting[0].name or 'an image'} ({waiting[0].size:,} bytes) is over the 32 MiB "
            "DeepSeek takes inline and was not uploaded through the Files API: this provider "
            "has no Files API, so scale the image down to 32 MiB or less"
        )
    if len(found) > MAX_IMAGES:
        raise ImageError(
            f"the conversation carries {len(found)} images; DeepSeek takes at most "
            f"{MAX_IMAGES} in one request: start a new session or /compact"
        )
    if len(found) >= MANY_IMAGES:
        wide = [i for i in found if max(i.width, i.height) > MAX_SIDE_MANY]
        if wide:
            raise ImageError(
                f"with {len(found)} images in a request DeepSeek takes at most {MAX_SIDE_MANY} "
                f"px a side, and {wide[0].name or 'an image'} is {wide[0].width}x"
                f"{wide[0].height}: scale it down or send fewer images"
            )
    inline = [i for i in found if i.file_id is None]
    total = sum(i.size for i in inline)
    if total > MAX_TOTAL_IMAGE_BYTES:
        raise ImageError(
            f"the inline images of this request total {total:,} bytes; DeepSeek takes at most "
            f"{MAX_TOTAL_IMAGE_BYTES:,} (64 MiB) inline: send fewer or smaller images"
        )
    everything = sum(i.size for i in found)
    if len(inline) < len(found) and everything > MAX_TOTAL_WITH_FILES:
        raise ImageError(
            f"the images of this request total {everything:,} bytes; DeepSeek takes at most "
            f"{MAX_TOTAL_WITH_FILES:,} (200 MiB) with Files API images: start a new session "
            "or /compact"
        )
    body = sum(len(i.url) for i in inline)
    if body > MAX_BODY_BYTES:
        raise ImageError(
            f"the encoded images of this request take {body:,} bytes, over DeepSeek's "
            f"{MAX_BODY_BYTES:,}-byte (48 MiB) request limit: send fewer or smaller images"
        )
