"""A run's event stream's read in one statement (PostgreSQL): the run's status and turn, and
its events after the cursor with their messages' content joined in, without the ORM (a thousand
streams read a few times a second between them). One snapshot answers both, so a stream that
reads the run ended has its last events too."""

from __future__ import annotations

import json
import uuid

from django.db import connection

from runs.execution.events import EVENT_MESSAGE
from runs.execution.prepared import Prepared
from runs.execution.store import StreamRead
from runs.models import Message, Run, RunEvent

# The run's row comes without events too (the LEFT JOIN), so a run with none after the cursor
# still answers its status.
_STREAM_READ = Prepared.of("hango_stream_read", f"""
SELECT r.status, r.turn, e.seq, e.type, e.data, e.created_at, m.id, m.content
FROM {Run._meta.db_table} r
LEFT JOIN {RunEvent._meta.db_table} e ON e.run_id = r.id AND e.seq > %(after)s
LEFT JOIN {Message._meta.db_table} m ON e.type = %(message)s AND m.session_id = r.session_id
    AND m.seq = (e.data ->> 'seq')::integer
WHERE r.id = %(run)s
ORDER BY e.seq LIMIT %(limit)s
""", (("run", "uuid"), ("after", "bigint"), ("limit", "integer"), ("message", "text")))


def read_stream_one_statement(run_id: uuid.UUID, after: int, limit: int) -> StreamRead:
    with connection.cursor() as cursor:
        _STREAM_READ.run(cursor, {"run": run_id, "after": after, "limit": limit,
                                  "message": EVENT_MESSAGE})
        rows = cursor.fetchall()
    if not rows:
        return StreamRead([], None, 0)
    events = []
    for _, _, seq, type_, data, created_at, message_id, content in rows:
        if seq is None:  # the run's row alone: no event after the cursor
            break
        data = json.loads(data)
        if type_ == EVENT_MESSAGE:  # as with_message_content adds them
            data = {**data, "id": str(message_id) if message_id else data.get("id"),
                    "content": None if content is None else json.loads(content)}
        events.append(RunEvent(run_id=run_id, seq=seq, type=type_, data=data,
                               created_at=created_at))
    return StreamRead(events, rows[0][0], rows[0][1])
