"""Client tools on real worker processes (Redis, PostgreSQL), answered by a service using the
Python SDK over HTTP (hango under gunicorn): a run parked on the caller's tool calls goes on
once answered — in parts, answered twice at once, left to expire, cancelled, after its worker
was killed, beside a built-in and an approval-held call of the same batch — and a hundred
parked runs answered at once are each resumed exactly once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from hango_client import ApiError, Client, RetryPolicy

from harness.approvals import CANCELLED_BEFORE_RESULT
from harness.client_calls import NO_RESULT
from runs.models import Message, Run, RunEvent
from tests.support import workers
from tests.support.approvals import statuses
from tests.support.history import assert_valid_history
from tests.support.runs import wait_for_run
from tests.support.servers import GunicornProcess
from tests.support.threads import at_once

pytestmark = pytest.mark.slow

LOOKUP = {"name": "lookup_order", "description": "Find an order by its number.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}},
                           "required": ["order"]}}
ONE = 'call lookup_order {"order": 42}'
TWO = 'call lookup_order {"order": 1} ; call lookup_order {"order": 2}'
RESUMED_ONCE = ["queued", "running", "requires_action", "queued", "running", "completed"]


@pytest.fixture
def service(alice, broker, tmp_path) -> Iterator[Callable[[], Client]]:
    """hango under gunicorn; each call a new SDK client of alice's (one a thread), which does
    not retry: a test sees each answer as the server gave it."""
    served = GunicornProcess(tmp_path, database_url=workers.test_database_url(), threads=8, env={
        "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0"})
    clients: list[Client] = []

    def connect() -> Client:
        clients.append(Client(served.url, alice.key, retry=RetryPolicy(attempts=1)))
        return clients[-1]

    yield connect
    for client in clients:
        client.close()
    served.stop()


@pytest.fixture
def api(service) -> Client:
    return service()


@pytest.fixture
def agent(api):
    return api.agents.create(name="orders", model="scripted:calls", config={
        "client_tools": [LOOKUP], "interrupt_on": {"word_count": ["approve"]}})


def start(api: Client, agent, content: str = ONE) -> str:
    session = api.sessions.create(agent=agent)
    return api.sessions.send(session, content)["run"]["id"]


def parked(run_id: str, status: str = "requires_action", timeout: float = 60) -> Run:
    wait_for_run(run_id, lambda r: r.status == status, timeout=timeout)
    return Run.objects.get(pk=run_id)


def waiting_ids(api: Client, run_id: str) -> list[str]:
    return [c["tool_use_id"] for c in api.runs.get(run_id)["required_action"]["tool_calls"]]


def submit(api: Client, run_id: str, *answers: tuple[str, str]) -> tuple[int, dict]:
    """The status and body the tool results' post answered."""
    try:
        return 200, api.runs.submit_tool_results(run_id, results=[
            {"tool_use_id": i, "output": text} for i, text in answers])
    except ApiError as refused:
        return refused.status, {"error": refused.code, "detail": refused.detail}


def results_for(run: Run, call_id: str) -> list[dict]:
    """Every tool_result block of the run's session that answers ``call_id``."""
    return [b for m in Message.objects.filter(session_id=run.session_id)
            for b in m.content if b.get("tool_use_id") == call_id and b["type"] == "tool_result"]


def answer_text(run: Run) -> str:
    return Message.objects.filter(session_id=run.session_id).order_by("-seq")[0] \
        .content[0]["text"]


def test_answered_in_parts_the_last_answer_sent_at_once_is_stored_once(api, service, agent,
                                                                       start_worker):
    start_worker("w1")
    run_id = start(api, agent, TWO)
    parked(run_id)
    first, second = waiting_ids(api, run_id)
    assert submit(api, run_id, (second, "two ships"))[1]["status"] == "requires_action"
    assert Run.objects.get(pk=run_id).status == "requires_action"  # no worker took it
    assert waiting_ids(api, run_id) == [first]
    senders = [service() for _ in range(4)]

    def send() -> int:
        return submit(senders.pop(), run_id, (first, "one ships"))[0]

    # The last answer sent four times at once (a client retrying): one is taken.
    assert sorted(at_once(send, count=4)) == [200, 409, 409, 409]
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert "lookup_order: one ships" in answer_text(run)
    assert "lookup_order: two ships" in answer_text(run)
    assert len(results_for(run, first)) == len(results_for(run, second)) == 1
    assert statuses(run_id) == RESUMED_ONCE
    assert RunEvent.objects.filter(run_id=run_id, type="tool_results.submitted").count() == 2
    assert_valid_history(run.session_id)


