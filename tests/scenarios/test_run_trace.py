"""One trace per run, end to end (issue 35): gunicorn and two real Celery worker processes
export over OTLP/HTTP to a receiver the test starts, which decodes the protobuf payloads. A run
posted over HTTP calls a tool that fails, pauses for approval on the first worker, which then
stops; it is approved over HTTP and finished by a second worker. One trace id runs from the
POST's span through both workers' slices to the last model call; the approve's span links to
it; the failed call's span is ERROR; the metrics arrive with their attributes; no key or
credential is in any payload."""

from __future__ import annotations

import httpx
import pytest

from harness import telemetry as t
from runs.models import RunEvent
from tests.support import workers
from tests.support.otlp import Receiver, otlp_receiver
from tests.support.servers import GunicornProcess

pytestmark = pytest.mark.slow

SCRIPT = "\n".join([
    'call echo {"txt": "no such argument"}',  # refused by the tool's schema: a failed call
    'call word_count {"text": "one two three"}',  # waits for a human's approval
    'call echo {"text": "done"}',
])
ERROR = 2  # OTLP's STATUS_CODE_ERROR
SERVER = 2  # OTLP's SPAN_KIND_SERVER


@pytest.fixture
def receiver():
    with otlp_receiver() as started:
        yield started


def _settled(client: httpx.Client, run_id: str, status: str) -> dict:
    body = client.get(f"/v1/runs/{run_id}", params={"wait": 20}).json()
    assert body["status"] == status, body
    return body


def _points(receiver: Receiver, name: str) -> list:
    return [p for p in receiver.points if p.metric == name]


def test_one_trace_from_the_post_to_the_last_model_call_across_workers(
        alice, make_agent, broker, start_worker, tmp_path, receiver):
    agent = make_agent(alice, model="scripted:calls",
                       config={"interrupt_on": {"word_count": ["approve", "reject"]}})
    env = receiver.env()
    web = GunicornProcess(tmp_path, database_url=workers.test_database_url(),
                          env={"CELERY_BROKER_URL": broker, **receiver.env(
                              OTEL_SERVICE_NAME="hango-web")})
    try:
        first = start_worker("w1", **env)
        client = httpx.Client(base_url=web.url, timeout=30,
                              headers={"Authorization": f"Bearer {alice.key}"})
        session = client.post("/v1/sessions", json={"agent": agent["id"]}).json()
        posted = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": SCRIPT})
        assert posted.status_code == 202, posted.text
        run_id = posted.json()["run"]["id"]
        _settled(client, run_id, "awaiting_approval")
        first.stop()  # its spans and metrics are flushed as it shuts down

        start_worker("w2", **env)
        [asked] = RunEvent.objects.filter(run_id=run_id, type="approval.requested")
        call_id = asked.data["pending"][0]["tool_use_id"]
        approved = client.post(f"/v1/runs/{run_id}/approve",
                               json={"decisions": [{"tool_use_id": call_id, "type": "approve"}]})
        assert approved.status_code == 202, approved.text
        _settled(client, run_id, "completed")

        def runs_chats(r: Receiver) -> list:
            return [s for s in r.spans if s.name == t.SPAN_CHAT]

        # Four model calls: the failed echo's, the word count's, the echo's, the answer.
        receiver.wait_for(lambda r: len(runs_chats(r)) >= 4, what="the run's four model calls")
        receiver.wait_for(lambda r: _points(r, t.METRIC_RUNS_ENDED), what="the runs ended metric")
    finally:
        web.stop()

    spans = receiver.spans
    [post] = [s for s in spans if s.kind == SERVER and s.attributes.get(t.ATTR_RUN_ID) == run_id
              and "messages" in str(s.attributes.get("http.route", s.name))]
    assert post.attributes[t.ATTR_SESSION_ID] == session["id"]
    run_trace = post.trace_id
    slices = [s for s in spans if s.name == t.SPAN_RUN_SLICE]
    assert {s.attributes[t.ATTR_RUN_ID] for s in slices} == {run_id}
    assert {s.trace_id for s in slices} == {run_trace}
    workers_seen = {s.resource["service.instance.id"] for s in slices}
    assert len(workers_seen) == 2, slices  # the pause's slice and the resume's, apart
    chats = sorted(runs_chats(receiver), key=lambda s: s.start)
    assert {s.trace_id for s in chats} == {run_trace}
    assert chats[-1].resource["service.instance.id"] != slices[0].resource["service.instance.id"]
    # The resumed slice continues the run's trace; the Celery task that brought it belongs to
    # the approve's trace and is linked.
    [approve] = [s for s in spans if s.kind == SERVER and s.trace_id != run_trace
                 and s.attributes.get(t.ATTR_RUN_ID) == run_id]
    assert (run_trace, post.span_id) in [(tr, sp) for tr, sp, _ in approve.links]
    resumed = max(slices, key=lambda s: s.start)
    assert [tr for tr, _, _ in resumed.links] == [approve.trace_id]

    tools = [s for s in spans if s.name == t.SPAN_EXECUTE_TOOL]
    failed = [s for s in tools if s.status_code == ERROR]
    assert [s.attributes[t.ATTR_GEN_AI_TOOL_NAME] for s in failed] == ["echo"]
    assert failed[0].attributes[t.ATTR_TOOL_IS_ERROR] is True
    assert {s.trace_id for s in tools} == {run_trace}

    receiver.wait_for(lambda r: _points(r, t.METRIC_TOOL_ERRORS), what="tool metrics")
    names = {p.metric for p in receiver.points}
    for name in (t.METRIC_RUNS_STARTED, t.METRIC_RUNS_ENDED, t.METRIC_RUN_DURATION,
                 t.METRIC_QUEUE_WAIT, t.METRIC_SLICES, t.METRIC_RUNS_IN_FLIGHT,
                 t.METRIC_MODEL_DURATION, t.METRIC_MODEL_TOKENS, t.METRIC_TOOL_DURATION,
                 t.METRIC_TOOL_ERRORS):
        assert name in names, name
    [ended] = {p.attributes[t.ATTR_RUN_OUTCOME] for p in _points(receiver, t.METRIC_RUNS_ENDED)}
    assert ended == "completed"
    model = _points(receiver, t.METRIC_MODEL_DURATION)[0].attributes
    assert model[t.ATTR_GEN_AI_PROVIDER] == "scripted"
    assert model[t.ATTR_GEN_AI_REQUEST_MODEL] == "calls"
    assert model[t.ATTR_USAGE_PURPOSE] == "run"
    assert {p.attributes[t.ATTR_GEN_AI_TOKEN_TYPE]
            for p in _points(receiver, t.METRIC_MODEL_TOKENS)} == {"input", "output"}
    assert {p.attributes[t.ATTR_GEN_AI_TOOL_NAME]
            for p in _points(receiver, t.METRIC_TOOL_ERRORS)} == {"echo"}
    outcomes = {p.attributes[t.ATTR_SLICE_OUTCOME] for p in _points(receiver, t.METRIC_SLICES)}
    assert {"paused", "completed"} <= outcomes
    for point in receiver.points:  # few-valued attributes only: no run, session or tenant id
        assert run_id not in str(point.attributes) and session["id"] not in str(point.attributes)

    everything = b"".join(receiver.bodies)
    assert alice.key.encode() not in everything
    assert alice.key.split("_", 2)[2].encode() not in everything
