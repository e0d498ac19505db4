"""What moves runs on outside a run's own slice, for :mod:`runs.execution.tasks` to enqueue: the
session's next waiting message after a run's end (:func:`start_queued`), a cancel a pause kept
(:func:`cancel_kept_by_a_pause`), and the reconciler's runs nobody is advancing
(:func:`reconcile_runs`). Nothing here enqueues."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from hango_project import metrics
from runs.execution.endings import cancel_unheld
from runs.execution.events import TAKEN_BY_RECONCILER, append_events, takeover_event
from runs.execution.queue import lock_session, start_next, start_stalled
from runs.execution.store import store
from runs.models import BUSY_RUN_STATUSES, PARKED_RUN_STATUSES, Run


def start_queued(run_id: str) -> uuid.UUID | None:
    """After a run's end committed: start the next message waiting in its session's queue, if
    any (:mod:`runs.execution.queue`); the run started, for the caller to enqueue. One indexed read
    when nothing waits. A crash before this is the reconciler's (:func:`reconcile_runs`)."""
    session_id = store().waiting_after(run_id)
    if session_id is None:
        return None
    with transaction.atomic():
        started = start_next(session_id)
    return None if started is None else started.run.pk


def cancel_kept_by_a_pause(run_id: str) -> uuid.UUID | None:
    """After a run paused (or a task found it paused): a cancel asked while its worker was in the
    turn that paused it — by the API, or by an interrupting message — is kept by the pause
    (the turn's commit honours cancels at boundaries only). Answer it now, as a cancel of a
    paused run is (:func:`runs.execution.endings.cancel_unheld`: its calls get their results), and
    start the session's next waiting message; the run started, for the caller to enqueue. One
    indexed read when no cancel waits."""
    session_id = (Run.objects.filter(pk=run_id, status__in=PARKED_RUN_STATUSES,
                                     cancel_requested=True)
                  .values_list("session_id", flat=True).first())
    if session_id is None:
        return None
    with transaction.atomic():
        lock_session(session_id)  # before the run's row, as every writer of the queue
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.status not in PARKED_RUN_STATUSES or not run.cancel_requested:
            return None
        cancel_unheld(run)
        run.save()
        started = start_next(session_id)
    return None if started is None else started.run.pk


# The most runs one reconciler pass takes: it holds their rows locked while it sends their
# tasks, and a worker claiming one of them waits for that (holding a pooled connection). A pass
# that took this many is followed by another at once (runs.execution.tasks.reconcile).
RECONCILE_BATCH = 200


def _untouched_before(now: datetime, since: datetime | None, grace: float) -> datetime:
    """When a queued run with no lease was last touched, at the latest, to count as stranded
    (``grace`` seconds before ``now``)."""
    untouched = now - timedelta(seconds=grace)
    return untouched if since is None else min(untouched, since)


def overdue_unleased(*, grace: float, since: datetime | None = None) -> frozenset[uuid.UUID]:
    """The active runs with no lease that have waited past the grace period (``grace``
    seconds): the only runs the broker's queue is read for (:func:`reconcile_runs`'
    ``waiting``)."""
    untouched = _untouched_before(timezone.now(), since, grace)
    return frozenset(Run.objects.filter(status__in=BUSY_RUN_STATUSES,
                                        lease_expires_at__isnull=True, updated_at__lt=untouched)
                     .values_list("pk", flat=True))


def reconcile_runs(*, grace: float, since: datetime | None = None,
                   waiting: Collection[uuid.UUID] = ()) -> list[uuid.UUID]:
    """The active runs nobody is advancing, for the caller to re-enqueue: an expired lease, or
    a queued run whose task never arrived (older than the grace period, ``grace`` seconds);
    and the runs started for sessions whose queue waited with no active run
    (:func:`runs.execution.queue.start_stalled`).
    At most :data:`RECONCILE_BATCH` of the first kind.

    Each one's lease is cleared, its epoch advanced (a stalled holder is fenced out) and its
    ``updated_at`` set to now, so the next pass leaves it alone for another grace period: a
    backlog of queued runs is not flooded with duplicate tasks every pass. (A duplicate would be
    harmless — a claim is exclusive — but it costs a broker message and a worker's time.) A run
    touched ``since`` (the pass's start: one of its earlier batches) is left alone, and so is a
    run with no lease whose task the broker's queue holds (``waiting``:
    :mod:`runs.execution.queued_tasks`); an expired lease is taken over whatever the queue holds."""
    now = timezone.now()
    untouched = _untouched_before(now, since, grace)
    with transaction.atomic():
        stale = (Run.objects.select_for_update(skip_locked=True)
                 .filter(status__in=BUSY_RUN_STATUSES)
                 .filter(Q(lease_expires_at__lt=now)
                         | (Q(lease_expires_at__isnull=True, updated_at__lt=untouched)
                            & ~Q(pk__in=list(waiting)))))
        found = list(stale.values_list("id", "lease_expires_at", "lease_owner",
                                       "epoch")[:RECONCILE_BATCH])
        ids = [run_id for run_id, *_ in found]
        # A stranded run's holder may only be stalled: fence it out (take_over's update).
        Run.objects.filter(pk__in=ids).update(lease_owner="", lease_expires_at=None,
                                              epoch=F("epoch") + 1, updated_at=now)
        if expired := {run_id: (lease, holder, epoch)
                       for run_id, lease, holder, epoch in found if lease is not None}:
            _taken_over(expired)
        ids += start_stalled()
    return ids


def _taken_over(held: dict[uuid.UUID, tuple[datetime, str, int]]) -> None:
    """In the reconciler's transaction, with its runs locked and just fenced out: each one's
    take-over event (``held``: a run's lease as it expired, its holder and epoch) and count.
    Counted as the pass takes them: a take-over rolled back (a send that failed) is taken, and
    counted, again on the next pass."""
    for run in Run.objects.filter(pk__in=list(held)):
        until, holder, epoch = held[run.pk]
        append_events(run, [takeover_event(run, holder=holder, held_epoch=epoch,
                                           held_until=until, by=TAKEN_BY_RECONCILER)])
        run.save(update_fields=["event_seq"])
    metrics.lease_taken_over(TAKEN_BY_RECONCILER, len(held))
