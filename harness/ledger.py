"""Each model call's usage, told the moment it is known: the :class:`Ledger` a run's state may
carry.

A provider charges for a call once its answer is in (or what it streamed before an abort),
whether or not the turn that made it ever lands: its worker may be fenced out by a take-over,
cancelled mid-call, or die between the answer and the turn's commit. So every call is told to
the state's ledger as it ends (:meth:`harness.state.State.record_usage`, the one path of the
run's own calls, the summarizer's and the subagents'), with the number of the turn it belongs
to; the server's ledger writes its row then (:mod:`runs.execution.call_ledger`). A state without a
ledger (a harness test, the inspector) only collects its calls for the turn's result.
"""

from __future__ import annotations

from typing import Protocol

from harness.messages import ModelUsage


class Ledger(Protocol):
    def record(self, call: ModelUsage, *, turn: int) -> None:
        """Record ``call``, made during turn ``turn`` (1-based), once: the loop tells each
        call exactly once, and a redo of the turn is a new call, told again."""
        ...
