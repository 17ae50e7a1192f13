"""A response body, decoded within a bound: ``web_fetch`` reads the bytes as they came over the
wire and undoes their ``Content-Encoding`` itself, a bounded piece at a time.

An HTTP client that decodes for us inflates each chunk it receives whole: a body of a few
kilobytes encoded twice with gzip becomes gigabytes in memory before any size cap can count a
byte. Here every layer hands on at most :data:`PIECE` bytes at a time and the reader stops as
soon as the decoded total passes the cap, so what is held is the cap plus one piece per layer,
whatever the ratio. At most :data:`MAX_LAYERS` encodings are undone (a body encoded more often
is refused); ``gzip``, ``x-gzip`` and ``deflate`` are decoded (what the request's
``Accept-Encoding`` offers); another encoding is refused with its name. The encoded bytes read
are bounded by the same cap.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator, Sequence

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_LAYERS",
    "PIECE",
    "BodyError",
    "decoded_body",
    "layers_for",
]

#: The most bytes one decoding step hands on.
PIECE = 64 * 1024
#: The most ``Content-Encoding`` layers undone.
MAX_LAYERS = 2
#: Encodings decoded, and the zlib window setting of each.
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
#: What requests offer.
ACCEPT_ENCODING = "gzip, deflate"


class BodyError(Exception):
    """The body cannot be decoded (unknown encoding, too many layers, corrupt data)."""


class _Inflate:
    """One zlib layer that never returns more than :data:`PIECE` bytes per step. ``deflate``
    is zlib-wrapped by the standard, raw in some servers: the raw form is tried when the
    wrapped one fails at the first bytes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._inflater = zlib.decompressobj(_WBITS[name])
        self._may_be_raw = name == "deflate"

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while True:
            try:
                out = self._inflater.decompress(pending, PIECE)
            except zlib.error as exc:
                if self._may_be_raw:
                    self._may_be_raw = False
                    self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise BodyError(f"the {self.name} data is corrupt ({exc})") from None
            self._may_be_raw = False
            pending = self._inflater.unconsumed_tail
            if out:
                yield out
            if self._inflater.eof:
                return  # what follows the end of the stream is not part of the body
            if not pending and len(out) < PIECE:
                return  # everything fed so far is out


def layers_for(content_encoding: str) -> list[_Inflate]:
    """The decoders for a ``Content-Encoding`` header, in the order they are undone (the last
    encoding applied comes off first)."""
    names = [n.strip().lower() for n in content_encoding.split(",")]
    names = [n for n in names if n and n != "identity"]
    if len(names) > MAX_LAYERS:
        raise BodyError(
            f"the body is encoded {len(names)} times over ({', '.join(names)}); web_fetch "
            f"undoes at most {MAX_LAYERS} encodings"
        )
    for name in names:
        if name not in _WBITS:
            raise BodyError(
                f"the body is encoded with {name!r}, which web_fetch does not decode (it asks "
                f"for {ACCEPT_ENCODING})"
            )
    return [_Inflate(name) for name in reversed(names)]


def _through(layers: Sequence[_Inflate], data: bytes) -> Iterator[bytes]:
    if not layers:
        yield data
        return
    for piece in layers[0].feed(data):
        yield from _through(layers[1:], piece)


async def decoded_body(
    raw: AsyncIterator[bytes], content_encoding: str, limit: int
) -> tuple[bytes, bool]:
    """The decoded body, at most ``limit`` bytes, and whether it was cut there. Raises
    :class:`BodyError`."""
    layers = layers_for(content_encoding)
    chunks: list[bytes] = []
    total = 0
    encoded = 0
    async for chunk in raw:
        encoded += len(chunk)
        for piece in _through(layers, chunk):
            chunks.append(piece)
            total += len(piece)
            if total > limit:
                return b"".join(chunks)[:limit], True
        if encoded > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False
