"""POST /v1/sessions/{id}/context/try: one real model call with the session's next request."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db.models import Sum

from accounts.models import AuditEntry, QuotaHold, Tenant, TenantPrice, UsageRecord
from harness.providers.scripted import ScriptedModel, text, tool_call
from runs.models import Message, Run, Session
from tests.support.api import error_of


def try_(caller, session, body) -> object:
    return caller.client.post(f"/v1/sessions/{session['id']}/context/try", body, format="json")


def test_try_answers_and_adds_nothing(alice, demo, serve_model, spans):
    from harness import telemetry
    from tests.support.harness import spans_named

    model = ScriptedModel([tool_call("echo", {"text": "hi"}, call_id="t1")])
    serve_model("scripted", model)
    messages, runs = Message.objects.count(), Run.objects.count()
    response = try_(alice, demo, {"exclude": ["message:5", "tool:word_count"],
                                  "replace": {"system:agent": "Be terse."},
                                  "message": "And now?"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stop_reason"] == "tool_use"
    assert body["message"]["content"][-1] == {"type": "tool_use", "id": "t1", "name": "echo",
                                              "input": {"text": "hi"}}
    assert set(body["usage"]) == {"input_tokens", "output_tokens", "cache_read_tokens",
                                  "cache_write_tokens"}
    assert (Message.objects.count(), Run.objects.count()) == (messages, runs)
    (sent,) = model.calls
    assert sent.system[0].text == "Be terse." and sent.messages[-1].text == "And now?"
    assert "word_count" not in [t.name for t in sent.tools]
    assert 5 not in [m.seq for m in sent.messages] and 4 not in [m.seq for m in sent.messages]
    [row] = UsageRecord.objects.filter(purpose="context_try")
    assert row.run_id is None and row.session_id is not None and row.input_tokens > 0
    [audit] = AuditEntry.objects.filter(action="context.try")
    assert audit.detail == {"excluded": ["tool:word_count", "message:4", "message:5"],
                            "replaced": ["system:agent"], "model": "scripted:demo",
                            "with_message": True}
    assert "Be terse." not in json.dumps(audit.detail)
    [chat] = [s for s in spans_named(spans, telemetry.SPAN_CHAT)
              if s.attributes.get(telemetry.ATTR_CONTEXT_TRY)]
    [server] = spans_named(spans, telemetry.SPAN_CONTEXT_TRY)
    assert chat.parent.span_id == server.context.span_id


def test_try_is_refused_with_402_when_the_quota_is_spent(alice, demo, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=1)
    error_of(try_(alice, demo, {"message": "Again?"}), 402, "quota_exceeded")
    assert not UsageRecord.objects.filter(purpose="context_try").exists()


def test_a_try_whose_worst_case_does_not_fit_the_quota_is_not_sent(alice, demo, tenant,
                                                                   serve_model, hango_settings):
    hango_settings(quota_run_reservation_tokens=0)
    model = ScriptedModel([text("never sent")])
    serve_model("scripted", model)
    spent = UsageRecord.objects.filter(tenant=tenant).aggregate(s=Sum("input_tokens")
                                                                + Sum("output_tokens"))["s"]
    # Not spent (admitted), but far short of the call's input plus its max_tokens.
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=spent + 100)
    response = try_(alice, demo, {"message": "Again?"})
    error_of(response, 402, "quota_exceeded")
    assert "up to" in response.json()["error"]["message"]
    assert model.calls == [] and not QuotaHold.objects.exists()
    assert not UsageRecord.objects.filter(purpose="context_try").exists()


def test_a_try_within_the_quota_releases_its_hold(alice, demo, tenant, serve_model):
    serve_model("scripted", ScriptedModel([text("fine")]))
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=10**9)
    assert try_(alice, demo, {"message": "Again?"}).status_code == 200
    assert UsageRecord.objects.filter(purpose="context_try").count() == 1
    assert not QuotaHold.objects.exists()


@pytest.mark.parametrize(("body", "status"), [
    ({"replace": {"tool:echo": "x"}}, 422),
    ({"exclude": ["nope"]}, 422),
    ({"exclude": ["message:5"], "replace": {"message:5": "x"}}, 422),
    ({"exclude": "message:5"}, 422),
    (["message:5"], 422),
])
def test_bad_try_bodies_are_refused(alice, demo, body, status):
    error_of(try_(alice, demo, body), status)
    assert not UsageRecord.objects.filter(purpose="context_try").exists()


def test_a_failing_provider_is_a_502_and_no_usage(alice, demo, serve_model):
    serve_model("scripted", ScriptedModel([]))  # any call raises ScriptExhausted
    error_of(try_(alice, demo, {"message": "Again?"}), 502, "provider_error")
    assert not UsageRecord.objects.filter(purpose="context_try").exists()
    assert not AuditEntry.objects.filter(action="context.try").exists()


def test_a_try_over_the_summarization_budget_sends_what_a_run_would(alice, demo, serve_model):
    """A run would make a summary first, which a try does not: 422, nothing sent. With the
    stored summary covering what a run would cut, the try sends the compacted request."""
    model = ScriptedModel([text("ok")])
    serve_model("scripted", model)
    assert alice.client.patch(f"/v1/agents/{demo['agent']}", {"config": {"summarization": {
        "trigger_tokens": 100, "keep_messages": 2}}}, format="json").status_code == 200
    error = error_of(try_(alice, demo, {"message": "How many?"}), 422, "validation_error")
    assert "a run would summarize its older messages first" in error["message"]
    assert error["detail"]["budget"] == 100 and model.calls == []
    Session.objects.filter(pk=demo["id"]).update(summary="They counted words.",
                                                 summary_seq=10)
    assert try_(alice, demo, {"message": "How many?"}).status_code == 200
    [sent] = model.calls
    assert sent.messages[0].text == "Summary of the earlier conversation: They counted words."
    assert [m.text for m in sent.messages[1:]] == ["How many?"]


def test_a_try_answer_is_text_when_the_model_says_text(alice, demo, serve_model):
    serve_model("scripted", ScriptedModel([text("Four words.")]))
    body = try_(alice, demo, {"message": "How many?"}).json()
    assert body["message"] == {"role": "assistant",
                               "content": [{"type": "text", "text": "Four words."}]}
    assert body["stop_reason"] == "end_turn"


def test_try_makes_one_attempt_within_its_own_timeout(alice, demo, serve_model,
                                                      hango_settings):
    hango_settings(context_try_timeout=7.5, provider_max_retries=3)
    seen = []

    def factory(name, settings):
        seen.append((settings.timeout_seconds, settings.max_retries))
        return ScriptedModel([text("ok")])

    serve_model("scripted", factory)
    assert try_(alice, demo, {"message": "Again?"}).status_code == 200
    assert seen == [(7.5, 0)]


def test_try_counts_against_the_keys_rate_limit(alice, demo, serve_model, hango_settings):
    from tests.support.api import make_caller

    fresh = make_caller(alice.member.tenant, "alice@acme.test")  # a new key, nothing counted
    hango_settings(rate_limit_per_minute=1, rate_limit_redis_url="")
    serve_model("scripted", ScriptedModel([text("Fine."), text("Fine.")]))
    assert try_(fresh, demo, {"message": "Well?"}).status_code == 200
    error_of(try_(fresh, demo, {"message": "Well?"}), 429, "rate_limited")


def test_a_try_on_a_history_ending_with_the_answer_needs_a_message(alice, demo, serve_model):
    model = ScriptedModel([text("ok")])
    serve_model("scripted", model)
    error = error_of(try_(alice, demo, {}), 422, "validation_error")
    assert "message" in error["detail"] and model.calls == []
    assert not UsageRecord.objects.filter(purpose="context_try").exists()


def test_the_try_chat_span_carries_the_overrides_like_a_runs(alice, demo, serve_model, spans):
    from harness import telemetry
    from tests.support.harness import spans_named

    alice.client.put(f"/v1/sessions/{demo['id']}/context-overrides",
                     [{"part": "message:10", "action": "exclude"},
                      {"part": "message:77", "action": "exclude"}], format="json")
    serve_model("scripted", ScriptedModel([text("ok")]))
    assert try_(alice, demo, {"message": "Again?", "exclude": ["tool:echo"]}).status_code == 200
    [chat] = [s for s in spans_named(spans, telemetry.SPAN_CHAT)
              if s.attributes.get(telemetry.ATTR_CONTEXT_TRY)]
    assert chat.attributes[telemetry.ATTR_CONTEXT_OVERRIDES] == 2  # message:77 is stale
    assert chat.attributes[telemetry.ATTR_CONTEXT_EXCLUDED_TOKENS] > 0
    assert chat.attributes[telemetry.ATTR_GEN_AI_RESPONSE_FINISH] == ("end_turn",)
    stale = [e for e in chat.events if e.name == telemetry.EVENT_CONTEXT_OVERRIDE_STALE]
    assert [e.attributes[telemetry.ATTR_CONTEXT_PART] for e in stale] == ["message:77"]


def test_a_try_on_the_offline_model_reports_the_panels_total(alice, demo):
    # The quickstart's agent: what a Try of the next request reports is what the panel showed.
    shown = alice.client.post(f"/v1/sessions/{demo['id']}/context", {"message": "And now?"},
                              format="json").json()["totals"]["after"]
    tried = try_(alice, demo, {"message": "And now?"})
    assert tried.status_code == 200, tried.content
    assert tried.json()["usage"]["input_tokens"] == shown


def test_a_trys_usage_row_is_priced_at_the_tenants_price(alice, demo, tenant, serve_model):
    TenantPrice.objects.create(tenant=tenant, provider="scripted", model="demo", currency="EUR",
                               input=Decimal("2"), cache_write=Decimal("2"),
                               cache_read=Decimal("0.2"), output=Decimal("8"))
    serve_model("scripted", ScriptedModel([text("Fine.")]))
    assert try_(alice, demo, {"message": "Again?"}).status_code == 200
    [row] = UsageRecord.objects.filter(purpose="context_try")
    assert (row.price_currency, row.price_source, row.price_output) == (
        "EUR", "tenant", Decimal("8"))


def test_a_try_whose_answer_carries_no_usage_is_counted(alice, demo, serve_model):
    from harness.messages import Message as HMessage
    from harness.messages import Response, TextBlock
    from harness.tokens.tokenizers import tokenizer_for

    class NoUsage:
        """A server that sends no usage: the answer's four counters are zero."""

        name = "scripted"

        def complete(self, request):
            return Response(message=HMessage(role="assistant", content=(TextBlock(text="Fine."),)),
                            stop_reason="end_turn")

    serve_model("scripted", NoUsage())
    response = try_(alice, demo, {"message": "And now?"})
    assert response.status_code == 200, response.content
    [row] = UsageRecord.objects.filter(purpose="context_try")
    expected = "estimated" if tokenizer_for("scripted:demo").source == "estimate" else "counted"
    assert row.usage_source == expected
    assert row.input_tokens > 0 and row.output_tokens > 0
    assert response.json()["usage"]["input_tokens"] == row.input_tokens
