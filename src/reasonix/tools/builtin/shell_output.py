"""What a shell command printed, as the model gets it: :class:`CappedOutput` keeps the head and
the tail of a stream within a limit (the middle cut with a note), escape sequences removed;
:func:`pump` feeds it from a pipe."""

from __future__ import annotations

import asyncio
import os
from collections import deque

from reasonix.terminal_text import strip_escape_sequences

__all__ = ["CappedOutput", "pump"]

_READ_CHUNK = 65536


class CappedOutput:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.half:
            self.tail_size -= len(self.tail.popleft())

    def text(self) -> str:
        tail = b"".join(self.tail)
        if len(tail) > self.half:
            tail = tail[len(tail) - self.half :]
        cut = self.total - len(self.head) - len(tail)
        head_text = _clean(bytes(self.head))
        if cut <= 0:
            return head_text + _clean(tail)
        note = f"\n[... output capped: {cut:,} bytes cut from the middle ...]\n"
        return head_text + note + _clean(tail)


def _clean(data: bytes) -> str:
    return strip_escape_sequences(data.decode("utf-8", "replace"))


async def pump(read_fd: int, output: CappedOutput) -> None:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    try:
        while chunk := await stream.read(_READ_CHUNK):
            output.feed(chunk)
    finally:
        transport.close()
