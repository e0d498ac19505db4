"""The server-sent-event stream of a run's events."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from hango_project.config import hango
from runs.models import UNFINISHED_RUN_STATUSES, Run, RunEvent


class EventStreamRenderer(BaseRenderer):
    """Lets DRF negotiate ``text/event-stream``; only errors are rendered through it."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


def _frames(run_id: uuid.UUID, after: int) -> Iterator[str]:
    poll = hango().event_poll_seconds
    deadline = time.monotonic() + hango().event_stream_max_seconds
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        # Read the status first: a finished run's last events were committed with its status.
        status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
        events = list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:200])
        for event in events:
            payload = {"seq": event.seq, "type": event.type, "data": event.data,
                       "created_at": event.created_at.isoformat()}
            yield f"id: {event.seq}\nevent: {event.type}\ndata: {json.dumps(payload)}\n\n"
            after = event.seq
        if events:
            idle_since = time.monotonic()
            continue
        if status not in UNFINISHED_RUN_STATUSES:
            return
        if time.monotonic() - idle_since > 15:
            yield ": keep-alive\n\n"
            idle_since = time.monotonic()
        time.sleep(poll)


def event_stream_response(run_id: uuid.UUID, after: int) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_frames(run_id, after), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
