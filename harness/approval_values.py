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
# Why a call waits for a human: the agent's interrupt_on holds it, or it was sent before its
# worker died and whether it ran is not known (a human decides whether to send it again).
Hold = Literal["approval", "outcome_unknown"]


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
    reason: Hold = "approval"


@dataclass(frozen=True, kw_only=True)
class PendingCall:
    """A tool call of a batch not finished yet: waiting for a human decision (the API's
    ``pending_approvals`` item), or — with no ``allowed_decisions`` — not held at all, only
    not run yet (a batch checkpointed before its calls: :func:`harness.approvals.in_flight`)."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    allowed_decisions: tuple[Decision, ...]
    reason: Hold = "approval"

    @property
    def held(self) -> bool:
        """Whether a human must decide before the call runs."""
        return bool(self.allowed_decisions)


@dataclass(frozen=True, kw_only=True)
class ApprovalDecision:
    type: Decision
    input: dict[str, Any] | None = None  # edit: the new arguments
    message: str | None = None  # reject: why; respond: the text that becomes the result


@dataclass(frozen=True, kw_only=True)
class PendingBatch:
    """A tool batch not finished: what already ran, what waits, the decisions recorded so
    far, and the turn whose model call made the calls (0: not known, a batch stored before it
    was kept)."""

    done: Mapping[str, Result] = field(default_factory=dict)
    pending: tuple[PendingCall, ...] = ()
    decisions: Mapping[str, ApprovalDecision] = field(default_factory=dict)
    turn: int = 0

    @property
    def decided(self) -> bool:
        """Whether every held call has its decision (a call not held needs none)."""
        return all(p.tool_use_id in self.decisions for p in self.held)

    @property
    def held(self) -> tuple[PendingCall, ...]:
        """The calls a human must decide on."""
        return tuple(p for p in self.pending if p.held)


@dataclass(frozen=True, kw_only=True)
class RunCall:
    """The decision runs the call: with the model's arguments, or the human's (``input``)."""

    input: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The decision answers the call without running it."""

    content: str
    is_error: bool
