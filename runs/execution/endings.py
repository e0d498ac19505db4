"""How a run ends: finished by its worker's last turn (the ORM path of
:mod:`runs.execution.store.pg_turn`), failed by its worker, or cancelled with no worker holding it,
a paused tool batch closed on the way (:func:`cancel_unheld`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.usage import quota_release
from hango_project import metrics
from harness import approvals, serde
from harness.approval_values import PendingBatch
from harness.mcp.values import idempotency_key
from harness.messages import ToolUseBlock
from harness.serde import content_from_json, content_to_json
from runs.execution import webhooked
from runs.execution.events import EVENT_MESSAGE, append_events, status_event
from runs.execution.fence import take_over
from runs.models import PARKED_RUN_STATUSES, Message, Run, RunStatus, ToolCallStart

INTERNAL_ERROR = "internal_error"  # a run's error code when its worker crashed: resumable


def finish_run(run: Run, status: str, error: dict[str, Any] | None = None, *,
               events: Sequence[tuple[str, dict[str, Any]]] = ()) -> None:
    """Mark a locked run finished, with ``events`` (its last turn's) and its status event after
    them, stored together so its followers are told once (the caller saves it).

    A park (for approval, or for the caller's client tool results) also ends the worker's
    hold, but the run is not finished: no ``finished_at``, and a cancel asked for meanwhile
    stays asked (the next claim honours it). The park's expiry is the caller's to set."""
    paused = status in PARKED_RUN_STATUSES
    quota_release(run_id=run.pk)  # a hold of a call that never made it into a turn
    run.status = status
    run.error = error
    run.finished_at = None if paused else timezone.now()
    run.lease_owner, run.lease_expires_at = "", None
    run.action_expires_at = None
    if not paused:
        run.cancel_requested = False
    append_events(run, [*events, status_event(run)])
    webhooked.deliveries_for(run)


def cancel_unheld(run: Run) -> None:
    """Cancel a locked run no live worker holds (the caller saves it): a paused batch's calls
    get their results, and a stalled holder is fenced out."""
    close_paused_batch(run)
    take_over(run)
    finish_run(run, RunStatus.CANCELLED)
    count_cancelled(run)


def count_cancelled(run: Run) -> None:
    """A run cancelled outside a worker (whose slices count their own ends) counts as ended
    once the caller's transaction commits."""
    created = run.created_at
    transaction.on_commit(lambda: metrics.run_ended(RunStatus.CANCELLED.value, created))


def close_paused_batch(run: Run) -> None:
    """Answer every call of a locked run's paused tool batch, as the run is cancelled with no
    worker holding it (a worker that sees the cancel closes the batch in its own turn).

    A run paused for approval (or approved but not yet resumed) has stored an assistant message
    whose calls have no results yet. This appends the message :func:`harness.approvals.close`
    makes for them, so the history stays valid for a resume or the session's next run, and takes
    the batch out of the checkpoint. A call a dead worker sent (journaled) and whose result it
    did not save is answered as not known. The caller saves ``run``."""
    data = run.state_json or {}
    if data.get("pending_batch") is None:
        return
    batch = serde.batch_from_json(data["pending_batch"])
    run.state_json = {k: v for k, v in data.items() if k != "pending_batch"}
    last = Message.objects.filter(session_id=run.session_id).order_by("-seq").first()
    if last is None or last.role != "assistant":  # nothing waits for a result
        return
    uses = [b for b in content_from_json(last.content) if isinstance(b, ToolUseBlock)]
    if not uses:
        return
    closing = approvals.close(uses, batch, sent=sent_calls(run, batch))
    message = Message.objects.create(session_id=run.session_id, seq=last.seq + 1, role="user",
                                     content=content_to_json(closing.content), run=run)
    append_events(run, [(EVENT_MESSAGE, {"seq": message.seq, "role": message.role})])


def sent_calls(run: Run, batch: PendingBatch) -> frozenset[str]:
    """The ids of the batch's calls its run's journal shows sent (MCP calls not marked
    idempotent, :class:`~runs.execution.stores.DbCallJournal`)."""
    ids = {p.tool_use_id for p in batch.pending}
    keys = {idempotency_key(str(run.pk), batch.turn, i): i for i in ids}
    return frozenset(keys[k] for k in ToolCallStart.objects.filter(
        run=run, key__in=keys).values_list("key", flat=True))
