"""The process's pool of PostgreSQL connections (hango_project/pgpool), on the test database:
bounded, waited for, reused as they were left (statements prepared, no transaction open),
a broken or old one replaced; and Django's connections lent by it."""

from __future__ import annotations

import threading
import time

import psycopg2
import pytest
from django.db import OperationalError, connection

from hango_project.pgpool import release
from hango_project.pgpool.pool import ConnectionPool, PoolTimeout
from runs.execution.prepared import Prepared

pytestmark = pytest.mark.django_db(transaction=True)


class Pools:
    """Pools of the test database's connections, each closed at the end of the test; the
    connections ``connect`` opened, in order."""

    def __init__(self) -> None:
        self.params = connection.get_connection_params()
        self.opened: list = []
        self.made: list[ConnectionPool] = []

    def connect(self):
        raw = psycopg2.connect(**self.params)
        raw.autocommit = True
        self.opened.append(raw)
        return raw

    def __call__(self, *, size: int, timeout: float = 1) -> ConnectionPool:
        self.made.append(ConnectionPool(size=size, timeout=timeout, max_age=None))
        return self.made[-1]


@pytest.fixture
def pools():
    made = Pools()
    yield made
    for pool in made.made:
        pool.close_idle()


def _wait_for(condition, what: str = "the pool's count") -> None:
    deadline = time.monotonic() + 60  # a guard against a hang only
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def _backend(raw) -> int:
    with raw.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_at_most_size_connections_open_and_a_taker_waits_for_one_given_back(pools):
    connect, opened = pools.connect, pools.opened
    pool = pools(size=2, timeout=5)
    first, _ = pool.take(connect)
    second, _ = pool.take(connect)
    got = []
    waiting = threading.Thread(target=lambda: got.append(pool.take(connect)))
    waiting.start()
    _wait_for(lambda: pool.stats().waits == 1)
    assert not got and pool.stats().waits == 1  # all lent: it waits
    pool.give(first)
    waiting.join(60)
    assert got == [(first, False)]  # the one given back, not a third
    assert len(opened) == 2 and pool.stats().peak == 2
    for raw in (second, first):
        pool.give(raw)


def test_a_taker_that_waits_too_long_is_told_which_settings_bound_it(pools):
    connect = pools.connect
    pool = pools(size=1, timeout=0.2)
    raw, _ = pool.take(connect)
    started = time.monotonic()
    with pytest.raises(PoolTimeout, match=r"stayed in use for 0.2 s.*HANGO_DATABASE_POOL_SIZE"):
        pool.take(connect)
    # It waited its timeout: a lower bound, which no load breaks. How much longer a loaded
    # machine takes to wake it is not the pool's behaviour, so it is not bounded here.
    assert time.monotonic() - started >= 0.2
    assert pool.stats().waits == 1
    pool.give(raw)
    assert pool.take(connect) == (raw, False)  # the slot was not lost
    pool.give(raw)


def test_a_queue_that_moves_waits_past_the_timeout_without_failing(pools):
    """The timeout bounds a pool that stopped moving, not a place in a moving queue: six
    takers wait in line for the one connection and each holds it a fifth of the timeout; the
    last is served after waiting longer than the timeout (a lower bound), and none fails."""
    connect = pools.connect
    pool = pools(size=1, timeout=0.5)
    raw, _ = pool.take(connect)
    waited: list[float] = []

    def take() -> None:
        began = time.monotonic()
        got, _ = pool.take(connect)  # a PoolTimeout ends the thread unserved
        waited.append(time.monotonic() - began)
        time.sleep(0.1)
        pool.give(got)

    takers = [threading.Thread(target=take) for _ in range(6)]
    for thread in takers:
        thread.start()
    _wait_for(lambda: pool.stats().waits == 6)  # all six in line
    pool.give(raw)
    for thread in takers:
        thread.join(60)
    assert len(waited) == 6 and pool.stats().waits == 6  # every one served, none twice
    assert max(waited) > 0.5  # the last waited past the timeout
    assert pool.stats().open == 1


def test_a_first_in_line_taker_gets_the_next_connection_given_back(pools):
    connect = pools.connect
    pool = pools(size=1, timeout=5)
    raw, _ = pool.take(connect)
    order: list[str] = []

    def take(name: str, *, first: bool) -> None:
        got, _ = pool.take(connect, first=first)
        order.append(name)
        pool.give(got)

    waiting = threading.Thread(target=take, args=("in line",), kwargs={"first": False})
    waiting.start()
    _wait_for(lambda: pool.stats().waits == 1)  # it waits first
    ahead = threading.Thread(target=take, args=("first in line",), kwargs={"first": True})
    ahead.start()
    _wait_for(lambda: pool.stats().waits == 2)  # counted once in line
    pool.give(raw)
    for thread in (waiting, ahead):
        thread.join(60)
    assert order == ["first in line", "in line"]
    assert pool.take(connect) == (raw, False) and pool.stats().open == 1  # no slot lost
    pool.give(raw)


