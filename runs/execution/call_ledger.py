"""Each model call of a run recorded the moment it ends (:class:`DbLedger`, the run's
:class:`harness.ledger.Ledger`): its usage row, the run's token counters and the release of the
call's quota hold, in one short transaction of its own, before the turn that made the call
commits. A provider charges for a call whether or not its turn lands, so a call whose turn
never does — its worker fenced out by a take-over, the run cancelled mid-call, the worker dead
between the answer and the commit — is still charged, once, against its run; the turn's commit
writes no usage (:mod:`runs.execution.store.pg_turn`).

A row's key names its call: ``<run>/<epoch>:<turn>:<index>``, the claim that made it, the turn,
and its place among that turn's calls. A turn redone by the next claim makes new calls, which
the provider charges again: rows of their own, under the new epoch. The loop tells each call
once, so a key is written once; the write is not retried (a database that fails it fails the
slice, as a turn's commit would).

Spend moves from held to used at once: the hold of the call (every hold the claim took since
its last record: a run's calls are made one after another) is deleted in the same transaction
as its row is written, so the quota's reads (:func:`accounts.usage.committed_spend`) see the
call's worst case or its usage, never both and never neither.

Each store writes it its way (:meth:`runs.execution.store.RunStore.record_call`): on PostgreSQL
one statement (data-modifying CTEs), prepared once per connection; the ORM's store the same in
one transaction, for SQLite. The statement's commit does not wait for its
WAL to reach the disk (``synchronous_commit`` off for that transaction alone): a worker that dies
after it loses nothing, the turn's commit after it (synchronous) flushes it with its own, and
only a crash of PostgreSQL itself in the fraction of a second between them could lose the row —
along with the turn, which the next claim redoes. Waiting for a flush per call doubled what a
turn cost a loaded machine (``docs/design/calls.md``, *Each call recorded as it ends*).
"""

from __future__ import annotations

import uuid

from harness import fingerprint
from harness.messages import ModelUsage, RequestPrint
from runs.execution.store import store
from runs.models import Run


def call_key(run_id: uuid.UUID, epoch: int, turn: int, index: int) -> str:
    """The usage row's key of a call (see the module's docstring)."""
    return f"{run_id}/{epoch}:{turn}:{index}"


def key_parts(key: str) -> tuple[int, int, int]:
    """(epoch, turn, index) of a run's call key; a key written before calls carried their
    claim's epoch (``<run>:<turn>:<index>``) reads as epoch 0."""
    head, turn, index = key.rsplit(":", 2)
    _, _, epoch = head.partition("/")
    return int(epoch or 0), int(turn), int(index)


class DbLedger:
    """The ledger of one claim of a run: each call's row as it ends."""

    def __init__(self, run: Run, *, holds: list[int] | None = None) -> None:
        self.run = run  # as claimed: its epoch names the calls of this claim
        # The quota holds this claim's calls took that no record has released yet (its
        # runs.execution.assembly.DbBudget's ``held``), or None: the tenant has no quota.
        self.holds = holds
        self._turn, self._index = 0, 0
        # The print of this claim's last run call: the next is stored as its edit (the first of
        # a claim is stored whole, so a claim's prints read back on their own).
        self._last_print: RequestPrint | None = None
        self._write = store().record_call

    def record(self, call: ModelUsage, *, turn: int) -> None:
        if turn != self._turn:
            self._turn, self._index = turn, 0
        key = call_key(self.run.pk, self.run.epoch, turn, self._index)
        self._index += 1
        printed = None
        if call.sent is not None:
            printed = fingerprint.encode(call.sent, self._last_print)
            self._last_print = call.sent
        holds = self.holds if self.holds is not None else []
        self._write(self.run, call, key, printed, holds)
        del holds[:]  # released with the row
