"""Reads of sessions, messages and runs, scoped to the caller."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import OuterRef, Q, QuerySet, Subquery

from accounts.models import Member, UsagePurpose, UsageRecord
from accounts.scoping import get_visible, get_visible_row, visible_to
from accounts.usage import CLOCK_SKEW, cost_groups
from hango_project.errors import NotFound
from hango_project.rows import select_one
from hango_project.sql import uuid_param
from harness import fingerprint
from harness.errors import InvalidContent
from harness.messages import RequestPrint, Usage
from runs.execution.call_ledger import key_parts
from runs.execution.events import EVENT_MESSAGE, with_message_content
from runs.execution.store import StreamRead, store
from runs.execution.stores import OctetLength
from runs.models import (
    ACTIVE_RUN_STATUSES,
    ANSWER,
    Message,
    Run,
    RunEvent,
    RunStatus,
    Session,
    SessionFile,
)


def _sessions() -> QuerySet[Session]:
    active = Run.objects.filter(session=OuterRef("pk"), status__in=ACTIVE_RUN_STATUSES)
    return Session.objects.annotate(active_run_id=Subquery(active.values("id")[:1]))


def session_list(*, member: Member) -> QuerySet[Session]:
    return visible_to(_sessions(), member).filter(kind="chat")  # SessionKind: no eval's


def session_get(*, member: Member, session_id: uuid.UUID | str) -> Session:
    """The session with its agent and tenant, which most of its routes read."""
    return get_visible(_sessions().select_related("agent", "tenant"), member, session_id,
                       what="Session")


def session_to_post(*, member: Member, session_id: uuid.UUID | str) -> Session:
    """The session alone, for a post (its run is decided under the session's lock: the active
    run read here would be stale by then), in one plain statement."""
    return get_visible_row(Session, member, session_id, what="Session")


def message_list(*, session: Session) -> QuerySet[Message]:
    """The session's messages; the caller has already been allowed to see ``session``."""
    return Message.objects.filter(session=session)


def message_posted(message: Message) -> Message:
    """A message as posted, stored since if it has joined the history (else as it was)."""
    return Message.objects.filter(pk=message.pk).first() or message


def run_posted(run: Run) -> Run:
    """A run as it is now, read after its post committed (a worker may have moved it on), in
    one plain statement; as it was posted if it is gone already (its session deleted)."""
    return select_one(Run, "id = %s", [uuid_param(run.pk)]) or run


def run_list(*, session: Session) -> QuerySet[Run]:
    return Run.objects.filter(session=session)


def run_get(*, member: Member, run_id: uuid.UUID | str) -> Run:
    return get_visible(Run.objects.select_related("session"), member, run_id, what="Run")


def run_costs(runs: Sequence[Run]) -> dict[uuid.UUID, dict[str, Any]]:
    """What each run's calls cost (:func:`accounts.usage.cost_groups`), in two queries for any
    number of runs: their tenants, then their usage rows, read on the (tenant, created_at) index
    from the earliest run's creation on. None for runs no worker has started: only a worker's
    turn writes a run's usage, and its claim sets ``started_at`` first (a post's answer, a
    fifth of its web time when it was read)."""
    if not any(run.started_at is not None for run in runs):
        return {run.pk: {"by_currency": [], "unpriced_calls": 0} for run in runs}
    tenants = Session.objects.filter(pk__in={run.session_id for run in runs}).values("tenant_id")
    rows = UsageRecord.objects.filter(
        tenant_id__in=tenants, run_id__in=[run.pk for run in runs],
        created_at__gte=min(run.created_at for run in runs) - CLOCK_SKEW)
    groups = cost_groups(rows, "run_id")
    return {run.pk: groups.get((run.pk,), {"by_currency": [], "unpriced_calls": 0})
            for run in runs}


def run_answers(runs: Sequence[Run]) -> dict[uuid.UUID, dict[str, Any] | None]:
    """Each run's ``output``: for a completed run, ``{"text", "stop_reason"}``, the text blocks
    of its last assistant message joined (as :attr:`harness.messages.Message.text` joins them);
    None for any other. One query for any number of runs, on the (session, seq) index, and none
    when no run is completed (a run just posted costs nothing). A run completed before its
    answer was noted (``state_json`` without it) answers None."""
    noted = {run.pk: (run.session_id, answer) for run in runs
             if run.status == RunStatus.COMPLETED
             and isinstance(answer := (run.state_json or {}).get(ANSWER), dict)}
    wanted = Q()
    for session_id, answer in noted.values():
        wanted |= Q(session_id=session_id, seq=answer.get("seq"))
    contents: dict[tuple[uuid.UUID, Any], Any] = {} if not wanted else {
        (session_id, seq): content for session_id, seq, content in
        Message.objects.filter(wanted).values_list("session_id", "seq", "content")}
    answers: dict[uuid.UUID, dict[str, Any] | None] = {run.pk: None for run in runs}
    for run_id, (session_id, answer) in noted.items():
        content = contents.get((session_id, answer.get("seq"))) or []
        answers[run_id] = {"text": "".join(b.get("text", "") for b in content
                                           if isinstance(b, dict) and b.get("type") == "text"),
                           "stop_reason": answer.get("stop_reason")}
    return answers


