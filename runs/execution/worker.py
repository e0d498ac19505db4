"""The run worker service: a run's claim and one time slice of its loop (:func:`execute_run`).

A worker *claims* a run by taking its lease and incrementing its fencing ``epoch``. Each turn's
messages, events, usage, ``state_json`` and turn counter are committed in one transaction that
first checks, under the run's row lock, that the epoch is still the claimer's and the turn is the
one it expects (:mod:`runs.execution.checkpointer`, :mod:`runs.execution.store.pg_turn`) — so two
workers can never both advance a run, and a redelivered task for a turn already committed changes
nothing. A worker that vanishes leaves an expiring lease; the reconciler finds such runs
(:func:`runs.execution.handoff.reconcile_runs`; :mod:`runs.execution.tasks` re-enqueues them) and
the next claim continues from the last checkpoint. Nothing here enqueues: each entry point returns
what happened for the layer above to act on.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta
from enum import StrEnum
from typing import assert_never

from django.db import InterfaceError, OperationalError, transaction

from hango_project import metrics
from hango_project.errors import QuotaExceeded
from harness import telemetry
from harness.errors import HarnessError, Superseded
from harness.steps import Failed, FinalOutput, Interrupted, NextStep, RunAgain
from runs import tracing
from runs.execution import concurrency
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import (
    DbCheckpointer,
    DbControl,
    Fenced,
    Halt,
    QuotaSpent,
    SliceUsed,
)
from runs.execution.endings import INTERNAL_ERROR, finish_run
from runs.execution.fence import Claim
from runs.execution.leases import LeaseKeeper
from runs.execution.store import store
from runs.execution.timings import RunTimings, current
from runs.models import Run, RunStatus

log = logging.getLogger(__name__)



class Outcome(StrEnum):
    """What one :func:`execute_run` call did (the Celery task's result, in the worker's log)."""

    COMPLETED = "completed"  # the run finished: its final answer is stored
    FAILED = "failed"  # the run finished failed (its error says why)
    CANCELLED = "cancelled"
    PAUSED = "paused"  # waiting for a human's approval; no worker and no task hold it
    YIELDED = "yielded"  # the time slice was used up; the lease is given back, re-enqueue it
    FENCED = "fenced"  # another worker claimed the run meanwhile: this one stopped
    SKIPPED = "skipped"  # nothing to do: finished, or another worker holds the lease


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def claim_run(run_id: str, owner: str, *, lease: timedelta | None = None) -> Run | None:
    """Take the run's lease (for ``lease`` from now: the worker's, the settings' for a caller
    outside a worker) under a new epoch, or None when there is nothing to do
    (:meth:`runs.execution.store.RunStore.claim`)."""
    return store().claim(run_id, owner, current().lease if lease is None else lease)


def _with_fence(run: Run, apply: Callable[[Run], None]) -> bool:
    """Change the run only while ``run.epoch`` still holds the lease."""
    with transaction.atomic():
        locked = (Run.objects.select_for_update()
                  .filter(pk=run.pk, epoch=run.epoch, status=RunStatus.RUNNING).first())
        if locked is None:
            return False
        apply(locked)
        locked.save()
        return True


def _fail(run: Run, code: str, message: str) -> None:
    _with_fence(run, lambda r: finish_run(r, RunStatus.FAILED, {"code": code, "message": message}))


def _release(run: Run) -> None:
    run.lease_owner, run.lease_expires_at = "", None


def execute_run(run_id: str, *, owner: str | None = None,
                waiting: Callable[[], None] | None = None,
                timings: RunTimings | None = None,
                claimed: Callable[[Run], None] | None = None) -> Outcome:
    """Advance the run for up to one time slice and say what happened. It never enqueues: a
    :attr:`Outcome.YIELDED` run is for the caller (:mod:`runs.execution.tasks`) to hand on.

    The slice is a span of the run's trace (:func:`runs.tracing.slice_span`), and the run
    counts as in flight in this process while it runs. Its claim and build wait for one of the
    process's start slots (:mod:`runs.execution.concurrency`, calling ``waiting()`` now and then
    while they wait), given back once the loop is built. ``timings`` are the worker's
    (:func:`runs.execution.timings.run_timings`; the settings' when not given)."""
    owner = owner or worker_identity()
    timings = timings or current()
    with ExitStack() as start:
        start.enter_context(concurrency.starting(waiting, every=timings.reservation_beat))
        run = claim_run(run_id, owner, lease=timings.lease)
        if run is None:
            start.close()
            metrics.slices.add(1, {telemetry.ATTR_SLICE_OUTCOME: Outcome.SKIPPED.value})
            return Outcome.SKIPPED
        if claimed is not None:
            claimed(run)
        with metrics.in_flight(), tracing.slice_span(run, owner) as span:
            outcome = _advance(run, run_id, timings, started=start.close)
            span.set_attribute(telemetry.ATTR_SLICE_OUTCOME, outcome.value)
    metrics.slices.add(1, {telemetry.ATTR_SLICE_OUTCOME: outcome.value})
    if outcome in ENDED:
        metrics.run_ended(outcome.value, run.created_at)
    elif outcome is Outcome.FENCED:
        metrics.fenced.add(1)
    return outcome


def _advance(run: Run, run_id: str, timings: RunTimings, *,
             started: Callable[[], None]) -> Outcome:
    """:func:`execute_run` past the claim: the slice itself; ``started()`` once it is built."""
    try:
        loop, state, next_seq = build_execution(run)
    except HarnessError as exc:
        _fail(run, exc.code, str(exc))
        return Outcome.FAILED
    finally:
        started()
    control = DbControl(Claim(run.pk, run.epoch), cancel_poll=timings.cancel_poll)
    deadline = time.monotonic() + timings.slice
    checkpointer = DbCheckpointer(run, control, next_seq, deadline, lease=timings.lease,
                                  client_tool_timeout=loop.agent.config.client_tool_timeout)
    try:
        with LeaseKeeper(run, control, timings):
            end: NextStep | Halt = loop.run(state, control=control, checkpointer=checkpointer)
    except Superseded:  # a store refused a tool's write: the run is someone else's now
        log.info("run %s was taken over; worker %s stops", run_id, run.lease_owner)
        return Outcome.FENCED
    except (InterfaceError, OperationalError):
        # The database went away mid-run: nothing of the turn landed, and failing the run would
        # need the database too. The task's retry claims the run again under the same owner, or
        # the lease runs out and the reconciler hands it on; either continues from the last turn.
        log.warning("run %s lost its database; it continues from its last turn", run_id)
        raise
    except Exception:
        log.exception("run %s failed in the worker", run_id)
        _fail(run, INTERNAL_ERROR, "The worker hit an unexpected error; the run can be resumed.")
        return Outcome.FAILED
    finally:
        loop.close()  # the claim's MCP sessions, whatever the loop's end
    return _outcome(run, end)


def _outcome(run: Run, end: NextStep | Halt) -> Outcome:
    """What the loop's end means; a halt is acted on here (a spent quota fails the run, a used
    slice gives its lease back)."""
    match end:
        case FinalOutput():
            return Outcome.COMPLETED
        case Interrupted(reason="cancelled"):
            return Outcome.CANCELLED
        case Interrupted():  # paused
            return Outcome.PAUSED
        case Failed():
            return Outcome.FAILED
        case Fenced():
            return Outcome.FENCED
        case QuotaSpent(reason=reason):
            _fail(run, QuotaExceeded.code, reason)
            return Outcome.FAILED
        case SliceUsed():
            # Give the lease back; a fresh task continues the run.
            return Outcome.YIELDED if _with_fence(run, _release) else Outcome.FENCED
        case RunAgain():  # the loop continues on it and never returns it
            raise AssertionError(end)
        case unreachable:
            assert_never(unreachable)


# The outcomes after which the run may have ended (SKIPPED: a claim may find a cancel asked for
# and end the run, or a redelivered task find it ended by a worker that died before the next
# one started); the session's next waiting message then starts
# (:func:`runs.execution.handoff.start_queued`).
MAY_HAVE_ENDED = frozenset({Outcome.COMPLETED, Outcome.FAILED, Outcome.CANCELLED,
                            Outcome.SKIPPED})
ENDED = frozenset({Outcome.COMPLETED, Outcome.FAILED, Outcome.CANCELLED})
