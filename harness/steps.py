"""What a turn of the loop (:mod:`harness.loop`) returns and what the loop's caller supplies.

A turn ends in a :data:`NextStep` — another turn (:class:`RunAgain`), the model's final answer
(:class:`FinalOutput`), a cancel or a pause (:class:`Interrupted`) or a failure
(:class:`Failed`) — inside the :class:`TurnResult` the caller's :class:`Checkpointer` persists
whole; the caller's :class:`Control` says whether the run was cancelled. The worker and the
subagent middleware read these values without the loop itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from harness.messages import Message, ModelUsage, StopReason
from harness.state import State

Event = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class RunAgain:
    """The model called tools: another turn follows."""


@dataclass(frozen=True)
class FinalOutput:
    stop_reason: StopReason


@dataclass(frozen=True)
class Interrupted:
    reason: Literal["cancelled", "paused"]


@dataclass(frozen=True)
class Failed:
    code: str
    message: str


NextStep = RunAgain | FinalOutput | Interrupted | Failed


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """What one turn added, for the checkpointer to persist whole."""

    turn: int  # the turn number this result completes (1-based)
    messages: tuple[Message, ...] = ()
    events: tuple[Event, ...] = ()
    usage: tuple[ModelUsage, ...] = ()
    next: NextStep = RunAgain()


class Control(Protocol):
    def cancel_requested(self) -> bool:
        """Checked at every turn boundary and before every tool call."""
        ...


StopT = TypeVar("StopT", covariant=True)


class Checkpointer(Protocol[StopT]):
    def checkpoint(self, state: State, result: TurnResult) -> StopT | None:
        """Persist a finished turn. Anything but None stops the loop at once, and the loop
        returns it: the checkpointer's own reason (fenced out, time slice used…)."""
        ...


class NeverCancel:
    def cancel_requested(self) -> bool:
        return False
