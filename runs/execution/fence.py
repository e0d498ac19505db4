"""A worker's hold on a run and the fence around it: the claim's epoch (:class:`Claim`), which
every write of the worker checks (its turn's commit, :mod:`runs.execution.store.pg_turn`; its tools'
writes,
:meth:`Claim.hold`), and the take-over that advances it (:func:`take_over`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from harness.errors import Superseded
from runs.models import Run, RunStatus


@dataclass(frozen=True)
class Claim:
    """A worker's hold on a run: the epoch it claimed the run under. It holds while the run is
    running under that epoch; whoever changes the run from outside the holder (a cancel, a
    resume, an approval, the reconciler, another claim) advances the epoch (:func:`take_over`),
    so every later write of this claim is refused."""

    run_id: uuid.UUID
    epoch: int

    def hold(self) -> None:
        """In the caller's transaction: lock the run's row while this claim still holds it (a
        concurrent take-over waits for the caller's commit), or raise
        :class:`~harness.errors.Superseded`. A tool's write to hango's stores runs under it."""
        held = (Run.objects.select_for_update(no_key=True)
                .filter(pk=self.run_id, epoch=self.epoch, status=RunStatus.RUNNING)
                .values_list("pk", flat=True))
        if not held:
            raise Superseded(f"run {self.run_id} is no longer held under epoch {self.epoch}")


def take_over(run: Run) -> None:
    """Fence out whoever holds a locked run (the caller saves it): its epoch advances and its
    lease is cleared, so a stalled holder's next commit, store write or event is refused."""
    run.epoch += 1
    run.lease_owner, run.lease_expires_at = "", None
