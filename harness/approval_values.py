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
# An agent's interrupt_on as its config validated it (harness.agent.AgentConfig): tool name ->
# the decisions a human may take, each non-empty and without repeats. The middleware that acts
# on it takes it as it is; nothing checks it twice.
InterruptOn = Mapping[str, tuple[Decision, ...]]
# What answers a held call: a human's decision, or (``result``) the output the API's caller
# sent for a client tool's call (harness.client_calls); interrupt_on offers only DECISIONS.
Answering = Decision | Literal["result"]
# Why a call waits: the agent's interrupt_on holds it, or it was sent before its worker died
# and whether it ran is not known (a human decides whether to send it again), or it calls a
# client tool, which the API's caller runs and answers (harness.client_calls).
Hold = Literal["approval", "outcome_unknown", "client"]


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
    ``pending_approvals`` item), for the caller's result (``reason`` ``client``: the run's
    ``required_action``), or — with no ``allowed_decisions`` and another reason — not held at
    all, only not run yet (a batch checkpointed before its calls:
    :func:`harness.approvals.in_flight`)."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    allowed_decisions: tuple[Decision, ...]
    reason: Hold = "approval"

    @property
    def held(self) -> bool:
        """Whether a human must decide, or the caller answer, before the call finishes."""
        return bool(self.allowed_decisions) or self.client

    @property
    def client(self) -> bool:
        """Whether the API's caller runs the call and sends its result."""
        return self.reason == "client"


@dataclass(frozen=True, kw_only=True)
class ApprovalDecision:
    type: Answering
    input: dict[str, Any] | None = None  # edit: the new arguments
    # reject: why; respond: the text that becomes the result; result: the caller's text
    message: str | None = None
    is_error: bool = False  # result: the caller says the call failed
    images: tuple[ImageBlock, ...] = ()  # result: the caller's images


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
        """Whether every held call has its decision or result (a call not held needs none)."""
        return all(p.tool_use_id in self.decisions for p in self.held)

    @property
    def held(self) -> tuple[PendingCall, ...]:
        """The calls a human must decide on or the caller must answer."""
        return tuple(p for p in self.pending if p.held)

    @property
    def approval_held(self) -> tuple[PendingCall, ...]:
        """The held calls a human decides on (not the client tools' calls)."""
        return tuple(p for p in self.held if not p.client)

    @property
    def awaiting_approval(self) -> bool:
        """Whether a human's decision is still missing (else only results may be)."""
        return any(p.tool_use_id not in self.decisions for p in self.approval_held)

    @property
    def awaiting_results(self) -> tuple[PendingCall, ...]:
        """The client tools' calls whose result the caller has not sent yet."""
        return tuple(p for p in self.held if p.client and p.tool_use_id not in self.decisions)


@dataclass(frozen=True, kw_only=True)
class RunCall:
    """The decision runs the call: with the model's arguments, or the human's (``input``)."""

    input: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The decision answers the call without running it."""

    content: str
    is_error: bool
    images: tuple[ImageBlock, ...] = ()
