"""The floor of a durable checkpoint, which ``bench_commit.py`` and ``bench_turns.py`` measure
hango against: the least a turn's commit can write and still resume after a crash — the state,
and the turn's new messages in one row — as one prepared statement in its own transaction (one
round trip, one WAL flush), on two tables of its own (``bench_floor_*``, dropped by
:meth:`Floor.close`) with a primary key each and nothing else, through the bare driver."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from bench.databases import backend_cpu, ensure_database
from hango_project.ids import time_ordered_uuid
from harness.serde import message_to_json
from harness.state import state_to_json
from runs.execution.prepared import Prepared

TABLES = """
DROP TABLE IF EXISTS bench_floor_messages, bench_floor_state;
CREATE TABLE bench_floor_state (id integer PRIMARY KEY, state jsonb NOT NULL);
CREATE TABLE bench_floor_messages (id uuid PRIMARY KEY, content jsonb NOT NULL);
INSERT INTO bench_floor_state VALUES (1, '{}');
"""
STATEMENT = Prepared.of("bench_floor", """
WITH saved AS (UPDATE bench_floor_state SET state = %(state)s WHERE id = 1 RETURNING id)
INSERT INTO bench_floor_messages SELECT %(id)s, %(content)s FROM saved RETURNING true
""", (("state", "jsonb"), ("id", "uuid"), ("content", "jsonb")))


class Floor:
    """The floor on a psycopg2 connection of its own, in autocommit. :meth:`commit` writes one
    turn; as a loop's checkpointer (:meth:`checkpoint`) it commits every turn before the next
    model call."""

    def __init__(self, url: str) -> None:
        import psycopg2

        ensure_database(url)
        self.connection = psycopg2.connect(url)
        self.connection.autocommit = True
        with self.connection.cursor() as cursor:
            cursor.execute(TABLES)
            cursor.execute(STATEMENT.prepare)

    def commit(self, state: dict[str, Any], message_id: uuid.UUID,
               messages: list[dict[str, Any]]) -> tuple | None:
        """The turn's state and its messages (``message_to_json``'s shape); the statement's row,
        None if nothing was written."""
        with self.connection.cursor() as cursor:
            cursor.execute(STATEMENT.execute,
                           (json.dumps(state), message_id, json.dumps(messages)))
            return cursor.fetchone()

    def checkpoint(self, state, result) -> None:
        assert self.commit(state_to_json(state), time_ordered_uuid(),
                           [message_to_json(m) for m in result.messages]) is not None

    def backend_pid(self) -> int:
        return self.connection.info.backend_pid

    def cpu(self) -> float:
        """CPU seconds of this thread and of the floor's PostgreSQL backend."""
        return time.thread_time() + backend_cpu(self.backend_pid())

    def figures(self) -> dict:
        return {}

    def close(self) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("DROP TABLE bench_floor_messages, bench_floor_state")
        self.connection.close()
