"""Issue 35's traces and metrics in one process (the end-to-end trace over OTLP is
tests/scenarios/test_run_trace.py): the post's span names its run and is its trace's root, quota
refusals, lease take-overs and webhook deliveries are counted, and a delivery carries its
trace context."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from opentelemetry.trace import SpanKind, StatusCode

from accounts.models import Tenant
from harness import telemetry as t
from runs import tracing
from runs.execution import handoff
from runs.execution.worker import claim_run
from runs.models import Run
from tests.support.otel import metric_reader, metric_sum
from tests.support.receiver import receiver
from webhooks.models import Delivery


@pytest.fixture(autouse=True)
def reader():
    return metric_reader()


def test_the_post_s_span_names_its_run_and_the_run_continues_its_trace(alice, make_session,
                                                                       inline_runs, spans):
    session = make_session(alice)
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": "count these words"}, format="json")
    run_id = response.json()["run"]["id"]
    finished = spans.get_finished_spans()
    [post] = [s for s in finished if s.kind == SpanKind.SERVER
              and s.attributes.get(t.ATTR_RUN_ID) == run_id]
    assert post.attributes[t.ATTR_SESSION_ID] == session["id"]
    [piece] = [s for s in finished if s.name == t.SPAN_RUN_SLICE]
    chats = [s for s in finished if s.name == t.SPAN_CHAT]
    trace_id = post.context.trace_id
    assert {s.context.trace_id for s in [piece, *chats]} == {trace_id}
    assert piece.attributes[t.ATTR_SLICE_OUTCOME] == "completed"
    stored = tracing.stored_context(Run.objects.get(pk=run_id).trace_context)
    assert stored is not None and stored.trace_id == trace_id


def test_a_stored_traceparent_that_is_not_one_is_ignored():
    assert tracing.stored_context("") is None
    assert tracing.stored_context("00-" + "0" * 32 + "-" + "0" * 16 + "-01") is None
    assert tracing.stored_context("zz-" + "a" * 32 + "-" + "b" * 16 + "-01") is None
    assert tracing.stored_context("00-" + "a" * 32 + "-" + "b" * 16 + "-01") is not None


def test_a_quota_refusal_is_counted_where_it_happened(alice, tenant, make_session, inline_runs):
    session = make_session(alice)
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=1)  # no run's reservation fits
    before = metric_sum(t.METRIC_QUOTA_REFUSALS, **{t.ATTR_QUOTA_WHERE: "admission"})
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": "count these words"}, format="json")
    assert response.status_code == 402
    assert metric_sum(t.METRIC_QUOTA_REFUSALS,
                      **{t.ATTR_QUOTA_WHERE: "admission"}) == before + 1


def test_a_lease_taken_over_by_the_reconciler_is_counted(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    Run.objects.filter(pk=stale.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    before = metric_sum(t.METRIC_LEASE_TAKEOVERS)
    assert handoff.reconcile_runs(grace=30) == [stale.pk]
    assert metric_sum(t.METRIC_LEASE_TAKEOVERS) == before + 1


def test_a_delivery_is_counted_by_outcome_and_carries_its_trace(alice, make_agent, make_session,
                                                                hango_settings,
                                                                transactional_db, spans):
    hango_settings(webhook_allow_private=True, run_inline=True, broker_url="",
                   webhook_retry_base_seconds=0.2, webhook_max_attempts=3)
    agent = make_agent(alice, model="scripted:demo")
    labels = {t.ATTR_WEBHOOK_EVENT: "run.completed"}
    before = {outcome: metric_sum(t.METRIC_WEBHOOK_DELIVERIES,
                                  **{t.ATTR_WEBHOOK_OUTCOME: outcome}, **labels)
              for outcome in ("succeeded", "retrying")}
    with receiver() as hook:
        hook.answers = [500]  # the first attempt fails, the second succeeds
        alice.client.post("/v1/webhooks", {"url": hook.url, "agent": agent["id"]},
                          format="json")
        session = make_session(alice, agent_id=agent["id"])
        alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"},
                          format="json")
        got = hook.wait_for(2)
    def succeeded() -> float:
        return metric_sum(t.METRIC_WEBHOOK_DELIVERIES, **{t.ATTR_WEBHOOK_OUTCOME: "succeeded"},
                          **labels)

    deadline = time.monotonic() + 10  # the second attempt's outcome is written after its answer
    while succeeded() == before["succeeded"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Delivery.objects.get().attempts == 2
    for outcome in ("succeeded", "retrying"):
        assert metric_sum(t.METRIC_WEBHOOK_DELIVERIES, **{t.ATTR_WEBHOOK_OUTCOME: outcome},
                          **labels) == before[outcome] + 1
    attempts = [s for s in spans.get_finished_spans() if s.name == t.SPAN_WEBHOOK_DELIVER]
    assert [s.status.status_code for s in sorted(attempts, key=lambda s: s.start_time)] == [
        StatusCode.ERROR, StatusCode.UNSET]
    for request, span in zip(got, sorted(attempts, key=lambda s: s.start_time), strict=True):
        assert request.headers["traceparent"].split("-")[1:3] == [
            f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"]
