"""What one turn's commit takes and answers (:meth:`runs.execution.store.RunStore.commit_turn`): the
:class:`TurnWrite` the checkpointer builds, its :class:`NewMessage` rows, the
:class:`Committed` reply; and whether a message's stored content reads back as written, which
decides if its token count may be stored with it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from harness.messages import Role

Event = tuple[str, dict[str, Any]]


class NewMessage(NamedTuple):
    id: uuid.UUID
    seq: int
    role: Role
    content: list[dict[str, Any]]
    tokens: int | None = None  # its content's tokens as ``counter`` counts them
    counter: str = ""  # harness.tokens.base.Tokenizer.counts_key


def reads_back_as_written(content: list[dict[str, Any]]) -> bool:
    """The stored content reads back as these blocks, each tool call's arguments in the same
    order: PostgreSQL's jsonb orders an object's keys (shorter first, then by their bytes) and
    may print a float another way, and a call's count counts its arguments as JSON text."""
    return all(_jsonb_stable(block["input"]) for block in content
               if block.get("type") == "tool_use")


def _jsonb_stable(value: Any) -> bool:
    if isinstance(value, dict):
        keys = list(value)
        return (keys == sorted(keys, key=lambda k: (len(k.encode()), k.encode()))
                and all(_jsonb_stable(v) for v in value.values()))
    if isinstance(value, list):
        return all(_jsonb_stable(v) for v in value)
    return not isinstance(value, float)


@dataclass(frozen=True, kw_only=True)
class TurnWrite:
    run_id: uuid.UUID
    session_id: uuid.UUID
    epoch: int
    expected_turn: int  # the run's turn before this one; anything else means a duplicate
    turn: int
    state_json: dict[str, Any]
    lease_expires_at: datetime
    messages: list[NewMessage]
    events: list[Event]  # in order; message events included
    finish: tuple[str, dict[str, Any] | None] | None = None  # (status, error) on the last turn
    # A park for client tool results: when the calls still waiting are answered as failed.
    action_expires_at: datetime | None = None
    # The run's tenant, its quota and the start of its current period: report the period's
    # spend (the turn's model calls are recorded as they end: runs.execution.call_ledger).
    tenant_id: uuid.UUID | None = None
    agent_id: uuid.UUID | None = None  # a last turn's webhook deliveries name it
    quota: int | None = None
    period_start: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Committed:
    cancel_requested: bool
    quota_used: int | None = None  # the period's spend including this turn (quota set only)
