"""Images for the tests, made with the standard library: a real PNG of any size, a real GIF,
and JPEG and WebP files whose headers are the formats' own (what hango reads of them), and
tool-result images of each as :class:`~harness.messages.ImageBlock` values."""

from __future__ import annotations

import base64
import struct
import zlib

from harness.messages import ImageBlock


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def png(width: int, height: int) -> bytes:
    """A grey PNG, 8-bit greyscale, every row filter 0."""
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(rows)) + _chunk(b"IEND", b""))


def gif(width: int, height: int) -> bytes:
    """A GIF of ``width`` × ``height`` whose one white pixel is drawn at its top left."""
    return (b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0)
            + b"\xff\xff\xff\x00\x00\x00"  # the global colour table: white, black
            + b",\x00\x00\x00\x00\x01\x00\x01\x00\x00"  # a 1×1 image at 0,0
            + b"\x02\x02D\x01\x00;")  # its LZW data, the trailer


def jpeg(width: int, height: int, *, metadata: int = 0) -> bytes:
    """A JPEG's segments up to its frame: JFIF, ``metadata`` bytes of APP1 segments (where a
    camera's EXIF goes) and the baseline start-of-frame with the size."""
    jfif = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    out = b"\xff\xd8\xff\xe0" + struct.pack(">H", 2 + len(jfif)) + jfif
    while metadata > 0:
        size = min(metadata, 65_533)
        out += b"\xff\xe1" + struct.pack(">H", size + 2) + b"\x00" * size
        metadata -= size
    out += b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return out + b"\xff\xd9"


def webp(width: int, height: int, *, kind: str = "VP8X") -> bytes:
    """A WebP's RIFF header and first chunk, of one of its three kinds, with the size."""
    if kind == "VP8X":
        body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(
            3, "little")
    elif kind == "VP8L":
        body = b"\x2f" + ((width - 1) | (height - 1) << 14).to_bytes(4, "little") + b"\x00" * 5
    else:  # "VP8 ": a key frame's tag, its start code, then the size
        body = b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 4
    chunk = kind.encode() + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def image(raw: bytes, media_type: str = "image/png") -> ImageBlock:
    return ImageBlock(media_type=media_type, data=base64.b64encode(raw).decode())


def png_image(width: int = 200, height: int = 100) -> ImageBlock:
    return image(png(width, height))
