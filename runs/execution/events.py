"""Run events: appended by callers that hold the run's row lock (which orders ``seq`` per run),
and read back with their messages' content (:func:`with_message_content`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import Subquery

from runs.live import relay
from runs.models import Message, Run, RunEvent

EVENT_STATUS = "run.status"
EVENT_MESSAGE = "message.created"
# A lease expired under a worker and another took the run (the claim of another worker, or the
# reconciler, which fences the holder out and hands the run to the queue).
EVENT_LEASE_TAKEN_OVER = "run.lease_taken_over"
TAKEN_BY_CLAIM, TAKEN_BY_RECONCILER = "claim", "reconciler"
# The harness names the events it emits itself: tool.result, todos.updated, approval.requested;
# the tool_results.* events are harness.client_calls's, written by the server
# (runs.intake.client_results).


def append_events(run: Run, events: Iterable[tuple[str, dict[str, Any]]]) -> list[RunEvent]:
    """Insert events for ``run``, which the caller has locked and saves (``event_seq`` moves);
    its followers are told once they are committed."""
    rows = []
    for event_type, data in events:
        run.event_seq += 1
        rows.append(RunEvent(run=run, seq=run.event_seq, type=event_type, data=data))
    created = RunEvent.objects.bulk_create(rows)
    run_id, turn, seq = run.pk, run.turn, run.event_seq
    transaction.on_commit(lambda: relay.events_added(run_id, turn=turn, seq=seq))
    return created


def timestamp(at: datetime | None) -> str | None:
    """A time as the API writes it, in an event's data as in a run's JSON (ISO 8601, UTC, as
    DRF writes a date-time field)."""
    if at is None:
        return None
    text = at.astimezone(UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def status_event(run: Run) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"status": run.status, "turn": run.turn}
    if run.error:
        data["error"] = run.error
    return EVENT_STATUS, data


def takeover_event(run: Run, *, holder: str, held_epoch: int, held_until: datetime | None,
                   by: str) -> tuple[str, dict[str, Any]]:
    """``run`` (its new epoch and owner set) taken from ``holder``, whose lease under
    ``held_epoch`` expired at ``held_until``; ``by`` the claim or the reconciler (which leaves
    no owner: the next claim takes the run)."""
    return EVENT_LEASE_TAKEN_OVER, {
        "from_worker": holder, "from_epoch": held_epoch, "to_worker": run.lease_owner,
        "epoch": run.epoch, "lease_expired_at": timestamp(held_until), "by": by}


def with_message_content(events: list[RunEvent]) -> list[RunEvent]:
    """``events`` with the id and content of each ``message.created`` event's message in its
    data (unsaved), as the messages route answers them: read now, in one query for the whole
    page (the events are one run's), because a message is stored once, in ``messages`` (its
    event keeps its seq and role, which with the run's session name it), and read fresh, so an
    edit of the message shows in its event too."""
    seqs = [event.data["seq"] for event in events if event.type == EVENT_MESSAGE]
    if not seqs:
        return events
    assert len({event.run_id for event in events}) == 1, "one run's events"
    session = Run.objects.filter(pk=events[0].run_id).values("session_id")
    found = {seq: (str(id_), content) for seq, id_, content in Message.objects.filter(
        session_id=Subquery(session), seq__in=seqs).values_list("seq", "id", "content")}
    for event in events:
        if event.type == EVENT_MESSAGE:
            # An event stored before its id was left out still has it: the message's is the same.
            id_, content = found.get(event.data["seq"], (event.data.get("id"), None))
            event.data = {**event.data, "id": id_, "content": content}
    return events
