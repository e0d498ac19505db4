"""What the run watch (:mod:`runs.execution.leases`) runs on: an operating-system thread that the
runs of its process cannot starve, and the statements it sends on a database connection of its own.

Why a thread of its own, and not a greenlet: in a gevent worker ``threading.Thread`` is a
greenlet of the same hub as the runs, scheduled only when every run ready before it has yielded.
With a 6 s lease under a load of 9–15 the watch came late — it renewed one run per transaction,
four round trips each, and every round trip put it behind every run with CPU to spend — and live
workers' runs were taken over, some four times over. A real thread is scheduled by the system
and gets the interpreter from a run's greenlet at the next switch interval (5 ms), whatever the
runs are doing; it waits for its own statements on a hub of its own (:mod:`psycogreen` asks the
current thread's hub) and hands what it found to the runs' hub (:func:`hand_to_runs`), where a
run's model call can be aborted safely.

Why its own connection: the process's pool (:mod:`hango_project.pgpool`) is shared by every run
and its locks are the runs' hub's. The watch's connection stays open, in autocommit, and never
waits behind a run for a slot.

Every held run's lease is renewed by one statement (:data:`RENEW`): a process holding a
thousand runs renews them in one round trip. A row another transaction has locked (its run's own
turn commit, say) is skipped rather than waited for, and renewed by a second statement that may
wait a little; a run the first statement finds no longer running under its epoch is lost.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol

import psycopg2
from django.db import DatabaseError, connection, transaction
from psycopg2.errors import LockNotAvailable

from runs.models import Run, RunStatus

log = logging.getLogger(__name__)

Key = tuple[Any, int]  # a held run: its id (a UUID) and the epoch its claim holds


def _original(module: str, name: str) -> Any:
    """``module.name`` as the system has it, before gevent patched it (if it did)."""
    try:
        from gevent import monkey
    except ImportError:
        return getattr(__import__(module), name)
    return monkey.get_original(module, name)


def _gevent_patched() -> bool:
    try:
        from gevent import monkey
    except ImportError:
        return False
    return bool(monkey.is_module_patched("threading"))


def start_thread(target: Callable[[], None]) -> None:
    """Run ``target`` on a new operating-system thread (a daemon), even in a process gevent has
    patched: there ``threading.Thread`` would make a greenlet of the runs' hub."""
    if _gevent_patched():
        _original("_thread", "start_new_thread")(target, ())
    else:
        threading.Thread(target=target, name="run-watch", daemon=True).start()


def os_lock() -> Any:
    """A lock of the system's, safe between the watch's thread and the runs' greenlets (held
    for a few dictionary operations: a greenlet that waits for it waits microseconds)."""
    return _original("_thread", "allocate_lock")()


class Wake:
    """A signal the watch's thread waits for with a timeout and any thread or greenlet sets."""

    def __init__(self) -> None:
        self._lock = os_lock()
        self._lock.acquire()  # held while nobody has set it

    def set(self) -> None:
        try:
            self._lock.release()
        except RuntimeError:  # set already
            pass

    def wait(self, timeout: float | None) -> None:
        """Until set or ``timeout`` seconds (None: for ever); clears it."""
        self._lock.acquire(timeout=-1 if timeout is None else timeout)


def hand_to_runs() -> Callable[[Callable[[], None]], None]:
    """How the watch's thread gets a function run where the runs run: on the caller's hub (the
    runs' greenlets call this), else at once (plain threads)."""
    if not _gevent_patched():
        return lambda fn: fn()
    import gevent

    loop = gevent.get_hub().loop

    def tell(fn: Callable[[], None]) -> None:
        loop.run_callback_threadsafe(fn)

    return tell


# Every held run's lease in one statement: the rows still running under their epoch, locked
# unless another transaction has them (those are skipped, not waited for), renewed. Answered:
# the runs not renewed, and whether each is still held (locked elsewhere: try again) or lost.
_RENEW = """
WITH w AS (SELECT * FROM unnest(%(ids)s::uuid[], %(epochs)s::bigint[]) AS w(id, epoch)),
held AS (
    SELECT r.id FROM {runs} r JOIN w ON r.id = w.id AND r.epoch = w.epoch
    WHERE r.status = %(running)s FOR NO KEY UPDATE OF r {wait}
), renewed AS (
    UPDATE {runs} r SET lease_expires_at = %(until)s FROM held WHERE r.id = held.id
    RETURNING r.id
)
SELECT w.id, w.epoch, EXISTS (SELECT 1 FROM {runs} r WHERE r.id = w.id AND r.epoch = w.epoch
                              AND r.status = %(running)s)
FROM w WHERE w.id NOT IN (SELECT id FROM renewed)
"""
RENEW = _RENEW.format(runs=Run._meta.db_table, wait="SKIP LOCKED")
_RENEW_WAITING = _RENEW.format(runs=Run._meta.db_table, wait="")

