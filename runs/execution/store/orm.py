"""The ORM's store (:class:`runs.execution.store.RunStore`): every path in one transaction of
Django's queries, for SQLite (one writer at a time: a transaction's reads and writes see the
same rows). PostgreSQL's store also claims through it when its one statement does not apply."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F, Max, Subquery
from django.utils import timezone

from accounts import prices
from accounts.models import QuotaHold, UsageRecord
from accounts.usage import quota_release, tenant_spend
from agents import versions
from agents.stores import guarded
from hango_project import metrics
from hango_project.rows import insert
from harness.messages import ModelUsage
from runs.execution.endings import cancel_unheld, finish_run
from runs.execution.events import (
    TAKEN_BY_CLAIM,
    append_events,
    status_event,
    takeover_event,
    with_message_content,
)
from runs.execution.fence import Claim
from runs.execution.preload import NOTHING_PRELOADED, Preloaded
from runs.execution.renewer import OrmStatements, Statements
from runs.execution.store import StreamRead
from runs.execution.turn_write import Committed, TurnWrite
from runs.models import (
    BUSY_RUN_STATUSES,
    Message,
    PendingMessage,
    Run,
    RunEvent,
    RunStatus,
    Session,
    ToolCallStart,
)

if TYPE_CHECKING:
    from runs.execution.store import Audit


class OrmStore:
    def start_run(self, session: Session, blocks: list[dict[str, Any]],
                  audit: Audit) -> tuple[Message, Run, bool | None]:
        # Stored with its first event's seq already, so no UPDATE of the run follows the event.
        run = Run.objects.create(session=session, agent_id=session.agent_id, event_seq=1,
                                 agent_version=versions.for_new_run(session))
        run.event_seq = 0
        last = session.messages.aggregate(m=Max("seq"))["m"] or 0
        message = Message.objects.create(session=session, seq=last + 1, role="user",
                                         content=blocks, run=run)
        append_events(run, [status_event(run)])
        Session.objects.filter(pk=session.pk).update(updated_at=timezone.now())
        insert(audit(run, message))
        return message, run, None

    def claim(self, run_id: uuid.UUID | str, owner: str, lease: timedelta) -> Run | None:
        with transaction.atomic():
            run = (Run.objects.select_for_update(of=("self",))
                   .select_related("agent", "session__tenant").filter(pk=run_id).first())
            if run is None or run.status not in BUSY_RUN_STATUSES:
                return None
            now = timezone.now()
            if run.lease_expires_at and run.lease_expires_at > now and run.lease_owner != owner:
                return None  # another worker is advancing it
            if run.cancel_requested:  # asked to stop while nobody was running it
                cancel_unheld(run)
                run.save()
                return None
            if run.session.tenant.token_quota is not None:
                quota_release(run_id=run.pk)  # held by an earlier claim's calls that did not land
            held = run.lease_owner, run.epoch, run.lease_expires_at
            taken = held[0] not in ("", owner) and held[2] is not None  # expired: checked above
            run.epoch += 1
            run.lease_owner, run.lease_expires_at = owner, now + lease
            events = []
            if run.status == RunStatus.QUEUED:
                run.status = RunStatus.RUNNING
                if run.started_at is None:
                    run.started_at = now
                    metrics.run_started(run.created_at, now)
                events.append(status_event(run))
            if taken:
                events.append(takeover_event(run, holder=held[0], held_epoch=held[1],
                                             held_until=held[2], by=TAKEN_BY_CLAIM))
                metrics.lease_taken_over(TAKEN_BY_CLAIM)
            if events:
                append_events(run, events)
            run.save()
            return run

    def commit_turn(self, write: TurnWrite) -> Committed | None:
        with transaction.atomic():
            run = Run.objects.select_for_update().filter(
                pk=write.run_id, epoch=write.epoch, turn=write.expected_turn,
                status=RunStatus.RUNNING).first()
            if run is None:
                return None
            Message.objects.bulk_create([
                Message(id=m.id, session_id=write.session_id, seq=m.seq, role=m.role,
                        content=m.content, content_tokens=m.tokens, tokens_counter=m.counter,
                        run=run) for m in write.messages])
            run.turn = write.turn
            run.state_json = write.state_json
            run.lease_expires_at = write.lease_expires_at
            if write.finish is None:
                append_events(run, write.events)
            else:  # the turn's events and the status event: one marker, as the one statement's
                finish_run(run, *write.finish, events=write.events)
                run.action_expires_at = write.action_expires_at
            run.save()
            used = None
            if write.quota is not None and write.tenant_id is not None:
                quota_release(run_id=run.pk)
                used = tenant_spend(write.tenant_id, write.period_start or timezone.now())
            return Committed(cancel_requested=run.cancel_requested, quota_used=used)

    def preload(self, tenant_id: uuid.UUID, agent_id: uuid.UUID, session_id: uuid.UUID, *,
                counts_key: str | None = None, session_state: bool = False) -> Preloaded:
        # One local file: each store's own read costs no round trip worth saving.
        return NOTHING_PRELOADED

    def waiting_after(self, run_id: uuid.UUID | str) -> uuid.UUID | None:
        session = Run.objects.filter(pk=run_id).values("session_id")[:1]
        return (PendingMessage.objects.filter(session_id=Subquery(session))
                .values_list("session_id", flat=True).first())

    def journal_call(self, claim: Claim, key: str, *, tool_use_id: str, tool: str) -> None:
        with guarded(claim.hold):
            ToolCallStart.objects.get_or_create(
                run_id=claim.run_id, key=key,
                defaults={"tool": tool[:200], "tool_use_id": tool_use_id[:200],
                          "epoch": claim.epoch})

    def poll(self, claim: Claim) -> tuple[bool, bool]:
        row = (Run.objects.filter(pk=claim.run_id)
               .values_list("cancel_requested", "epoch", "status").first())
        return (row is not None and row[0],
                row is not None and row[1:] == (claim.epoch, RunStatus.RUNNING))

    def read_stream(self, run_id: uuid.UUID, *, after: int, limit: int) -> StreamRead:
        # The run first, then its events, with no transaction (SQLite's would take the write
        # lock: the settings begin every transaction IMMEDIATE, and a read would queue behind
        # a turn's commit and hold up the next). Events only grow: those read second hold all
        # of the turns the run's row counted, and a run read as ended has its last events
        # committed with that status.
        run = Run.objects.filter(pk=run_id).values_list("status", "turn").first()
        events = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit]
        return StreamRead(with_message_content(list(events)), *(run or (None, 0)))

    def watch_statements(self) -> Statements:
        return OrmStatements()

    def record_call(self, run: Run, call: ModelUsage, key: str, printed: bytes | None,
                    holds: list[int]) -> None:
        usage = call.usage
        with transaction.atomic():
            UsageRecord.objects.create(
                tenant_id=run.session.tenant_id, session_id=run.session_id, run_id=run.pk,
                agent_id=run.agent_id, purpose=call.purpose, provider=call.provider,
                model=call.model, usage_source=call.source, input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens, dedupe_key=key, request_print=printed,
                **prices.columns_for(run.session.tenant_id, call.provider, call.model, usage))
            Run.objects.filter(pk=run.pk).update(
                input_tokens=F("input_tokens") + usage.input_tokens,
                output_tokens=F("output_tokens") + usage.output_tokens,
                cache_read_tokens=F("cache_read_tokens") + usage.cache_read_tokens,
                cache_write_tokens=F("cache_write_tokens") + usage.cache_write_tokens)
            if holds:
                QuotaHold.objects.filter(pk__in=holds).delete()
