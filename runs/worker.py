"""The run worker service: database rows ⇄ harness values, leases, fenced per-turn commits.

A worker *claims* a run by taking its lease and incrementing its fencing ``epoch``. Each turn's
messages, events, usage, ``state_json`` and turn counter are committed in one transaction that
first checks, under the run's row lock, that the epoch is still the claimer's and the turn is the
one it expects — so two workers can never both advance a run, and a redelivered task for a turn
already committed changes nothing. A worker that vanishes leaves an expiring lease; the
reconciler re-enqueues such runs and the next claim continues from the last checkpoint.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from harness.errors import HarnessError
from harness.loop import Failed, FinalOutput, Interrupted, NextStep, RunAgain, TurnResult
from harness.serde import content_to_json
from harness.state import State, state_to_json
from runs import dispatch
from runs.events import EVENT_MESSAGE, append_events, status_event
from runs.execution import build_execution
from runs.models import Message, Run, RunStatus

log = logging.getLogger(__name__)

_UPDATED = ["turn", "state_json", "lease_expires_at", "event_seq", "input_tokens",
            "output_tokens", "cache_read_tokens", "cache_write_tokens", "updated_at"]
_FINISHED = ["status", "error", "finished_at", "lease_owner", "cancel_requested"]


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def _lease() -> timedelta:
    return timedelta(seconds=settings.HANGO["RUN_LEASE_SECONDS"])


def _finish(run: Run, status: str, error: dict | None = None) -> None:
    """Mark a locked run finished (the caller saves it)."""
    run.status = status
    run.error = error
    run.finished_at = timezone.now()
    run.lease_owner, run.lease_expires_at = "", None
    run.cancel_requested = False
    append_events(run, [status_event(run)])


def claim_run(run_id: str, owner: str) -> Run | None:
    """Take the run's lease under a new epoch, or None when there is nothing to do."""
    with transaction.atomic():
        run = (Run.objects.select_for_update(of=("self",))
               .select_related("agent", "session__tenant").filter(pk=run_id).first())
        if run is None or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return None
        now = timezone.now()
        if run.lease_expires_at and run.lease_expires_at > now and run.lease_owner != owner:
            return None  # another worker is advancing it
        if run.cancel_requested:  # asked to stop while nobody was running it
            _finish(run, RunStatus.CANCELLED)
            run.save()
            return None
        run.epoch += 1
        run.lease_owner, run.lease_expires_at = owner, now + _lease()
        if run.status == RunStatus.QUEUED:
            run.status = RunStatus.RUNNING
            run.started_at = run.started_at or now
            append_events(run, [status_event(run)])
        run.save()
        return run


