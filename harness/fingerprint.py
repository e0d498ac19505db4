"""Request fingerprints: each part a model call sent as a short hash and its token count, so two
calls can be compared part by part without keeping either.

:func:`of_request` prints a :class:`~harness.chain.ModelRequest` as the innermost handler
receives it — the run's provider handler for a call it sends, the inspector's capture handler
for the next one — so a sent call and the inspector's snapshot are printed by one function over
one assembly. Parts come in the order the provider reads them (tools, system blocks, messages),
each keyed by its part id (:mod:`harness.context`) with a 32-bit BLAKE2b digest of its content
and its tokens as the run's tokenizer counts them; ``cached`` counts the leading parts up to the
prompt cache's mark (the tools and the system blocks through the marked one).

Stored, a print is a few bytes (:func:`encode`): the first call a worker sends for a run is
written whole, each later one as the edit from the one before it — runs of parts copied from
it, and the parts that are new — so a turn that adds two messages adds about twenty bytes, not
a part per message. :func:`decode` reads a run's prints back in order.

:mod:`harness.print_diff` compares two prints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from harness import context
from harness.caches import IdentityCache
from harness.chain import ModelRequest
from harness.errors import InvalidContent
from harness.history import is_summary
from harness.messages import Message, PartPrint, RequestPrint
from harness.serde import content_to_json, json_text
from harness.tokens.base import Tokenizer

FULL, EDIT = 1, 2  # the first byte of a stored print: whole, or an edit of the one before

_digests: IdentityCache[int] = IdentityCache()


def digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def _message_digest(message: Message) -> int:
    return digest(message.role + json_text(content_to_json(message.content)))


def of_request(req: ModelRequest, tokenizer: Tokenizer) -> RequestPrint:
    """The print of ``req`` as the innermost handler receives it (cache mark and all)."""
    parts = [PartPrint(context.tool_part(t.name),
                       digest(json_text({"description": t.description,
                                         "input_schema": t.input_schema})),
                       tokenizer.tool(t.definition)) for t in req.tools]
    marked = next((i for i, b in enumerate(req.system) if b.block.cache_control is not None),
                  None)
    parts += [PartPrint(b.part, digest(b.block.text), tokenizer.block(b.block))
              for b in req.system]
    repairs = 0
    for message in req.request.messages:
        if message.seq is not None:
            part = context.message_part(message.seq)
        elif is_summary(message):
            part = context.SUMMARY
        else:
            repairs += 1
            part = f"{context.REPAIR_PREFIX}{repairs}"
        parts.append(PartPrint(part, _digests.get(message, _message_digest),
                               tokenizer.message(message)))
    cached = 0 if marked is None else len(req.tools) + marked + 1
    return RequestPrint(parts=tuple(parts), cached=cached)


# -- storage ---------------------------------------------------------------------------------

def _varint(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


# A part id's tag: the common kinds take a byte and a number, the rest their text.
_TAGS = ((1, context.MESSAGE_PREFIX, True), (2, context.TOOL_PREFIX, False),
         (3, context.SYSTEM_PREFIX, False), (4, context.REPAIR_PREFIX, True))


def _part(part: str, out: bytearray) -> None:
    if part == context.SUMMARY:
        out.append(5)
        return
    for tag, prefix, numbered in _TAGS:
        rest = part.removeprefix(prefix)
        if rest != part and (not numbered or rest.isdigit() and str(int(rest)) == rest):
            out.append(tag)
            if numbered:
                _varint(int(rest), out)
                return
            part = rest
            break
    else:
        out.append(0)
    raw = part.encode()
    _varint(len(raw), out)
    out += raw


def _entry(p: PartPrint, out: bytearray) -> None:
    _part(p.part, out)
    out += p.digest.to_bytes(4, "big")
    _varint(p.tokens, out)


def encode(now: RequestPrint, previous: RequestPrint | None = None) -> bytes:
    """``now`` as stored: whole without ``previous``, else as the edit that makes it from
    ``previous`` — runs copied from it (start, length) and the new parts between them."""
    out = bytearray([FULL if previous is None else EDIT])
    _varint(now.cached, out)
    if previous is None:
        _varint(len(now.parts), out)
        for p in now.parts:
            _entry(p, out)
        return bytes(out)
    at = {p: i for i, p in enumerate(previous.parts)}
    ops: list[tuple[int, int] | list[PartPrint]] = []
    i = 0
    while i < len(now.parts):
        start = at.get(now.parts[i])
        if start is None:
            if not ops or not isinstance(ops[-1], list):
                ops.append([])
            last = ops[-1]
            assert isinstance(last, list)
            last.append(now.parts[i])
            i += 1
            continue
        length = 1
        while (i + length < len(now.parts) and start + length < len(previous.parts)
               and now.parts[i + length] == previous.parts[start + length]):
            length += 1
        ops.append((start, length))
        i += length
    _varint(len(ops), out)
    for op in ops:
        if isinstance(op, list):  # new parts: their count, odd
            _varint(len(op) << 1 | 1, out)
            for p in op:
                _entry(p, out)
        else:  # a run of the previous print's parts: its length, even, then its start
            _varint(op[1] << 1, out)
            _varint(op[0], out)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise InvalidContent("a stored request print ends too soon")
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def raw(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise InvalidContent("a stored request print ends too soon")
        self.at += n
        return self.data[self.at - n:self.at]

    def part(self) -> str:
        tag = self.byte()
        if tag == 5:
            return context.SUMMARY
        prefix, numbered = next(((pre, num) for t, pre, num in _TAGS if t == tag), ("", False))
        if numbered:
            return f"{prefix}{self.varint()}"
        return prefix + self.raw(self.varint()).decode()

    def entry(self) -> PartPrint:
        part = self.part()
        return PartPrint(part, int.from_bytes(self.raw(4), "big"), self.varint())


def is_whole(data: bytes) -> bool:
    return bool(data) and data[0] == FULL


def decode(data: bytes, previous: RequestPrint | None = None) -> RequestPrint:
    """A stored print; an edit needs the ``previous`` one it was made from."""
    reader = _Reader(data)
    kind = reader.byte()
    if kind not in (FULL, EDIT) or kind == EDIT and previous is None:
        raise InvalidContent("a stored request print is not one this version reads"
                             if kind not in (FULL, EDIT) else
                             "an edited request print needs the one it edits")
    cached = reader.varint()
    if kind == FULL:
        return RequestPrint(parts=tuple(reader.entry() for _ in range(reader.varint())),
                            cached=cached)
    assert previous is not None
    parts: list[PartPrint] = []
    for _ in range(reader.varint()):
        head = reader.varint()
        if head & 1:
            parts += [reader.entry() for _ in range(head >> 1)]
        else:
            start = reader.varint()
            parts += previous.parts[start:start + (head >> 1)]
    return RequestPrint(parts=tuple(parts), cached=cached)


def decode_run(stored: Sequence[bytes]) -> list[RequestPrint]:
    """A run's stored prints, in call order, read back: each edit from the one before."""
    prints: list[RequestPrint] = []
    for data in stored:
        prints.append(decode(data, None if is_whole(data) else prints[-1] if prints else None))
    return prints
