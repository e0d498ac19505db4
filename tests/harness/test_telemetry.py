"""harness.telemetry: names in one list, spans reach the test exporter, content is gated."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry import baggage, context, trace
from opentelemetry.trace import StatusCode

from harness import telemetry
from harness.errors import ProviderError
from harness.providers.scripted import ScriptedModel, tool_call
from harness.steps import Failed
from tests.support.harness import make_loop, run, spans_named
from tests.support.otel import span_exporter

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def baggage_set(key: str, value: str):
    token = context.attach(baggage.set_baggage(key, value))
    try:
        yield
    finally:
        context.detach(token)


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


@pytest.mark.slow
def test_with_no_provider_a_span_is_the_current_non_recording_one():
    # In a process of its own: the test provider is installed once per process.
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.trace import NonRecordingSpan, SpanContext, use_span\n"
        "from harness import telemetry\n"
        "with telemetry.span('alone', {'k': 'v'}) as s:\n"
        "    assert s is trace.INVALID_SPAN is trace.get_current_span()\n"
        "remote = NonRecordingSpan(SpanContext(trace_id=1, span_id=2, is_remote=True))\n"
        "with use_span(remote), telemetry.span('child') as s:\n"
        "    assert s is remote is trace.get_current_span(), s\n"
        "    assert s is trace.get_tracer('t').start_span('x')  # the no-op tracer's answer\n"
        "try:\n"
        "    with telemetry.span('failing'):\n"
        "        raise KeyError('x')\n"
        "except KeyError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('swallowed')\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_a_failed_model_call_or_tool_call_is_an_error_span_without_its_message(spans):
    secret = "sk-the-providers-answer-quoted-a-key"
    model = ScriptedModel(steps=[tool_call("echo", {"txt": secret}),
                                 ProviderError(f"upstream said {secret}", status=500)])
    step, _, _ = run(make_loop(model))
    assert isinstance(step, Failed) and step.code == "provider_error"
    [tool] = spans_named(spans, telemetry.SPAN_EXECUTE_TOOL)
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes[telemetry.ATTR_TOOL_IS_ERROR] is True
    failed = spans_named(spans, telemetry.SPAN_CHAT)[-1]
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description == "provider_error"
    assert failed.attributes[telemetry.ATTR_ERROR_TYPE] == "provider_error"
    assert not failed.events  # no exception event: its message may quote anything
    assert secret not in str(failed.status.description)


def test_trace_headers_are_the_current_span_s_and_never_baggage(spans):
    assert telemetry.trace_headers() == {}  # nothing current
    with baggage_set("tenant", "acme"), telemetry.span("call") as current:
        headers = telemetry.trace_headers()
    made = current.get_span_context()
    assert headers == {"traceparent": f"00-{made.trace_id:032x}-{made.span_id:016x}-"
                                      f"{int(made.trace_flags):02x}"}