def test_a_parked_run_left_alone_expires_and_one_cancelled_is_closed(api, agent, start_worker):
    brief = api.agents.create(name="brief", model="scripted:calls",
                              config={"client_tools": [LOOKUP], "client_tool_timeout": 1})
    start_worker("w1")
    left, cancelled = start(api, brief), start(api, agent)
    parked(cancelled)
    [call] = waiting_ids(api, cancelled)
    assert api.runs.cancel(cancelled)["status"] == "cancelled"
    run = Run.objects.get(pk=cancelled)
    [result] = results_for(run, call)
    assert result["content"] == CANCELLED_BEFORE_RESULT
    assert_valid_history(run.session_id)
    again = api.sessions.send(str(run.session_id), ONE)  # the session goes on
    parked(again["run"]["id"])

    # The worker's reconciler thread answers the other one's call as failed, a second after.
    run = wait_for_run(left, timeout=20)
    assert run.status == "completed", run.error
    [late] = RunEvent.objects.get(run_id=left, type="tool_results.expired").data["tool_use_ids"]
    [result] = results_for(run, late)
    assert result["content"] == NO_RESULT and result["is_error"] is True
    assert f"lookup_order (error): {NO_RESULT}" in answer_text(run)
    assert statuses(left) == RESUMED_ONCE
    # Too late: the caller's answer is refused, not stored.
    assert submit(api, left, (late, "late"))[0] == 409


def test_kill_9_while_parked_then_answered_resumes_on_another_worker_once(api, agent,
                                                                           start_worker):
    doomed = start_worker("doomed")
    run_id = start(api, agent)
    run = parked(run_id)
    [call] = waiting_ids(api, run_id)
    doomed.kill()
    assert submit(api, run_id, (call, "ships today"))[0] == 200
    start_worker("heir")
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert len(results_for(run, call)) == 1 and "lookup_order: ships today" in answer_text(run)
    assert statuses(run_id) == RESUMED_ONCE


def test_a_batch_of_a_built_in_an_approval_held_and_a_client_call(api, agent, start_worker):
    start_worker("w1")
    run_id = start(api, agent,
                   'call echo {"text": "hi"} ; call word_count {"text": "a b c"} ; ' + ONE)
    parked(run_id, "awaiting_approval")
    [held] = api.runs.get(run_id)["pending_approvals"]
    [call] = waiting_ids(api, run_id)
    approved = api.runs.approve(run_id, decisions=[
        {"tool_use_id": held["tool_use_id"], "type": "approve"}])
    assert approved["status"] == "requires_action", approved
    assert submit(api, run_id, (call, "found"))[1]["status"] == "queued"
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    text = answer_text(run)
    assert "echo: hi" in text and "word_count: 3" in text and "lookup_order: found" in text
    assert statuses(run_id) == ["queued", "running", "awaiting_approval", "requires_action",
                                "queued", "running", "completed"]
    assert_valid_history(run.session_id)


def test_a_hundred_parked_runs_answered_at_once_each_resume_once(api, service, agent,
                                                                  start_worker):
    start_worker("w1")
    runs = [start(api, agent) for _ in range(100)]
    for run_id in runs:
        parked(run_id)
    calls = {run_id: waiting_ids(api, run_id)[0] for run_id in runs}
    senders = [service() for _ in range(8)]  # the service's eight threads, a client each

    def answer(job: tuple[int, str]) -> int:
        index, run_id = job
        return submit(senders[index % 8], run_id, (calls[run_id], f"order of {run_id}"))[0]

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(answer, enumerate(runs))) == [200] * 100
    for run_id in runs:
        run = wait_for_run(run_id, timeout=120)
        assert run.status == "completed", (run_id, run.error)
        assert statuses(run_id) == RESUMED_ONCE, run_id
        [result] = results_for(run, calls[run_id])
        assert result["content"] == f"order of {run_id}"
