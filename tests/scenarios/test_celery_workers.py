"""Run execution on Redis and real Celery worker processes, against PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from runs.execution.assembly import build_execution
from runs.execution.tasks import execute_run
from runs.models import Message, Run, RunEvent
from tests.support.history import assert_valid_history
from tests.support.runs import wait_for_run
from tests.support.workers import ROOT

pytestmark = pytest.mark.slow

WORKLOAD_TURNS = 12


def start_run(caller, make_agent, model: str, text: str = "Run the benchmark task."):
    agent = make_agent(caller, model=model)
    session = caller.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": text}, format="json")
    assert response.status_code == 202, response.content
    return session["id"], response.json()["run"]["id"]


def test_multi_turn_run_completes_and_state_json_restores_the_plan(alice, make_agent,
                                                                   start_worker):
    start_worker()
    session_id, run_id = start_run(alice, make_agent, "scripted:demo", "count these four words")
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert run.turn == 5
    messages = assert_valid_history(session_id)
    assert messages[-1].content[0]["text"].startswith('You said: "count these four words"')
    assert run.state_json["todos"] == [
        {"content": "Read the request", "status": "completed"},
        {"content": "Count its words", "status": "completed"},
        {"content": "Write the answer", "status": "completed"},
    ]
    # Reloading the run restores typed todos (what a resumed run starts from).
    _, state, next_seq = build_execution(run)
    assert [(t.content, t.status) for t in state.todos] == [
        ("Read the request", "completed"), ("Count its words", "completed"),
        ("Write the answer", "completed")]
    assert next_seq == len(messages) + 1
    api = alice.client.get(f"/v1/runs/{run_id}").json()
    assert api["status"] == "completed" and api["todos"] == run.state_json["todos"]
    assert api["usage"]["input_tokens"] > 0


def test_cancel_mid_run_then_resume_keeps_the_plan(alice, make_agent, start_worker):
    start_worker(HANGO_SCRIPTED_DELAY_MS=150)
    session_id, run_id = start_run(alice, make_agent, f"scripted:workload-{WORKLOAD_TURNS}")
    wait_for_run(run_id, lambda r: r.turn >= 4)
    response = alice.client.post(f"/v1/runs/{run_id}/cancel")
    assert response.status_code == 202
    run = wait_for_run(run_id)
    assert run.status == "cancelled"
    plan = run.state_json["todos"]
    assert len(plan) == 3 and run.turn < WORKLOAD_TURNS + 1
    assert alice.client.get(f"/v1/runs/{run_id}").json()["todos"] == plan
    assert_valid_history(session_id)

    response = alice.client.post(f"/v1/runs/{run_id}/resume")
    assert response.status_code == 202
    assert response.json()["todos"] == plan  # resumed with its plan
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    messages = assert_valid_history(session_id)
    assert messages[-1].content[0]["text"] == f"All {WORKLOAD_TURNS} steps done."
    statuses = [e.data["status"] for e in RunEvent.objects.filter(run_id=run_id, type="run.status")
                .order_by("seq")]
    assert statuses[-3:] == ["cancelled", "queued", "completed"] or "running" in statuses


def test_kill_9_mid_run_then_a_new_worker_completes_it(alice, make_agent, start_worker):
    lease = {"HANGO_RUN_LEASE_SECONDS": 2, "HANGO_SCRIPTED_DELAY_MS": 150}
    first = start_worker("doomed", **lease)
    session_id, run_id = start_run(alice, make_agent, f"scripted:workload-{WORKLOAD_TURNS}")
    wait_for_run(run_id, lambda r: r.turn >= 3)
    first.kill()
    killed_at = Run.objects.get(pk=run_id)
    assert killed_at.status == "running"

    # A fresh worker's reconciler notices the expired lease, and the worker takes over.
    start_worker("rescuer", HANGO_RECONCILE_SECONDS=1,
                 HANGO_RECONCILE_GRACE_SECONDS=1, **lease)
    run = wait_for_run(run_id, timeout=90)
    assert run.status == "completed", run.error
    assert run.epoch >= 2
    messages = assert_valid_history(session_id)
    # 1 user message, then per turn an assistant message and its results, then the answer.
    assert len(messages) == 1 + 2 * WORKLOAD_TURNS + 1
    assert messages[-1].content[0]["text"] == f"All {WORKLOAD_TURNS} steps done."


def test_duplicate_task_delivery_is_a_no_op(alice, make_agent, start_worker):
    worker = start_worker()
    session_id, run_id = start_run(alice, make_agent, "scripted:demo")
    wait_for_run(run_id)
    messages = Message.objects.filter(session_id=session_id).count()
    events = RunEvent.objects.filter(run_id=run_id).count()
    execute_run.delay(run_id)
    execute_run.delay(run_id)
    worker.wait_for(lambda log: len(worker.task_results()) >= 3, what="three task results")
    assert worker.task_results() == ["completed", "skipped", "skipped"]
    assert Message.objects.filter(session_id=session_id).count() == messages
    assert RunEvent.objects.filter(run_id=run_id).count() == events


def test_two_workers_racing_for_one_run_never_both_commit(alice, make_agent, start_worker):
    one = start_worker("one", HANGO_SCRIPTED_DELAY_MS=50)
    two = start_worker("two", HANGO_SCRIPTED_DELAY_MS=50)
    session_id, run_id = start_run(alice, make_agent, f"scripted:workload-{WORKLOAD_TURNS}")
    for _ in range(5):  # the same run delivered again and again, to both workers
        execute_run.delay(run_id)
    run = wait_for_run(run_id)
    assert run.status == "completed"
    deadline = time.monotonic() + 30
    while len(one.task_results()) + len(two.task_results()) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    results = one.task_results() + two.task_results()
    assert sorted(results) == ["completed"] + ["skipped"] * 5, results
    messages = assert_valid_history(session_id)
    assert len(messages) == 1 + 2 * WORKLOAD_TURNS + 1
    assert run.turn == WORKLOAD_TURNS + 1


def test_the_context_stack_on_a_worker_compacts_and_keeps_memory(alice, make_agent,
                                                                 start_worker):
    """Summarization, memory and the file-backed filesystem through a real worker process."""
    from agents.models import Agent, MemoryFile
    from runs.models import Session

    start_worker()
    agent = make_agent(alice, model="scripted:demo", config={
        "summarization": {"trigger_tokens": 1_000, "keep_messages": 4}})
    MemoryFile.objects.create(agent=Agent.objects.get(pk=agent["id"]),
                              path="/memories/AGENTS.md", content="Answer in one sentence.")
    session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()
    task = " ".join(["Count the words of this long request about the quarterly report."] * 25)
    run_id = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": task},
                               format="json").json()["run"]["id"]
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    stored = Session.objects.get(pk=session["id"])
    assert stored.summary and stored.summary_seq > 1  # compacted on the worker, kept for later
    messages = assert_valid_history(session["id"])  # the stored history is whole
    assert messages[0].content[0]["text"] == task
    assert alice.client.get(f"/v1/sessions/{session['id']}/files").json()["results"] == []


def test_a_worker_started_before_the_migrations_waits_for_them(empty_database, start_worker):
    """``make worker`` while ``make serve`` still migrates (or ``docker compose up``): the
    worker says what it waits for and starts once the database is migrated, with no traceback
    from a reconciler pass meeting tables not there yet."""
    worker = start_worker(ready=False, DATABASE_URL=empty_database)
    worker.wait_for(lambda log: "waiting for the database: migrations not applied yet" in log,
                    what="the worker to wait for the migrations", timeout=30)
    migrated = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT,
                              env={**os.environ, "DATABASE_URL": empty_database},
                              capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    worker.wait_for(lambda log: " ready." in log, what="worker ready")
    time.sleep(1.5)  # its reconciler's first passes, and a schedules pass or two
    log = worker.log()
    assert log.index("waiting for the database") < log.index("the database is ready") < (
        log.index(" ready."))
    assert "Traceback" not in log and "failed" not in log, log
