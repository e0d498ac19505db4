"""A session's stored messages as harness values, in seq order: read in one plain query and
decoded here, their stored token counts handed to the tokenizer, and the short ones decoded once
per process and shared by the context inspector's reads.

A run (:mod:`runs.execution.assembly`) and every inspection load the whole history through here."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import cast

from hango_project.sql import fetch, uuid_param
from harness.messages import Message as HMessage
from harness.messages import Role
from harness.serde import content_from_json
from harness.tokens.base import Tokenizer
from runs.execution.preload import Preloaded
from runs.models import Message


def session_history(session_id: uuid.UUID, *, reuse_decoded: bool = False,
                    tokenizer: Tokenizer | None = None) -> list[HMessage]:
    """The session's stored messages, in seq order, as harness values (each keeps its seq).

    One plain query, decoded here: a run and every inspection load the whole history, and the
    ORM's per-row conversion was a third of the time at 10,000 messages. ``reuse_decoded``
    takes each message from :func:`_shared_message` — for the context inspector's reads, which
    never run a tool, so no one mutates a shared tool call's input. Given a ``tokenizer``, each
    message's stored count under its :attr:`~harness.tokens.base.Tokenizer.counts_key` is handed to
    it (:meth:`~harness.tokens.base.Tokenizer.remember`): a long history is not counted again."""
    key = tokenizer.counts_key if tokenizer is not None else None  # None: no count matches
    rows = fetch(f"SELECT seq, role, content, CASE WHEN tokens_counter = %s THEN "
                 f"content_tokens END FROM {Message._meta.db_table} "
                 "WHERE session_id = %s ORDER BY seq", [key, uuid_param(session_id)])
    history = history_of([row[:3] for row in rows], reuse_decoded=reuse_decoded)
    if tokenizer is not None:
        remember_counts(tokenizer, history, [row[3] for row in rows])
    return history


def preloaded_history(reads: Preloaded, session_id: uuid.UUID, tokenizer: Tokenizer, *,
                      reuse_decoded: bool = False) -> list[HMessage]:
    """The session's history as :func:`session_history` gives it, from ``reads`` when the
    preload read it (its stored counts handed to ``tokenizer``), else read now."""
    if reads.history is None:
        return session_history(session_id, reuse_decoded=reuse_decoded, tokenizer=tokenizer)
    history = history_of([row[:3] for row in reads.history], reuse_decoded=reuse_decoded)
    remember_counts(tokenizer, history, [row[3] for row in reads.history])
    return history


def remember_counts(tokenizer: Tokenizer, history: Sequence[HMessage],
                    counts: Sequence[int | None]) -> None:
    """Hand ``tokenizer`` each message's stored count (None: not stored under its key)."""
    for message, tokens in zip(history, counts, strict=True):
        if tokens is not None:
            tokenizer.remember(message, tokens)


def history_of(rows: Iterable[tuple[int, str, str | list[object]]], *,
               reuse_decoded: bool = False) -> list[HMessage]:
    """Messages of (seq, role, content) rows, as :func:`session_history` decodes them."""
    decode = _shared_message if reuse_decoded else _message
    return [decode(seq, role, content) for seq, role, content in rows]


def _message(seq: int, role: str, content: str | list[object]) -> HMessage:
    # The message_role_valid constraint keeps the column to the harness's roles; the content
    # column is JSON text (Django reads jsonb as text and decodes it itself).
    return HMessage(role=cast(Role, role), seq=seq, content=content_from_json(
        json.loads(content) if isinstance(content, str) else content))


# Rows are decoded once per process and shared (a message is a pure function of its row) when
# their weight — an upper estimate of the memory the row's text and its decoded objects take —
# is at most SHARED_ROW_BYTES: the memo holds at most SHARED_MESSAGES × SHARED_ROW_BYTES = 64 MiB.
SHARED_MESSAGES = 16_384
SHARED_ROW_BYTES = 4_096
_CONTAINER_BYTES = 128  # a JSON object or array decoded: a dict or list, and a block around it
_MESSAGE_BYTES = 1_024  # the message, its content tuple and the memo's entry

_memo_message = lru_cache(maxsize=SHARED_MESSAGES)(_message)


def weight(content: str) -> int:
    """Bytes a shared row may hold at most: its text twice (the key, and the strings decoded
    from it, never wider per character), each container, and the message around them."""
    return (2 * sys.getsizeof(content) + _MESSAGE_BYTES
            + _CONTAINER_BYTES * (content.count("{") + content.count("[")))


def _shared_message(seq: int, role: str, content: str | list[object]) -> HMessage:
    """The message of a stored row, the same object each time the same row is read: an
    inspection of a long session skips decoding what it decoded last time, and the token
    counts' identity caches find it counted."""
    if (isinstance(content, str) and len(content) <= SHARED_ROW_BYTES // 2
            and weight(content) <= SHARED_ROW_BYTES):
        return _memo_message(seq, role, content)
    return _message(seq, role, content)


def drop_shared_messages() -> None:
    """Forget every shared message (a benchmark's first look at a session)."""
    _memo_message.cache_clear()
