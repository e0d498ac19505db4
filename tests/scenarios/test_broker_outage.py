"""The broker down or hung while the API queues runs: the run is stored, the request answers as
usual and soon, and the reconciler sends the run once the broker is back (real Redis, a real
worker process, PostgreSQL)."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.db import connection

from hango_project.celery import app as celery_app
from hango_project.config import hango
from runs.models import Run
from tests.support.broker import celery_broker
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow


def post_message(caller, session_id: str, text: str):
    return caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": text},
                              format="json")


def test_a_message_posted_while_the_broker_is_down_runs_once_it_is_back(
        alice, make_agent, private_broker, worker_processes, caplog):
    agent = make_agent(alice, model="scripted:demo")
    session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()

    started = time.monotonic()
    response = post_message(alice, session["id"], "count these four words")
    assert response.status_code == 202, response.content
    # A refused send fails at once and is retried once (CELERY_TASK_PUBLISH_RETRY_POLICY): the
    # bound is the settings' worst case with a margin, a guard against a send left retrying,
    # not a measure of how fast this machine is.
    assert time.monotonic() - started < 2 * hango().broker_timeout + 2
    run_id = response.json()["run"]["id"]
    run = Run.objects.get(pk=run_id)
    assert run.status == "queued" and run.lease_expires_at is None
    # The failed send is logged, naming the run and not the broker's password.
    assert f"run {run_id}" in caplog.text
    assert private_broker.password not in caplog.text
    # A client retrying is told the session is busy: the first answer was the real one.
    assert post_message(alice, session["id"], "count these four words").status_code == 409

    private_broker.start()
    worker_processes("w1", private_broker.url, HANGO_RECONCILE_SECONDS=1,
                     HANGO_RECONCILE_GRACE_SECONDS=1)
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error

    # The web process's connection to the broker recovers too: the next run is sent at once.
    response = post_message(alice, session["id"], "and these three")
    assert response.status_code == 202, response.content
    assert wait_for_run(response.json()["run"]["id"]).status == "completed"


def test_a_broker_that_never_answers_holds_a_request_only_briefly(alice, make_agent,
                                                                   hango_settings,
                                                                   transactional_db):
    agent = make_agent(alice, model="scripted:demo")
    session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()
    # A listening socket nobody accepts on: connecting works, no command is ever answered.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        hango_settings(broker_url=url, run_inline=False)
        answers = []

        def ask() -> None:
            try:
                answers.append(post_message(alice, session["id"], "hello"))
            finally:
                connection.close()  # this thread's own

        # A daemon thread: were the request to hang, the test fails instead of hanging too.
        request = threading.Thread(target=ask, daemon=True)
        with celery_broker(celery_app, url):
            bound = 2 * hango().broker_timeout + 2  # a send and its one retry, and a margin
            request.start()
            request.join(bound)
            assert answers, f"the request took more than {bound} s"
    response = answers[0]
    assert response.status_code == 202, response.content
    assert Run.objects.get(pk=response.json()["run"]["id"]).status == "queued"


def test_approve_and_resume_answer_as_usual_while_the_broker_is_down(
        alice, make_agent, inline_runs, redis_server, hango_settings):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ["approve"]}})
    paused = []
    for _ in range(2):  # inline, each run gets as far as the call needing approval
        session = alice.client.post("/v1/sessions", {"agent": agent["id"]},
                                    format="json").json()
        run = post_message(alice, session["id"], "count these four words").json()["run"]
        assert run["status"] == "awaiting_approval", run
        paused.append(run["id"])
    to_approve, to_resume = paused
    assert alice.client.post(f"/v1/runs/{to_resume}/cancel").json()["status"] == "cancelled"

    hango_settings(run_inline=False, broker_url=redis_server.url)  # and it is down
    with celery_broker(celery_app, redis_server.url):
        approved = alice.client.post(f"/v1/runs/{to_approve}/approve",
                                     {"decisions": [{"tool_use_id": "d5_wc", "type": "approve"}]},
                                     format="json")
        resumed = alice.client.post(f"/v1/runs/{to_resume}/resume")
    assert approved.status_code == 202, approved.content
    assert resumed.status_code == 202, resumed.content
    assert {r.status for r in Run.objects.filter(pk__in=paused)} == {"queued"}
