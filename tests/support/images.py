"""Real image files of a chosen size, built from their format specs (no imaging library)."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 4, height: int = 3, *, seed: int = 0) -> bytes:
    """A valid PNG (8-bit grey); ``seed`` changes the pixels, so two images differ in bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    row = bytes([0]) + bytes((x + seed) % 256 for x in range(width))
    raw = row * height
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def jpeg_header(width: int, height: int) -> bytes:
    """The start of a baseline JPEG (SOI, an APP0 segment, SOF0): enough to be measured."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp(width: int, height: int) -> bytes:
    """A VP8X WebP header (extended format carries the canvas size)."""
    payload = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
    payload += (height - 1).to_bytes(3, "little")
    chunk = b"VP8X" + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def large_gif(size: int, *, seed: int = 0) -> bytes:
    """A GIF of exactly ``size`` bytes (a real header, then filler): big enough to cross the
    inline or the Files API limit without building that many pixels. ``seed`` changes the
    bytes."""
    head = gif(64 + seed, 64)
    return head + bytes([seed % 256]) * (size - len(head))
