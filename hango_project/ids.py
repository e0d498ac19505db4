"""Ids of rows written often: time-ordered, so a new row's primary-key entry (and the entries of
indexes that begin with its id) land on an index's last page instead of a random one."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime


def time_ordered_uuid() -> uuid.UUID:
    """A version-7 UUID (RFC 9562; ``uuid.uuid7`` from Python 3.14): 48 bits of Unix
    milliseconds, then 74 random bits. Ids made later sort later, so inserts append to the end
    of an index rather than dirtying (and, after each checkpoint, logging whole) a page anywhere
    in it, and its pages split once full instead of half full."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10))
    value = value & ~(0xF << 76) | 0x7 << 76  # the version
    return uuid.UUID(int=value & ~(0x3 << 62) | 0x2 << 62)  # the RFC 4122 variant


def made_at(value: uuid.UUID) -> datetime | None:
    """When a :func:`time_ordered_uuid` was made (its milliseconds); None for an id of another
    version, which tells no time."""
    if value.version != 7:
        return None
    return datetime.fromtimestamp((value.int >> 80) / 1000, tz=UTC)
