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
