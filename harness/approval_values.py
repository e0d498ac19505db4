"""The values of an approval: a tool call awaiting a human, a paused batch, a human's decision,
and what a decision does to its call (run it, or answer it without running).

Frozen values only; how they pass from pause to close is :mod:`harness.approvals`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from harness.messages import ImageBlock

Decision = Literal["approve", "edit", "reject", "respond"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)


@dataclass(frozen=True, kw_only=True)
class Result:
    """A finished call's result, as its tool_result block will carry it."""

    content: str
    is_error: bool = False
    images: tuple[ImageBlock, ...] = ()


@dataclass(frozen=True, kw_only=True)
class AwaitingApproval:
    """A tool call's outcome when a human must decide first: there is no result yet."""

    allowed_decisions: tuple[Decision, ...]


@dataclass(frozen=True, kw_only=True)
class PendingCall:
    """A tool call waiting for a human decision (the API's ``pending_approvals`` item)."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    allowed_decisions: tuple[Decision, ...]


@dataclass(frozen=True, kw_only=True)
class ApprovalDecision:
    type: Decision
    input: dict[str, Any] | None = None  # edit: the new arguments
    message: str | None = None  # reject: why; respond: the text that becomes the result


@dataclass(frozen=True, kw_only=True)
class PendingBatch:
    """A paused tool batch: what already ran, what waits, the decisions recorded so far."""

    done: Mapping[str, Result] = field(default_factory=dict)
    pending: tuple[PendingCall, ...] = ()
    decisions: Mapping[str, ApprovalDecision] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        return all(p.tool_use_id in self.decisions for p in self.pending)


@dataclass(frozen=True, kw_only=True)
class RunCall:
    """The decision runs the call: with the model's arguments, or the human's (``input``)."""

    input: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The decision answers the call without running it."""

    content: str
    is_error: bool