def run_events_after(*, run_id: uuid.UUID, after: int, limit: int) -> list[RunEvent]:
    """The run's events after ``after`` in seq order, each ``message.created`` with its
    message's ``content`` added (:func:`with_message_content`); the caller may see the run."""
    events = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit]
    return with_call_cache(with_message_content(list(events)))


def stream_read(*, run_id: uuid.UUID, after: int, limit: int) -> StreamRead:
    """:func:`run_events_after` and the run's status and turn as of them, read by the run store
    (:meth:`runs.execution.store.RunStore.read_stream`), each assistant message's call cache
    figures added (:func:`with_call_cache`)."""
    read = store().read_stream(run_id, after=after, limit=limit)
    return read._replace(events=with_call_cache(read.events))


def file_list(*, session: Session) -> QuerySet[SessionFile]:
    """The session's files with their ``size`` (UTF-8 bytes), without loading their content."""
    return (SessionFile.objects.filter(session=session).annotate(size=OctetLength("content"))
            .defer("content"))


def file_get(*, session: Session, path: str) -> SessionFile:
    found = SessionFile.objects.filter(session=session, path=path).first()
    if found is None:
        raise NotFound("File not found.")
    return found


class SentCall(NamedTuple):
    """One of a run's own model calls: its turn, the usage the provider reported, and the print
    of the request it sent (None when it was sent before prints were kept)."""

    turn: int
    position: int  # among the turn's calls (summaries, subagents included)
    usage: Usage
    sent: RequestPrint | None

    @property
    def cache_read_ratio(self) -> float | None:
        """The share of the call's input the provider read from its cache: cache read tokens
        over all input tokens (uncached, read and written), as it reported them."""
        u = self.usage
        total = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        return None if not total else u.cache_read_tokens / total

    def cache_json(self) -> dict[str, Any]:
        """The call's cache figures as the API and the admin show them: what the provider read
        next to what the inspector predicted (the cached prefix's tokens when it was sent)."""
        ratio = self.cache_read_ratio
        return {"turn": self.turn, "input_tokens": self.usage.input_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
                "cache_read_ratio": None if ratio is None else round(ratio, 4),
                "predicted_cached_tokens": None if self.sent is None
                else self.sent.cached_tokens}


def run_calls(run_id: uuid.UUID, *, tenant_id: uuid.UUID | Subquery | None = None,
              since: datetime | Subquery | None = None) -> list[SentCall]:
    """The run's own model calls in order, each with its print read back (each stored as the
    edit of the one before, from a whole one at the start of each claim). The run's tenant and
    its creation (read in the same query when not given) bound the read to the tenant's rows
    from then: the ledger's only index."""
    run = Run.objects.filter(pk=run_id)
    tenant_id = tenant_id or Subquery(run.values("session__tenant_id"))
    since = since or Subquery(run.values("created_at"))
    rows = [(key_parts(key), usage, data) for key, *usage, data in
                  UsageRecord.objects.filter(
                      tenant_id=tenant_id, created_at__gte=since, run_id=run_id,
                      purpose=UsagePurpose.RUN).values_list(
                      "dedupe_key", "input_tokens", "output_tokens", "cache_read_tokens",
                      "cache_write_tokens", "request_print")]
    # A print is the edit of the one before it of the same claim: a call whose turn never
    # landed (its claim fenced out) comes before the redo of its turn, and is no one else's base.
    calls: list[SentCall] = []
    previous: dict[int, RequestPrint | None] = {}  # by epoch
    for (epoch, turn, index), (inp, out, read, write), data in sorted(
            rows, key=lambda row: (row[0][1], row[0][2], row[0][0])):  # turn, index, epoch
        sent = _read_print(None if data is None else bytes(data), previous.get(epoch))
        previous[epoch] = sent
        calls.append(SentCall(turn=turn, position=index, sent=sent, usage=Usage(
            input_tokens=inp, output_tokens=out, cache_read_tokens=read,
            cache_write_tokens=write)))
    return calls


def _read_print(data: bytes | None, previous: RequestPrint | None) -> RequestPrint | None:
    if data is None or not fingerprint.is_whole(data) and previous is None:
        return None
    try:
        return fingerprint.decode(data, None if fingerprint.is_whole(data) else previous)
    except InvalidContent:
        return None


def with_call_cache(events: list[RunEvent]) -> list[RunEvent]:
    """``events`` with each assistant ``message.created`` event of a turn given its model
    call's cache figures in ``call`` (:meth:`SentCall.cache_json`), read now from the run's
    usage rows: one query for the page, none when it has no such event."""
    turns = {event.data["turn"] for event in events
             if event.type == EVENT_MESSAGE and "turn" in event.data}
    if not turns:
        return events
    by_turn = {c.turn: c for c in run_calls(events[0].run_id)}
    for event in events:
        if event.type == EVENT_MESSAGE and (call := by_turn.get(event.data.get("turn"))):
            event.data = {**event.data, "call": call.cache_json()}
    return events