# The held runs a read has news of: a cancel asked for, a claim taken over (or the run no longer
# running), or no row at all (its cancel flag is then NULL).
_READ = f"""
SELECT w.id, w.epoch, r.cancel_requested, r.epoch = w.epoch AND r.status = %(running)s
FROM unnest(%(ids)s::uuid[], %(epochs)s::bigint[]) AS w(id, epoch)
LEFT JOIN {Run._meta.db_table} r ON r.id = w.id
WHERE r.id IS NULL OR r.cancel_requested OR r.epoch <> w.epoch OR r.status <> %(running)s
"""

News = tuple[bool, bool] | None  # (cancel asked for, still held), or None: the run has no row


class Statements(Protocol):
    """What the watch asks the database, on its thread's connection."""

    def renew(self, keys: list[Key], until: datetime, lock_wait: float) -> set[Key]:
        """Renew every run of ``keys`` still running under its epoch until ``until``: the
        runs lost (no longer so). A row locked elsewhere may be waited for ``lock_wait`` s."""
        ...

    def read(self, keys: list[Key]) -> dict[Key, News]:
        """The runs of ``keys`` with news (cancel asked, taken over, gone); the rest: none."""
        ...

    def close(self) -> None:
        """Give up the connection (after an error: the next statement opens another)."""
        ...


class PostgreSQLStatements:
    """The one-statement forms, on a psycopg2 connection of the thread's own (autocommit)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self._params = params
        self._raw: Any = None

    def _cursor(self) -> Any:
        if self._raw is None or self._raw.closed:
            self._raw = psycopg2.connect(**self._params)
            self._raw.autocommit = True
        return self._raw.cursor()

    def renew(self, keys: list[Key], until: datetime, lock_wait: float) -> set[Key]:
        with self._errors():
            lost, locked = self._renew(keys, until, RENEW)
            if not locked:
                return lost
            # A turn's commit holds those rows a moment: wait for them, a little. A row held
            # longer is renewed at the next beat (a third of the lease is left then).
            with self._cursor() as cursor:
                cursor.execute("SET lock_timeout = %s", [f"{max(1, round(lock_wait * 1000))}ms"])
            try:
                lost |= self._renew(locked, until, _RENEW_WAITING)[0]
            except LockNotAvailable:
                log.info("%d runs' rows stayed locked: their leases wait for the next beat",
                         len(locked))
            finally:
                with self._cursor() as cursor:
                    cursor.execute("RESET lock_timeout")
            return lost

    def _renew(self, keys: list[Key], until: datetime, sql: str) -> tuple[set[Key], list[Key]]:
        with self._cursor() as cursor:
            cursor.execute(sql, {**_arrays(keys), "until": until, "running": RunStatus.RUNNING})
            rows = cursor.fetchall()
        return ({_key(run_id, epoch) for run_id, epoch, held in rows if not held},
                [_key(run_id, epoch) for run_id, epoch, held in rows if held])

    def read(self, keys: list[Key]) -> dict[Key, News]:
        with self._errors(), self._cursor() as cursor:
            cursor.execute(_READ, {**_arrays(keys), "running": RunStatus.RUNNING})
            return {_key(run_id, epoch): None if asked is None else (asked, holds)
                    for run_id, epoch, asked, holds in cursor.fetchall()}

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """The driver's errors as Django's (what the watch catches); the connection closed."""
        try:
            yield
        except psycopg2.Error as exc:
            self.close()
            raise DatabaseError(str(exc)) from exc

    def close(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None and not raw.closed:
            try:
                raw.close()
            except psycopg2.Error:  # broken already
                pass


class OrmStatements:
    """The ORM's forms (SQLite: one writer at a time, so a transaction's read and update see the
    same rows), on Django's connection of the thread."""

    def renew(self, keys: list[Key], until: datetime, lock_wait: float) -> set[Key]:
        with transaction.atomic():
            wanted = set(keys)
            held = [(pk, epoch) for pk, epoch in
                    Run.objects.filter(pk__in=[pk for pk, _ in keys], status=RunStatus.RUNNING)
                    .values_list("pk", "epoch") if (pk, epoch) in wanted]
            Run.objects.filter(pk__in=[pk for pk, _ in held]).update(lease_expires_at=until)
        return wanted - set(held)

    def read(self, keys: list[Key]) -> dict[Key, News]:
        rows = Run.objects.filter(pk__in=[run_id for run_id, _ in keys]).values_list(
            "pk", "cancel_requested", "epoch", "status")
        now = {pk: (asked, epoch, status) for pk, asked, epoch, status in rows}
        return {(run_id, epoch): (None if run_id not in now else
                                  (now[run_id][0], now[run_id][1:] == (epoch, RunStatus.RUNNING)))
                for run_id, epoch in keys}

    def close(self) -> None:
        connection.close()


def _arrays(keys: Iterable[Key]) -> dict[str, str]:
    keys = list(keys)
    return {"ids": "{" + ",".join(str(run_id) for run_id, _ in keys) + "}",
            "epochs": "{" + ",".join(str(epoch) for _, epoch in keys) + "}"}


def _key(run_id: Any, epoch: int) -> Key:
    return (run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id)), int(epoch))
