"""Images in tool results: which ones a model is sent, their size in pixels, and their tokens.

A tool (an MCP server's, say) may answer with images beside its text
(:class:`~harness.tools.base.ToolResult` ``images``). Before a result joins the history,
:func:`admit` replaces each image that cannot be sent by a line of text saying why, so no
request carries one a provider refuses (a refused image in the history would fail every later
call of the session). An image is sent when:

* its bytes are a PNG, JPEG, GIF or WebP image (:data:`~harness.messages.IMAGE_TYPES`, the
  types Anthropic's Messages API takes): read from the bytes, so a tool that labels a PNG
  ``image/jpg`` still has it sent, as ``image/png``;
* its base64 text is at most :data:`MAX_IMAGE_CHARS` (5 MiB, about 3.75 MiB decoded): Anthropic's
  per-image limit, which its API checks on the base64 text;
* it is at most :data:`MAX_IMAGE_EDGE` pixels wide and tall (8,000: Anthropic's limit);
* it is one of the result's first :data:`MAX_RESULT_IMAGES` images and, with those kept before
  it, within :data:`MAX_RESULT_IMAGE_CHARS` of base64: a tool (a tenant's MCP server) cannot
  fill the history with images that every later request of the session would carry.

The size in pixels is read from the image's header — PNG's IHDR chunk, GIF's logical screen,
WebP's VP8/VP8L/VP8X chunk, JPEG's start-of-frame segment — with the standard library only.

Tokens (:func:`tokens`) follow Anthropic's published rule for images: width × height / 750,
after the image is scaled down (its aspect kept) to at most :data:`MAX_LONG_EDGE` pixels on its
long edge and about :data:`MAX_IMAGE_TOKENS` tokens. An image whose size cannot be read (a row
not written through :func:`admit`) counts :data:`MAX_IMAGE_TOKENS`, the most one costs, so a
budget never undercounts it. OpenAI's chat wire takes no image in a tool result: it is sent, and
counted, as a line of text (:mod:`harness.providers.openai_wire`).
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from harness.caches import IdentityCache
from harness.messages import ImageBlock, Message

if TYPE_CHECKING:  # counting imports this module: it stays clear of the tools' jsonschema
    from harness.tools.base import ToolResult

MAX_IMAGE_CHARS = 5 * 1024 * 1024
MAX_IMAGE_EDGE = 8_000
MAX_LONG_EDGE = 1_568
MAX_IMAGE_TOKENS = 1_600
MAX_RESULT_IMAGES = 8
MAX_RESULT_IMAGE_CHARS = 8 * 1024 * 1024
PIXELS_PER_TOKEN = 750
_TYPE_NAMES = "PNG, JPEG, GIF or WebP"


class Pixels(NamedTuple):
    width: int
    height: int


def decoded_bytes(image: ImageBlock) -> int:
    """The image's size in bytes, from the length of its base64 text."""
    data = image.data
    return len(data) // 4 * 3 - (data[-2:].count("=") if len(data) % 4 == 0 else 0)


# -- reading the header ------------------------------------------------------------------------

def _kind(raw: bytes) -> str | None:
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def _png(raw: bytes) -> tuple[int, int] | None:
    if len(raw) < 24 or raw[12:16] != b"IHDR":
        return None
    return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")


def _gif(raw: bytes) -> tuple[int, int] | None:
    return (int.from_bytes(raw[6:8], "little"), int.from_bytes(raw[8:10], "little")
            ) if len(raw) >= 10 else None


