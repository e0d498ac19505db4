"""Firing schedules: every worker's reconciler thread calls :func:`tick` every
``HANGO_SCHEDULE_TICK_SECONDS``.

*Once per fire time, however many workers tick.* A tick takes the due schedules' rows with
``FOR UPDATE SKIP LOCKED`` (a schedule another worker is firing is left to it), fires each and
moves its ``next_run_at`` past now in the same transaction; the unique (schedule, fire time) key
of :class:`~schedules.models.Fire` backs it. The run, its session and the fire row commit
together or not at all.

*No backlog.* Of the fire times that passed since ``next_run_at``, only the latest is fired, and
only when it is at most ``HANGO_SCHEDULE_GRACE_SECONDS`` old; the others are skipped and
counted in ``missed``. A schedule whose workers were down for a day fires once, on time, the
next time it is due — not 1,440 times in a row.

*Failures.* A fire refused (the session busy under ``reject``, the quota spent, the agent gone)
and a run that ended failed both count; ``pause_after_failures`` in a row pause the schedule,
with the reason. A completed run resets the count; a cancelled one leaves it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from hango_project.config import hango
from hango_project.errors import ApplicationError
from runs.intake import services as run_services
from runs.models import Run, RunStatus
from schedules import cron
from schedules.models import FINISHED, Fire, FireStatus, Schedule

BATCH = 50  # schedules one tick fires in one transaction; a full batch is followed by another
MOST_COUNTED = 100_000  # missed fire times counted one by one, at most (then counted as this)


def tick(now: datetime | None = None) -> str:
    """Fire what is due and settle what ended; what it did, for the worker's log."""
    now = now or timezone.now()
    fired = skipped = 0
    while True:
        batch_fired, batch_skipped, full = _fire_due(now)
        fired, skipped = fired + batch_fired, skipped + batch_skipped
        if not full:
            break
    settled = settle()
    said = [f"{n} {what}" for n, what in ((fired, "fired"), (skipped, "fire times skipped"),
                                          (settled, "runs settled")) if n]
    return ", ".join(said)


def _fire_due(now: datetime) -> tuple[int, int, bool]:
    fired = skipped = 0
    grace = timedelta(seconds=hango().schedule_grace_seconds)
    with transaction.atomic():
        due = list(Schedule.objects.select_for_update(skip_locked=True, of=("self",))
                   .select_related("member", "agent", "session")
                   .filter(active=True, next_run_at__lte=now)
                   .order_by("next_run_at")[:BATCH])
        for schedule in due:
            try:
                fire_at, earlier = _latest_due(schedule, now)
                schedule.next_run_at = cron.next_after(schedule.cron, schedule.timezone, now)
            except cron.BadSchedule as exc:  # the zone's data changed under it, say
                _pause(schedule, f"Its cron expression or time zone no longer works: {exc}")
            else:
                fired_now, skipped_now = _fire_or_skip(schedule, fire_at, earlier, now, grace)
                fired, skipped = fired + fired_now, skipped + skipped_now
            schedule.save(update_fields=_SAVED)
    return fired, skipped, len(due) == BATCH


# What a tick or a settlement changes on a schedule.
_SAVED = ["next_run_at", "missed", "last_fired_at", "active", "paused_reason",
          "consecutive_failures", "updated_at"]


def _fire_or_skip(schedule: Schedule, fire_at: datetime, earlier: int, now: datetime,
                  grace: timedelta) -> tuple[int, int]:
    """Fire the latest due time if it is within the grace; (fired, skipped)."""
    if now - fire_at > grace:
        schedule.missed += earlier + 1
        return 0, earlier + 1
    schedule.missed += earlier
    fire(schedule, fire_at=fire_at)
    return 1, earlier


def _latest_due(schedule: Schedule, now: datetime) -> tuple[datetime, int]:
    """The latest fire time at or before ``now`` (from ``next_run_at`` on), and how many came
    before it."""
    assert schedule.next_run_at is not None
    latest, earlier = schedule.next_run_at, 0
    while earlier < MOST_COUNTED:
        following = cron.next_after(schedule.cron, schedule.timezone, latest)
        if following > now:
            break
        latest, earlier = following, earlier + 1
    return latest, earlier


def fire(schedule: Schedule, *, fire_at: datetime, manual: bool = False) -> Fire:
    """In the caller's transaction (the schedule's row locked): start the schedule's run, or
    record why it could not start. Its session is the schedule's, or a new one of its agent.
    The fire's time is when it is made, not the tick's (later in a busy tick)."""
    now = timezone.now()
    schedule.last_fired_at = now
    try:
        with transaction.atomic():  # a refusal undoes the half-made session
            local = fire_at.astimezone(cron.zone(schedule.timezone))
            session = schedule.session or run_services.session_create(
                member=schedule.member, agent=schedule.agent,
                title=f"{schedule.name} · {local:%Y-%m-%d %H:%M}")
            _, run = run_services.message_post(session=session, content=schedule.content,
                                               multitask=schedule.multitask,
                                               actor=schedule.member)
            if schedule.webhook_id is not None:
                Run.objects.filter(pk=run.pk).update(webhook_id=schedule.webhook_id)
            return Fire.objects.create(schedule=schedule, fire_at=fire_at, fired_at=now,
                                       manual=manual, status=FireStatus.STARTED,
                                       session=session, run=run)
    except ApplicationError as exc:
        refused = Fire.objects.create(schedule=schedule, fire_at=fire_at, fired_at=now,
                                      manual=manual, status=FireStatus.REFUSED,
                                      session=schedule.session,
                                      error={"code": exc.code, "message": exc.message})
        _failed(schedule, f"its fire at {fire_at:%Y-%m-%d %H:%M} UTC was refused: "
                          f"{exc.message}")
        return refused


def settle(limit: int = 200) -> int:
    """The fires whose runs ended: their status, and their schedule's failures in a row."""
    with transaction.atomic():
        ended = list(Fire.objects.select_for_update(skip_locked=True, of=("self",))
                     .select_related("run")
                     .filter(status=FireStatus.STARTED, run__status__in=FINISHED)[:limit])
        for fire_row in ended:
            run: Any = fire_row.run
            fire_row.status, fire_row.error = run.status, run.error
            fire_row.save(update_fields=["status", "error"])
            schedule = Schedule.objects.select_for_update().get(pk=fire_row.schedule_id)
            if run.status == RunStatus.FAILED:
                reason = (run.error or {}).get("message", "no reason given")
                _failed(schedule, f"its run {run.pk} failed: {reason}")
            elif run.status == RunStatus.COMPLETED:
                schedule.consecutive_failures = 0
            schedule.save(update_fields=_SAVED)
    return len(ended)


def _failed(schedule: Schedule, what: str) -> None:
    schedule.consecutive_failures += 1
    limit = schedule.pause_after_failures
    if limit and schedule.consecutive_failures >= limit:
        _pause(schedule, f"Paused after {schedule.consecutive_failures} failures in a row; "
                         f"the last: {what}"[:500])


def _pause(schedule: Schedule, reason: str) -> None:
    schedule.active, schedule.next_run_at, schedule.paused_reason = False, None, reason
