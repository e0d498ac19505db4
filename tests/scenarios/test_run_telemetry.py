"""Spans of a real run through the API: the stack event, model and tool spans, no content or
secrets unless the tenant allows content."""

from __future__ import annotations

import json

from opentelemetry.trace import SpanKind

from harness import telemetry
from runs.execution.assembly import build_execution
from runs.models import Run


def _run(caller, make_session):
    session = make_session(caller)
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": "a secret sentence about pancakes"}, format="json")
    assert response.status_code == 202
    return response.json()["run"]


def _all_attribute_text(spans) -> str:
    parts = []
    for span in spans:
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        for event in span.events:
            parts.append(json.dumps(dict(event.attributes or {}), default=str))
    return "\n".join(parts)


def test_a_run_emits_the_stack_event_and_chat_and_tool_spans(alice, make_session, inline_runs,
                                                             spans):
    run = _run(alice, make_session)
    finished = spans.get_finished_spans()
    [invoke] = [s for s in finished if s.name == telemetry.SPAN_INVOKE_AGENT]
    [stack_event] = [e for e in invoke.events if e.name == telemetry.EVENT_MIDDLEWARE_STACK]
    # The stack the run built: with its stores, the memory and filesystem slots are in it.
    loop, _, _ = build_execution(Run.objects.select_related("agent").get(pk=run["id"]))
    expected = loop.chain.names
    assert list(stack_event.attributes[telemetry.ATTR_MIDDLEWARE_STACK]) == expected
    assert invoke.attributes[telemetry.ATTR_RUN_ID] == run["id"]
    chats = [s for s in finished if s.name == telemetry.SPAN_CHAT]
    tools = [s for s in finished if s.name == telemetry.SPAN_EXECUTE_TOOL]
    assert len(chats) == 5 and len(tools) == 4
    assert all(s.kind == SpanKind.CLIENT for s in chats)
    assert all(s.parent.span_id == invoke.context.span_id for s in chats)
    assert [s for s in finished if s.name == telemetry.SPAN_BEFORE_RUN]
    todo_events = [e for s in tools for e in s.events if e.name == telemetry.EVENT_TODOS_UPDATED]
    assert todo_events[-1].attributes[telemetry.ATTR_TODOS_COMPLETED] == 3
    # The HTTP request that started the run is traced by the Django instrumentation.
    assert any(s.kind == SpanKind.SERVER for s in finished)


def test_no_message_content_or_key_on_spans_by_default(alice, make_session, inline_runs, spans):
    _run(alice, make_session)
    text = _all_attribute_text(spans.get_finished_spans())
    assert "pancakes" not in text and "Read the request" not in text
    assert alice.key not in text and alice.key.split("_", 2)[2] not in text


def test_content_on_chat_spans_when_the_tenant_allows_it(alice, make_session, inline_runs,
                                                         spans):
    alice.member.tenant.trace_llm_content = True
    alice.member.tenant.save()
    _run(alice, make_session)
    chats = [s for s in spans.get_finished_spans() if s.name == telemetry.SPAN_CHAT]
    assert "pancakes" in chats[0].attributes[telemetry.ATTR_GEN_AI_INPUT_MESSAGES]
    assert telemetry.ATTR_GEN_AI_OUTPUT_MESSAGES in chats[0].attributes
    assert alice.key not in _all_attribute_text(spans.get_finished_spans())