def _webp(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X" and len(raw) >= 30:  # extended: 24-bit width and height, less one
        return (1 + int.from_bytes(raw[24:27], "little"), 1 + int.from_bytes(raw[27:30], "little"))
    if chunk == b"VP8L" and len(raw) >= 25 and raw[20] == 0x2F:  # lossless: 14 bits each
        bits = int.from_bytes(raw[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + (bits >> 14 & 0x3FFF)
    if chunk == b"VP8 " and len(raw) >= 30 and raw[23:26] == b"\x9d\x01\x2a":  # lossy
        return (int.from_bytes(raw[26:28], "little") & 0x3FFF,
                int.from_bytes(raw[28:30], "little") & 0x3FFF)
    return None


# Start-of-frame markers (0xC0-0xCF but DHT, JPG and DAC) carry the height and width; markers
# without a length (RSTn, TEM) stand alone.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE = frozenset(range(0xD0, 0xD8)) | {0x01}


def _jpeg(raw: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        if marker == 0xFF:  # a fill byte
            at += 1
        elif marker in _STANDALONE:
            at += 2
        elif marker in (0xD9, 0xDA):  # the end, or the scan, before any frame
            return None
        elif marker in _SOF:
            if at + 9 > len(raw):
                return None
            height = int.from_bytes(raw[at + 5:at + 7], "big")
            return int.from_bytes(raw[at + 7:at + 9], "big"), height
        else:
            at += 2 + int.from_bytes(raw[at + 2:at + 4], "big")
    return None


_SIZES: dict[str, Callable[[bytes], tuple[int, int] | None]] = {
    "image/png": _png, "image/gif": _gif, "image/webp": _webp, "image/jpeg": _jpeg}
_HEAD_CHARS = 64  # base64 of the first 48 bytes: where PNG, GIF and WebP keep their size
_JPEG_CHUNK = 65_536  # a JPEG's frame comes after its metadata segments: read on until it


def _read(data: str) -> tuple[str, Pixels] | None:
    """What the base64 ``data`` is (one of the four types) and its size, read from as little
    of it as its header needs; None when it is not one of them or its size cannot be read."""
    chars = _HEAD_CHARS
    while True:
        prefix = data[:chars]
        try:
            raw = binascii.a2b_base64(prefix[:len(prefix) // 4 * 4], strict_mode=True)
        except binascii.Error:
            return None
        kind = _kind(raw)
        size = _SIZES[kind](raw) if kind is not None else None
        if size is not None and min(size) > 0 and kind is not None:
            return kind, Pixels(*size)
        if kind != "image/jpeg" or chars >= len(data):
            return None
        chars = max(chars, _JPEG_CHUNK) * 4


_read_cache: IdentityCache[tuple[str, Pixels] | None] = IdentityCache()


def pixels(image: ImageBlock) -> Pixels | None:
    """The image's width and height, read from its header (once per image object); None when
    they cannot be read."""
    read = _read_cache.get(image, lambda i: _read(i.data))
    return read[1] if read is not None else None


def tokens(image: ImageBlock) -> int:
    """The image's tokens by Anthropic's rule (the module docstring)."""
    size = pixels(image)
    if size is None:
        return MAX_IMAGE_TOKENS
    width, height = size
    scale = min(1.0, MAX_LONG_EDGE / max(width, height),
                math.sqrt(MAX_IMAGE_TOKENS * PIXELS_PER_TOKEN / (width * height)))
    sent = max(1, int(width * scale)) * max(1, int(height * scale))
    return max(1, math.ceil(sent / PIXELS_PER_TOKEN))


# -- what is sent ------------------------------------------------------------------------------

class Refused(NamedTuple):
    """An image that is not sent: what it was and why."""

    about: str  # "image/png image, 6000000 bytes"
    why: str

    @property
    def line(self) -> str:
        """The line of text that stands for it in the result."""
        return f"[{self.about} not shown: {self.why}]"


def sendable(image: ImageBlock) -> ImageBlock | Refused:
    """``image`` as it is sent (labelled with the type its bytes are), or why it cannot be."""
    about = f"{image.media_type or 'untyped'} image"
    if len(image.data) > MAX_IMAGE_CHARS:
        return Refused(f"{about}, {decoded_bytes(image)} bytes",
                       f"over the limit of {MAX_IMAGE_CHARS} characters of base64 an image "
                       "may have")
    if not _is_base64(image.data):
        return Refused(about, "its data is not base64")
    read = _read(image.data)
    if read is None:
        return Refused(about, f"its data is not a {_TYPE_NAMES} image")
    kind, (width, height) = read
    if max(width, height) > MAX_IMAGE_EDGE:
        return Refused(f"{about}, {width}×{height} pixels",
                       f"wider or taller than {MAX_IMAGE_EDGE} pixels")
    image = image if image.media_type == kind else replace(image, media_type=kind)
    _read_cache.put(image, read)
    return image


def _is_base64(data: str) -> bool:
    """Strict base64: padded, nothing outside the alphabet (whitespace neither)."""
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except ValueError:  # binascii.Error, or a character outside ASCII
        return False
    return bool(data)


def problem(image: ImageBlock) -> str | None:
    """Why ``image`` may not be stored as it is (None: it may): for the images a client posts,
    which are refused rather than changed."""
    sent = sendable(image)
    if isinstance(sent, Refused):
        return f"{sent.about}: {sent.why}"
    if sent.media_type != image.media_type:
        return f"{image.media_type or 'untyped'} image: its data is {sent.media_type}"
    return None


def admit(result: ToolResult) -> ToolResult:
    """``result`` as it is stored: each image that cannot be sent replaced by a line of text
    after the result's text, saying what it was and why it is not shown."""
    if not result.images:
        return result
    kept: list[ImageBlock] = []
    lines: list[str] = []
    chars = 0
    for image in result.images:
        sent = sendable(replace(image, data="".join(image.data.split())))  # MIME line breaks
        if not isinstance(sent, Refused) and (len(kept) == MAX_RESULT_IMAGES
                                              or chars + len(sent.data) > MAX_RESULT_IMAGE_CHARS):
            sent = Refused(f"{sent.media_type} image, {decoded_bytes(sent)} bytes",
                           f"a tool result keeps at most {MAX_RESULT_IMAGES} images and "
                           f"{MAX_RESULT_IMAGE_CHARS} characters of base64 in all")
        if isinstance(sent, Refused):
            lines.append(sent.line)
        else:
            kept.append(sent)
            chars += len(sent.data)
    if not lines:
        return replace(result, images=tuple(kept))
    content = "\n".join(([result.content] if result.content else []) + lines)
    return replace(result, content=content, images=tuple(kept))


# -- as the context inspector lists them -------------------------------------------------------

class Listed(NamedTuple):
    """An image of a message part, as the context inspector lists it."""

    media_type: str
    bytes: int
    pixels: Pixels | None
    tokens: int  # of the part's: 0 when it is sent as a line of text, counted with the text
    sent: bool  # False: sent as a line of text (a wire that takes no image in a tool result)

    @property
    def line(self) -> str:
        size = f"{self.pixels.width}×{self.pixels.height} px" if self.pixels else "size unknown"
        how = f"{self.tokens:,} tokens" if self.sent else "sent as a line of text"
        return f"{self.media_type} · {self.bytes:,} bytes · {size} · {how}"


def listed(message: Message, sent: Callable[[Message], Message],
           count: Callable[[ImageBlock], int]) -> tuple[Listed, ...]:
    """The images of ``message``'s tool results, each with its tokens as ``count`` counts them
    and whether ``sent`` (the wire's form of a message) keeps it an image."""
    found = [i for b in message.tool_results for i in b.images]
    if not found:
        return ()
    as_image = any(b.images for b in sent(message).tool_results)
    return tuple(Listed(i.media_type, decoded_bytes(i), pixels(i), count(i), as_image)
                 for i in found)
