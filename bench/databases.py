"""The benchmarks' own PostgreSQL databases."""

from __future__ import annotations


def ensure_database(url: str) -> None:
    """Create the database ``url`` names (query string aside) unless it exists."""
    import psycopg2

    server, name = url.split("?")[0].rsplit("/", 1)
    admin = psycopg2.connect(f"{server}/postgres")
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute("select 1 from pg_database where datname = %s", (name,))
            if cur.fetchone() is None:
                cur.execute(f'create database "{name}"')
    finally:
        admin.close()


def backend_cpu(pid: int) -> float:
    """CPU seconds a PostgreSQL backend (a process of this machine) has run: its schedstat."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


# The floor of a durable checkpoint, which bench_commit.py and bench_turns.py measure hango
# against: the least a turn's commit can write and still resume after a crash — the state, and
# the turn's new messages in one row — as one prepared statement (its own transaction, one
# round trip, one WAL flush), on two tables of its own with a primary key each and nothing else.
FLOOR_TABLES = """
DROP TABLE IF EXISTS bench_floor_messages, bench_floor_state;
CREATE TABLE bench_floor_state (id integer PRIMARY KEY, state jsonb NOT NULL);
CREATE TABLE bench_floor_messages (id uuid PRIMARY KEY, content jsonb NOT NULL);
INSERT INTO bench_floor_state VALUES (1, '{}');
"""
FLOOR_DROP = "DROP TABLE bench_floor_messages, bench_floor_state"
FLOOR_SQL = """
WITH saved AS (UPDATE bench_floor_state SET state = %(state)s WHERE id = 1 RETURNING id)
INSERT INTO bench_floor_messages SELECT %(id)s, %(content)s FROM saved RETURNING true
"""
FLOOR_PARAMETERS = (("state", "jsonb"), ("id", "uuid"), ("content", "jsonb"))
