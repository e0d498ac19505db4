"""hango_project.broker: a Redis channel keeps one client for kombu's synchronous commands (a
publish, the unacked-task bookkeeping) on the channel's own pool, and makes a new one with a
new pool, instead of a new client each time; a taker past the pool's size waits for a
connection instead of failing."""

from __future__ import annotations

import threading
import time
import uuid

from kombu import Connection

from hango_project.broker import Transport
from tests.support.broker import broker_url


def test_a_channel_keeps_one_client_on_its_pool():
    queue = f"test-broker-{uuid.uuid4().hex[:8]}"
    with Connection(broker_url(), transport=Transport) as conn:
        channel = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as again:
            assert first is again and first.connection_pool is channel.pool
        channel._put(queue, {"body": "x"})  # a publish, through the same client
        with channel.conn_or_acquire() as client:
            assert client is first and client.llen(queue) == 1
            client.delete(queue)
        channel._pool = None  # as kombu leaves a channel whose connection it dropped
        with channel.conn_or_acquire() as renewed:
            assert renewed is not first and renewed.connection_pool is channel.pool
        given = object()
        with channel.conn_or_acquire(given) as passed:  # a client the caller holds
            assert passed is given


def test_a_command_past_the_pool_s_size_waits_for_a_connection():
    """kombu's pool raised MaxConnectionsError at its eleventh taker (a gevent worker's runs
    acknowledging their tasks at once); here that taker waits for one given back."""
    with Connection(broker_url(), transport=Transport) as conn:
        channel = conn.default_channel
        pool = channel.pool
        held = [pool.get_connection() for _ in range(channel.max_connections)]
        answered: list[object] = []
        with channel.conn_or_acquire() as client:
            waiting = threading.Thread(target=lambda: answered.append(client.ping()))
            waiting.start()
            time.sleep(0.3)
            assert answered == []  # every connection lent: it waits, it does not fail
            pool.release(held.pop())
            waiting.join(5)
        assert answered == [True]
        for connection in held:
            pool.release(connection)
