"""Many followers of live runs on one web process as ``make serve`` runs it (gunicorn's gevent
workers): every stream gets each of its run's durable events once, in order, and the deltas of
each turn in their place; meanwhile the process holds no more PostgreSQL connections than its
pool, and one Redis connection carries all its streams' subscriptions."""

from __future__ import annotations

import time

import pytest
import redis
from django.db import connection

from tests.support import workers
from tests.support.runs import wait_for_run
from tests.support.servers import GunicornProcess
from tests.support.sse import Follower, assert_turn_order, durable, live_text, text_of

pytestmark = pytest.mark.slow

RUNS, PER_RUN, POOL = 8, 25, 3  # 200 streams open at once
APP = "hango-followers-test"  # the web process's connections by name (libpq reads PGAPPNAME)


def _web_backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                       "AND datname = current_database()", [APP])
        return int(cursor.fetchone()[0])


def _subscribed_connections(url: str) -> int:
    """Redis connections of the suite's database subscribed to a run's channel (an earlier
    in-process subscription that ended has none left; another suite, or the other test process
    of ``make test``, has a database of its own)."""
    client = redis.Redis.from_url(url)
    database = client.connection_pool.connection_kwargs.get("db", 0)
    return sum(1 for c in client.client_list()
               if int(c.get("sub", 0)) > 0 and int(c.get("db", 0)) == database)


def test_two_hundred_streams_share_one_web_process_s_pool_and_one_subscription(
        alice, make_agent, broker, start_worker, tmp_path):
    web = GunicornProcess(tmp_path, database_url=workers.test_database_url(),
                          worker_class="gevent",
                          env={"CELERY_BROKER_URL": broker, "HANGO_DATABASE_POOL_SIZE": str(POOL),
                               "PGAPPNAME": APP})
    try:
        agent = make_agent(alice, model="scripted:workload-2")
        runs = []
        for _ in range(RUNS):  # queued: no worker takes them until every stream is open
            session = alice.client.post("/v1/sessions", {"agent": agent["id"]},
                                        format="json").json()
            posted = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                       {"content": "Run the benchmark task."}, format="json")
            assert posted.status_code == 202, posted.content
            runs.append(posted.json()["run"]["id"])
        followers = [Follower(web.url, run_id, alice.key, timeout=120)
                     for run_id in runs for _ in range(PER_RUN)]
        for follower in followers:
            follower.start()
        for follower in followers:
            follower.wait_started()
        assert _subscribed_connections(broker) == 1
        start_worker(HANGO_SCRIPTED_DELAY_MS=300, HANGO_SCRIPTED_WORD_DELAY_MS=30)
        most = 0
        while any(f.is_alive() for f in followers):
            most = max(most, _web_backends())
            time.sleep(0.05)
        assert most <= POOL
        for run_id in runs:
            assert wait_for_run(run_id).status == "completed"
        answers = {}
        for run_id in runs:
            events = alice.client.get(f"/v1/runs/{run_id}/events").json()["results"]
            last = [e for e in events if e["type"] == "message.created"
                    and e["data"]["role"] == "assistant"][-1]
            answers[run_id] = text_of(last["data"]["content"])
        for follower, run_id in zip(followers, [r for r in runs for _ in range(PER_RUN)],
                                    strict=True):
            frames = follower.frames()
            stored = alice.client.get(f"/v1/runs/{run_id}/events").json()["results"]
            assert [f.data for f in durable(frames)] == stored  # each once, in order
            assert_turn_order(frames)
            assert live_text(frames) == {3: answers[run_id]}  # the answer, written live
    finally:
        web.stop()