def test_a_first_in_line_taker_that_waits_too_long_fails_and_loses_no_slot(pools):
    connect = pools.connect
    pool = pools(size=1, timeout=0.2)
    raw, _ = pool.take(connect)
    with pytest.raises(PoolTimeout):
        pool.take(connect, first=True)
    pool.give(raw)
    assert pool.take(connect, first=True) == (raw, False)
    pool.give(raw)


def test_a_connection_comes_back_without_the_transaction_its_taker_left_open(pools):
    connect = pools.connect
    pool = pools(size=1)
    raw, _ = pool.take(connect)
    raw.autocommit = False
    with raw.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert raw.info.transaction_status != psycopg2.extensions.TRANSACTION_STATUS_IDLE
    pool.give(raw)
    again, new = pool.take(connect)
    assert again is raw and not new
    assert raw.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_IDLE
    pool.give(raw)


def test_a_broken_or_old_connection_is_replaced_not_lent_again(pools):
    connect, opened = pools.connect, pools.opened
    pool = pools(size=1)
    raw, _ = pool.take(connect)
    raw.close()  # as a server restart or a dropped socket leaves it
    pool.give(raw)
    fresh, new = pool.take(connect)
    assert new and fresh is not raw and pool.stats().open == 1
    pool.give(fresh)
    pool.max_age = 0.1
    time.sleep(0.15)
    newer, new = pool.take(connect)
    assert new and newer is not fresh and fresh.closed  # too old: closed, not lent
    time.sleep(0.15)
    pool.give(newer)
    assert newer.closed and pool.stats().open == 0  # too old by the time it came back
    assert len(opened) == 3


def test_an_idle_connection_its_server_ended_is_replaced_without_a_failed_statement(pools):
    connect, opened = pools.connect, pools.opened
    pool = pools(size=2)
    raw, _ = pool.take(connect)
    victim = _backend(raw)
    pool.give(raw)
    with connection.cursor() as cursor:  # as a restart or an administrator ends it
        cursor.execute("SELECT pg_terminate_backend(%s)", [victim])
    time.sleep(0.2)
    fresh, new = pool.take(connect)
    assert new and fresh is not raw and raw.closed
    assert _backend(fresh) != victim  # a statement on it works
    pool.give(fresh)
    assert len(opened) == 2


def test_django_connections_are_lent_by_the_pool_and_keep_their_prepared_statements():
    statement = Prepared.of("hango_pool_probe", "SELECT %(n)s::integer + 1", (("n", "integer"),))
    with connection.cursor() as cursor:
        statement.run(cursor, {"n": 1})
        assert cursor.fetchone() == (2,)
        cursor.execute("SELECT pg_backend_pid()")
        mine = cursor.fetchone()[0]
    release()
    assert connection.connection is None
    seen = []

    def other_thread() -> None:  # a greenlet of a gevent worker is such a thread
        from django.db import connection as theirs

        try:
            with theirs.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid(), name FROM pg_prepared_statements")
                seen.extend(cursor.fetchall())
                statement.run(cursor, {"n": 41})
                seen.append(cursor.fetchone())
        finally:
            theirs.close()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert (mine, "hango_pool_probe") in seen  # the same server session, as it was left
    assert seen[-1] == (42,)


def test_release_keeps_a_connection_inside_a_transaction():
    from django.db import transaction

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        raw = connection.connection
        release()
        assert connection.connection is raw  # the transaction's, until it ends
    release()
    assert connection.connection is None


def test_a_statement_waiting_longer_than_the_pool_timeout_fails_as_an_outage(monkeypatch):
    # A pool of one connection (its own: the parameters differ), held by another thread.
    options = connection.settings_dict["OPTIONS"]
    for key, value in (("pool_size", 1), ("pool_timeout", 0.2),
                       ("application_name", "pool-timeout-test")):
        monkeypatch.setitem(options, key, value)
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    release()  # as a run before its model call: it takes one back at its next statement
    holding, done = threading.Event(), threading.Event()

    def holder() -> None:
        from django.db import connection as theirs

        with theirs.cursor() as cursor:
            cursor.execute("SELECT 1")
        holding.set()
        done.wait(60)  # held until the test ends: only the pool's timeout can end a wait
        theirs.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert holding.wait(60)
        for _ in ("taken back after a release", "with Django's connect"):
            with pytest.raises(OperationalError, match="stayed in use for 0.2 s"):
                with connection.cursor() as cursor:
                    cursor.execute("SELECT 1")
            connection.close()
    finally:
        done.set()
        thread.join()
        connection.close()


def test_a_connection_on_a_descriptor_above_1023_is_lent_again(pools):
    # A busy worker or web process has well over a thousand sockets open.
    import os
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        pool = pools(size=1)
        raw, _ = pool.take(pools.connect)
        assert raw.fileno() > 1023
        pool.give(raw)
        assert pool.take(pools.connect) == (raw, False)
        pool.give(raw)
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
