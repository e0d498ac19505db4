"""``GET /v1/runs/{id}?wait=``: hold the answer until the run ends or parks, or the wait is up.

The wait follows the run's live channel (:mod:`runs.live.relay`) as its event stream does:
subscribed before the first read, it reads the run's status again on a commit's marker, and every
``HANGO_EVENT_LIVE_POLL_SECONDS`` should a marker be lost (every ``HANGO_EVENT_POLL_SECONDS``
with no live channel to follow). Deltas are skipped: only a commit can change the status. It
holds no database connection between its reads, so a gevent web process can keep many
callers waiting on its small pool.
"""

from __future__ import annotations

import json
import time
import uuid

from hango_project.config import hango
from hango_project.pgpool import release as release_connection
from runs.live import relay
from runs.models import MOVING_RUN_STATUSES, Run

MAX_WAIT_SECONDS = 60


def run_settled(run_id: uuid.UUID, seconds: float) -> None:
    """Return once the run is no longer pending, queued or running (completed, failed,
    cancelled, or parked: awaiting approval or requiring the caller's client tool results), or
    after ``seconds``; the caller reads the run then."""
    channel: relay.Subscription = (relay.follow(run_id)[0] if hango().stream_deltas
                                  else relay.Silent())
    deadline = time.monotonic() + seconds
    try:
        while _moving(run_id) and (now := time.monotonic()) < deadline:
            knobs = hango()
            every = (knobs.event_live_poll_seconds if channel.live
                     else knobs.event_poll_seconds)
            _next_marker(channel, min(now + every, deadline))
    finally:
        channel.close()


def _moving(run_id: uuid.UUID) -> bool:
    try:
        status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    finally:
        release_connection()
    return status in MOVING_RUN_STATUSES


def _next_marker(channel: relay.Subscription, until: float) -> None:
    """Wait for a commit's marker on the run's channel, or until ``until``."""
    while (left := until - time.monotonic()) > 0:
        payload = channel.get(left)
        if payload is None:
            return
        try:
            if isinstance(json.loads(payload).get("seq"), int):
                return
        except (ValueError, AttributeError):
            continue