def _with_fence(run: Run, apply: Callable[[Run], None]) -> bool:
    """Change the run only while ``run.epoch`` still holds the lease."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(pk=run.pk, epoch=run.epoch).first()
        if locked is None:
            return False
        apply(locked)
        locked.save()
        return True


def _fail(run: Run, code: str, message: str) -> None:
    _with_fence(run, lambda r: _finish(r, RunStatus.FAILED, {"code": code, "message": message}))


def _release(run: Run) -> None:
    run.lease_owner, run.lease_expires_at = "", None


class DbControl:
    """Cancellation as the worker sees it: the flag read at each commit, polled before tools."""

    def __init__(self, run_id: uuid.UUID) -> None:
        self.run_id = run_id
        self.flag = False
        self._checked = time.monotonic()

    def observed(self, flag: bool) -> None:
        self.flag, self._checked = flag, time.monotonic()

    def cancel_requested(self) -> bool:
        due = time.monotonic() - self._checked >= settings.HANGO["CANCEL_POLL_SECONDS"]
        if not self.flag and due:
            flag = Run.objects.filter(pk=self.run_id).values_list("cancel_requested", flat=True)
            self.observed(bool(flag.first()))
        return self.flag


class DbCheckpointer:
    """Commits each turn in one transaction fenced by the claim's epoch."""

    def __init__(self, run: Run, control: DbControl, next_seq: int, deadline: float) -> None:
        self.run = run
        self.control = control
        self.next_seq = next_seq
        self.deadline = deadline
        self.committed_turn = run.turn
        self.fenced = False

    def checkpoint(self, state: State, result: TurnResult) -> bool:
        with transaction.atomic():
            run = Run.objects.select_for_update().filter(
                pk=self.run.pk, epoch=self.run.epoch, turn=self.committed_turn).first()
            if run is None:  # another worker claimed the run: this turn must not land
                self.fenced = True
                return False
            rows = [Message(session_id=run.session_id, seq=self.next_seq + i, role=m.role,
                            content=content_to_json(m.content), run=run)
                    for i, m in enumerate(result.messages)]
            Message.objects.bulk_create(rows)
            events = [(EVENT_MESSAGE, {"id": str(r.id), "seq": r.seq, "role": r.role,
                                       "content": r.content}) for r in rows]
            # The assistant message, what its tools did, then the message holding their results.
            append_events(run, [*events[:1], *result.events, *events[1:]])
            run.turn = state.turn
            run.state_json = state_to_json(state)
            run.lease_expires_at = timezone.now() + _lease()
            for record in result.usage:
                run.input_tokens += record.usage.input_tokens
                run.output_tokens += record.usage.output_tokens
                run.cache_read_tokens += record.usage.cache_read_tokens
                run.cache_write_tokens += record.usage.cache_write_tokens
            fields = list(_UPDATED)
            terminal = _terminal_status(result.next)
            if terminal is not None:
                status, error = terminal
                _finish(run, status, error)
                fields += _FINISHED
            run.save(update_fields=fields)
        self.next_seq += len(rows)
        self.committed_turn = run.turn
        self.control.observed(run.cancel_requested)
        self.run = run
        return not (isinstance(result.next, RunAgain) and time.monotonic() > self.deadline)


def _terminal_status(step: NextStep) -> tuple[str, dict | None] | None:
    match step:
        case RunAgain():
            return None
        case FinalOutput():
            return RunStatus.COMPLETED, None
        case Interrupted(reason="cancelled"):
            return RunStatus.CANCELLED, None
        case Interrupted(reason="paused"):
            return RunStatus.AWAITING_APPROVAL, None
        case Failed(code=code, message=message):
            return RunStatus.FAILED, {"code": code, "message": message}
    raise AssertionError(step)


def execute_run(run_id: str, *, owner: str | None = None) -> str:
    """Advance the run for up to one time slice. Returns what happened (for logs and tests)."""
    run = claim_run(run_id, owner or worker_identity())
    if run is None:
        return "skipped"
    try:
        loop, state, next_seq = build_execution(run)
    except HarnessError as exc:
        _fail(run, exc.code, str(exc))
        return "failed"
    control = DbControl(run.pk)
    deadline = time.monotonic() + settings.HANGO["RUN_SLICE_SECONDS"]
    checkpointer = DbCheckpointer(run, control, next_seq, deadline)
    try:
        outcome = loop.run(state, control=control, checkpointer=checkpointer)
    except Exception:
        log.exception("run %s failed in the worker", run_id)
        _fail(checkpointer.run, "internal_error",
              "The worker hit an unexpected error; the run can be resumed.")
        return "failed"
    if outcome is not None:
        return checkpointer.run.status
    if checkpointer.fenced:
        return "fenced"
    # The slice is used up: give the lease back and let a fresh task continue the run.
    if _with_fence(checkpointer.run, _release):
        dispatch.enqueue_run(run_id)
    return "yielded"


def reconcile_runs() -> int:
    """Re-enqueue active runs nobody is advancing: an expired lease, or a queued run whose task
    never arrived. Enqueueing twice is harmless: a claim is exclusive."""
    now = timezone.now()
    grace = timedelta(seconds=settings.HANGO["RECONCILE_GRACE_SECONDS"])
    stale = Run.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=now - grace)
    )
    ids = list(stale.values_list("id", flat=True))
    for run_id in ids:
        dispatch.enqueue_run(run_id)
    if ids:
        log.info("reconciler re-enqueued %d runs", len(ids))
    return len(ids)
