"""Reading what the page sends: a request's JSON body within a size bound, a message's images
checked from their bytes, and the error answer that says what to fix. Apart from the routes
(:mod:`reasonix.web.server`) because every route reads its body the same way, and the bounds
are part of the dashboard's security (a body is refused past its bound before it is held)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

if TYPE_CHECKING:
    from reasonix.messages import ImagePart

__all__ = ["MAX_BODY", "MAX_MESSAGE_BODY", "HttpError", "message_images", "read_json"]

#: The largest request body read (a message to the agent fits many times over).
MAX_BODY = 1_000_000
#: a message's body may carry images (base64; DeepSeek takes 32 MiB an image inline, 48 MiB a
#: request, and an image up to 64 MiB through its Files API)
MAX_MESSAGE_BODY = 48 * 1024 * 1024


class HttpError(Exception):
    """An answer other than 200, with a message that says what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def message_images(value: Any) -> tuple[ImagePart, ...]:
    """A message's ``images`` (``[{"name", "data": base64}]``) as image parts, each checked from
    its bytes; one DeepSeek would refuse is a 400 that says why (nothing is sent)."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > 16:
        raise HttpError(400, '"images" must be a list of at most 16 {"name", "data"} objects')
    import base64
    import binascii

    from reasonix.images import ImageError, load_image

    found = []
    for i, item in enumerate(value):
        data = item.get("data") if isinstance(item, dict) else None
        name = item.get("name") if isinstance(item, dict) else None
        name = name if isinstance(name, str) else f"image {i + 1}"
        if not isinstance(data, str):
            raise HttpError(400, f'images[{i}] needs its bytes as base64 in "data"')
        try:
            found.append(load_image(base64.b64decode(data, validate=True), name=name, what=name))
        except ImageError as exc:
            raise HttpError(400, f"{exc}; nothing was sent") from None
        except binascii.Error:
            raise HttpError(400, f"images[{i}].data is not base64") from None
    return tuple(found)


async def read_json(request: Request, limit: int = MAX_BODY) -> dict[str, Any]:
    """The request's JSON object body ({} when empty). The body is read in pieces and refused
    past ``limit`` (:data:`MAX_BODY`: the login route reads it before anyone is known)."""
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise HttpError(413, f"the request body is larger than {limit // 1000} kB")
    if not raw:
        return {}
    try:
        data = json.loads(bytes(raw))
    except ValueError:
        raise HttpError(400, "the request body is not JSON") from None
    if not isinstance(data, dict):
        raise HttpError(400, "the request body must be a JSON object")
    return data
