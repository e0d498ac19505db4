"""Eval runs on a real Celery worker (one per module, as ``make worker`` runs it): every case
an ordinary run through the broker, concurrently; a case moves on and is graded when its run
ends, by the worker; a cancelled eval run cancels its runs."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from django.db import close_old_connections

from evals.models import EvalRun
from hango_project.celery import app as celery_app
from runs.models import Run, Session
from tests.support.broker import broker_url, celery_broker
from tests.support.workers import WorkerProcess

pytestmark = pytest.mark.slow

CASES = [
    {"name": "echo", "turns": ['call echo {"text": "hi there"}'],
     "graders": [{"type": "tool_called", "tool": "echo", "args_pattern": "hi there"},
                 {"type": "contains", "value": "hi there"}]},
    {"name": "chat", "turns": ["hello"], "graders": [{"type": "no_tool_called"}]},
    {"name": "two turns", "turns": ['call echo {"text": "one"}', 'call echo {"text": "two"}'],
     "graders": [{"type": "contains", "value": "two"}, {"type": "max_turns", "value": 10}]},
    {"name": "should fail", "turns": ['call echo {"text": "x"}'],
     "graders": [{"type": "no_tool_called"}]},
    {"name": "files", "turns": ['call read_file {"path": "/notes.md"}'],
     "setup": {"files": {"/notes.md": "the secret word is teal"}},
     "graders": [{"type": "contains", "value": "teal"}]},
]


@pytest.fixture(scope="module")
def shared_worker(tmp_path_factory, django_db_setup) -> Iterator[WorkerProcess]:
    url = broker_url()
    redis.Redis.from_url(url).flushdb()
    worker = WorkerProcess("evals", url, tmp_path_factory.mktemp("evals-worker"),
                           env={"HANGO_SCRIPTED_DELAY_MS": "20"})
    yield worker
    worker.stop()


@pytest.fixture
def worker(shared_worker, transactional_db, hango_settings) -> Iterator[str]:
    url = broker_url()
    hango_settings(run_inline=False, broker_url=url)
    with celery_broker(celery_app, url):
        yield url


def wait_for_eval(eval_run_id: str, timeout: float = 120) -> EvalRun:
    """The eval run once it is no longer running, read from the database (not the API, whose
    reads would advance its cases themselves)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        close_old_connections()
        eval_run = EvalRun.objects.get(pk=eval_run_id)
        if eval_run.status != "running":
            return eval_run
        time.sleep(0.2)
    raise AssertionError(f"eval run {eval_run_id} still running after {timeout}s")


def suite_of(caller, cases, name="suite"):
    suite = caller.client.post("/v1/eval-suites", {"name": name}, format="json").json()
    for case in cases:
        response = caller.client.post(f"/v1/eval-suites/{suite['id']}/cases", case,
                                      format="json")
        assert response.status_code == 201, response.content
    return suite


def test_cases_run_concurrently_on_the_worker_and_are_graded_there(worker, shared_worker, alice,
                                                                   make_agent):
    agent = make_agent(alice, model="scripted:calls")
    suite = suite_of(alice, CASES)
    started = alice.client.post("/v1/eval-runs", {"suite": suite["id"], "agent": agent["id"]},
                                format="json")
    assert started.status_code == 201, started.content

    assert wait_for_eval(started.json()["id"]).status == "completed"
    body = alice.client.get(f"/v1/eval-runs/{started.json()['id']}").json()
    statuses = {r["case_name"]: r["status"] for r in body["results"]}
    assert statuses == {"echo": "passed", "chat": "passed", "two turns": "passed",
                        "should fail": "failed", "files": "passed"}, body["results"]
    assert body["summary"]["pass_rate"] == 0.8
    # Every case's runs went through the broker to the worker: it logged each run's task.
    runs = Run.objects.filter(session__kind="eval")
    assert runs.count() == 6 and {r.status for r in runs} == {"completed"}
    assert shared_worker.log().count("evals.advance_case") >= 6
    # The agent's own sessions list shows none of them; the files were the eval's own.
    assert alice.client.get("/v1/sessions").json()["results"] == []
    assert Session.objects.filter(kind="eval", files__path="/notes.md").count() == 1



def test_cancelling_an_eval_run_cancels_its_runs(worker, alice, make_agent):
    agent = make_agent(alice, model="scripted:workload-400")
    suite = suite_of(alice, [{"name": f"long {i}", "turns": ["go"]} for i in range(3)])
    started = alice.client.post("/v1/eval-runs", {"suite": suite["id"], "agent": agent["id"]},
                                format="json").json()
    deadline = time.monotonic() + 60
    while not Run.objects.filter(session__kind="eval", status="running").exists():
        assert time.monotonic() < deadline, "no eval run started"
        time.sleep(0.1)
    cancelled = alice.client.post(f"/v1/eval-runs/{started['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.content
    assert {r["status"] for r in cancelled.json()["results"]} == {"cancelled"}
    deadline = time.monotonic() + 60
    while Run.objects.filter(session__kind="eval", status__in=["queued", "running"]).exists():
        assert time.monotonic() < deadline, "the eval's runs were not cancelled"
        time.sleep(0.2)
    assert set(Run.objects.filter(session__kind="eval").values_list("status", flat=True)) == {
        "cancelled"}
    assert EvalRun.objects.get(pk=started["id"]).status == "cancelled"
