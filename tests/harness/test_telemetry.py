"""harness.telemetry: names in one list, spans reach the test exporter, content is gated."""

from __future__ import annotations

import json

from opentelemetry import trace

from harness import telemetry
from tests.support.otel import span_exporter


def test_the_harness_tracer_exports_to_the_test_provider(spans):
    # telemetry.tracer was created at import, before any provider was set: it is a proxy that
    # must now delegate to the provider tests/support/otel.py installed.
    assert span_exporter() is spans
    assert trace.get_tracer_provider().__class__.__module__.startswith("opentelemetry.sdk")
    with telemetry.span("outer", {"k": "v"}) as outer:
        assert outer.is_recording()
        telemetry.record_event("something", {"n": 1})
        with telemetry.span("inner"):
            pass
    inner, outer_span = spans.get_finished_spans()
    assert (inner.name, outer_span.name) == ("inner", "outer")
    assert inner.parent.span_id == outer_span.context.span_id
    assert outer_span.attributes["k"] == "v"
    assert [(e.name, dict(e.attributes)) for e in outer_span.events] == [("something", {"n": 1})]


def test_the_spans_fixture_starts_empty(spans):
    assert spans.get_finished_spans() == ()


def test_record_event_without_a_span_is_a_no_op(spans):
    telemetry.record_event("orphan", {"x": 1})
    assert spans.get_finished_spans() == ()


def test_content_attributes_are_gated():
    payload = [{"role": "user", "content": "héllo"}]
    assert telemetry.content_attributes(False, "k", payload) == {}
    assert telemetry.content_attributes(True, "k", payload) == {
        "k": json.dumps(payload, ensure_ascii=False)}


def test_every_name_is_listed_once():
    assert len(telemetry.ALL_NAMES) == len(set(telemetry.ALL_NAMES))
    for name in ("invoke_agent", "agent.middleware_stack", "middleware.state_missing",
                 "middleware.repeat_call_blocked", "hango.middleware.name",
                 "hango.middleware.before_run.duration", "agent.todos_updated"):
        assert name in telemetry.ALL_NAMES
