"""GET /v1/sessions/{id}/context (the snapshot, one part in full) and POST …/context/try."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from accounts.models import AuditEntry, QuotaHold, Tenant, UsageRecord
from harness.messages import Message as HMessage
from harness.providers.scripted import ScriptedModel, text, tool_call
from runs.models import Message, Run, Session
from tests.support.api import error_of

PART_KEYS = {"id", "kind", "label", "preview", "tokens", "included", "override", "stale",
             "paired_with", "cached_prefix", "counted", "summarized"}




def snapshot(caller, session, query: str = "") -> dict:
    response = caller.client.get(f"/v1/sessions/{session['id']}/context{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_snapshot_lists_every_part_in_the_api_shape(alice, demo):
    body = snapshot(alice, demo)
    assert set(body) == {"system", "tools", "messages", "totals", "counted", "tokenizer",
                         "framing", "framing_counted", "would_compact", "cache_breakpoint",
                         "cache_prefix_tokens", "cache_minimum", "overrides", "context_window",
                         "run", "pending_calls", "batch_part", "queued", "compaction"}
    # No run is active: the first call of a new run, nothing paused or queued.
    assert (body["run"], body["pending_calls"], body["batch_part"], body["queued"]) == (
        None, [], None, [])
    assert [p["id"] for p in body["system"]] == ["system:agent", "system:filesystem",
                                                 "system:todo"]
    assert [p["id"] for p in body["messages"]] == [f"message:{i}" for i in range(1, 11)]
    assert {p["id"] for p in body["tools"]} >= {"tool:echo", "tool:word_count",
                                                "tool:write_todos", "tool:read_file"}
    parts = body["system"] + body["tools"] + body["messages"]
    assert all(set(p) == PART_KEYS for p in parts)
    assert sum(p["tokens"] for p in parts) + body["framing"] == body["totals"]["after"]
    assert body["totals"] == {"before": body["totals"]["after"], "after": body["totals"]["after"]}
    assert (body["counted"], body["tokenizer"]) == ("estimate", "estimate")
    assert body["overrides"] == {"active": 0, "stale": []}
    assert body["messages"][2]["paired_with"] == ["message:2"]
    assert body["messages"][0]["label"] == "#1 user"
    assert body["context_window"] == 32_000  # scripted:demo's, what the budget is drawn against


def test_overrides_show_in_the_snapshot(alice, demo):
    alice.client.put(f"/v1/sessions/{demo['id']}/context-overrides",
                     [{"part": "message:5", "action": "exclude"},
                      {"part": "message:99", "action": "exclude"}], format="json")
    alice.client.put(f"/v1/agents/{demo['agent']}/context-overrides",
                     [{"part": "system:agent", "action": "replace", "replacement": "Be terse."}],
                     format="json")
    body = snapshot(alice, demo)
    by_id = {p["id"]: p for p in body["system"] + body["tools"] + body["messages"]}
    assert not by_id["message:5"]["included"] and not by_id["message:4"]["included"]
    assert by_id["message:99"]["stale"] and body["overrides"] == {"active": 3,
                                                                   "stale": ["message:99"]}
    assert by_id["system:agent"]["override"] == "replace"
    assert body["totals"]["after"] < body["totals"]["before"]
    full = alice.client.get(f"/v1/sessions/{demo['id']}/context?full=system:agent").json()
    assert full == {"id": "system:agent", "content": "Be terse.", "original": "You help.",
                    "included": True}
    excluded = alice.client.get(f"/v1/sessions/{demo['id']}/context?full=message:5").json()
    assert excluded["included"] is False and json.loads(excluded["content"])[0]["type"] == \
        "tool_result"


def test_full_gives_a_parts_whole_content(alice, demo):
    tool = alice.client.get(f"/v1/sessions/{demo['id']}/context?full=tool:word_count").json()
    definition = json.loads(tool["content"])
    assert definition["name"] == "word_count" and "input_schema" in definition
    message = alice.client.get(f"/v1/sessions/{demo['id']}/context?full=message:1").json()
    stored = Message.objects.get(session_id=demo["id"], seq=1)
    assert json.loads(message["content"]) == stored.content
    for missing in ("message:99", "nope", "tool:"):
        error_of(alice.client.get(f"/v1/sessions/{demo['id']}/context?full={missing}"), 404)


def test_a_bad_counted_answers_400(alice, demo):
    error_of(alice.client.get(f"/v1/sessions/{demo['id']}/context?counted=magic"), 400)


def test_inspect_writes_nothing_and_needs_no_provider_key(alice, make_agent, make_session,
                                                          hango_settings):
    hango_settings(anthropic_api_key=None, run_inline=False, broker_url="")
    agent = make_agent(alice, model="anthropic:claude-sonnet-4-5")
    session = make_session(alice, agent_id=agent["id"])
    alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"}, format="json")
    before = {m: m.objects.count() for m in (Message, Run, UsageRecord, AuditEntry)}
    with CaptureQueriesContext(connection) as queries:
        body = snapshot(alice, session)
    writes = [q["sql"] for q in queries.captured_queries
              if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []
    assert {m: m.objects.count() for m in before} == before
    assert body["tokenizer"] == "claude-v3" and body["counted"] == "tokenizer"
    assert [p["id"] for p in body["messages"]] == ["message:1"]


@pytest.mark.parametrize("long_prompt", [False, True])
def test_a_prefix_below_the_models_cache_minimum_is_not_shown_cached(
        alice, make_agent, make_session, hango_settings, long_prompt):
    hango_settings(anthropic_api_key=None, run_inline=False, broker_url="")
    prompt = "You answer questions about the handbook. " + (
        " ".join(f"Rule {n}: cite the section you rely on." for n in range(300))
        if long_prompt else "")
    agent = make_agent(alice, model="anthropic:claude-sonnet-4-5", system_prompt=prompt,
                       allowed_tools=["echo"])
    session = make_session(alice, agent_id=agent["id"])
    body = snapshot(alice, session)
    assert body["cache_minimum"] == 1_024
    cached = [p["id"] for p in body["system"] + body["tools"] if p["cached_prefix"]]
    if long_prompt:
        assert body["cache_prefix_tokens"] >= 1_024 and body["cache_breakpoint"] == 0
        assert "system:agent" in cached and len(cached) == 1 + len(body["tools"])
    else:  # a few tools, their preamble and a short prompt: Claude caches none of it
        assert 0 < body["cache_prefix_tokens"] < 1_024
        assert body["cache_breakpoint"] is None and cached == []


@pytest.mark.parametrize(("model", "texts", "tools", "framing"), [
    ("openai:gpt-4o", "tokenizer", "rule", "rule"),
    ("anthropic:claude-sonnet-4-5", "tokenizer", "estimate", "estimate"),
    ("scripted:demo", "estimate", "estimate", "estimate"),
])
def test_each_part_says_how_it_was_counted(alice, make_agent, make_session, hango_settings,
                                           model, texts, tools, framing):
    hango_settings(anthropic_api_key=None, openai_api_key=None, run_inline=False,
                   broker_url="")
    agent = make_agent(alice, model=model)
    session = make_session(alice, agent_id=agent["id"])
    alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"}, format="json")
    body = snapshot(alice, session)
    assert {p["counted"] for p in body["system"] + body["messages"]} == {texts}
    assert {p["counted"] for p in body["tools"]} == {tools}
    assert body["framing_counted"] == framing


def test_members_see_their_own_sessions_context_only(alice, bob, outsider, admin, demo):
    for other in (bob, outsider):
        error_of(other.client.get(f"/v1/sessions/{demo['id']}/context"), 404, "not_found")
        error_of(other.client.post(f"/v1/sessions/{demo['id']}/context/try", {},
                                   format="json"), 404, "not_found")
    assert admin.client.get(f"/v1/sessions/{demo['id']}/context").status_code == 200


# -- try --------------------------------------------------------------------------------------


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


@pytest.mark.parametrize(("model", "answer", "path"), [
    ("anthropic:claude-sonnet-4-6", "anthropic_count_tokens.json", "/messages/count_tokens"),
    ("openai:gpt-4o", "openai_input_tokens.json", "/responses/input_tokens"),
])
def test_counted_provider_asks_the_providers_counter(alice, make_agent, make_session,
                                                     hango_settings, model, answer, path):
    from tests.support.replay import ReplayServer, wire_json

    server = ReplayServer()
    provider = model.split(":")[0]
    try:
        hango_settings(provider_max_retries=0, run_inline=False, broker_url="",
                       **{f"{provider}_api_key": "test-key", f"{provider}_base_url": server.url})
        agent = make_agent(alice, model=model)
        session = make_session(alice, agent_id=agent["id"])
        alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"},
                          format="json")
        assert snapshot(alice, session)["counted"] == "tokenizer" and server.requests == []
        server.reply(200, wire_json(answer))
        body = snapshot(alice, session, "?counted=provider")
        [counted] = server.requests
        assert counted.path.endswith(path)
        expected = wire_json(answer)["input_tokens"]
        assert (body["counted"], body["totals"]["after"]) == ("provider", expected)
        parts = body["system"] + body["tools"] + body["messages"]
        assert sum(p["tokens"] for p in parts) + body["framing"] == expected
        # An unreachable counter, or a server without one, leaves the tokenizer's count.
        server.reply(503, {"type": "error", "error": {"type": "api_error", "message": "down"}})
        assert snapshot(alice, session, "?counted=provider")["counted"] == "tokenizer"
        server.reply(404, {"error": {"message": "Not Found"}})
        assert snapshot(alice, session, "?counted=provider")["counted"] == "tokenizer"
    finally:
        server.close()


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


def test_the_counts_a_run_stored_are_the_ones_shown(alice, make_agent, make_session,
                                                   inline_runs, serve_model):
    """A run stores each message's count with the key of the tokenizer that made it; the
    inspector takes a count stored under its own tokenizer's key instead of counting again
    (made wrong here on purpose, to see it is taken), and counts one stored under another."""
    from harness.serde import content_from_json
    from harness.tokenizers import tokenizer_for
    from runs.execution import drop_shared_messages

    model = "anthropic:claude-sonnet-4-6"
    serve_model(model, ScriptedModel([tool_call("echo", {"text": "alpha"}), text("Done.")]))
    session = make_session(alice, agent_id=make_agent(alice, model=model)["id"])
    run = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "echo alpha"},
                            format="json").json()["run"]
    assert run["status"] == "completed"
    tokenizer = tokenizer_for(model)
    rows = list(Message.objects.filter(session_id=session["id"]).order_by("seq"))
    assert [(m.seq, m.tokens_counter) for m in rows] == [
        (1, ""), (2, tokenizer.counts_key), (3, tokenizer.counts_key), (4, tokenizer.counts_key)]
    for row in rows[1:]:
        decoded = HMessage(role=row.role, content=content_from_json(row.content))
        assert row.content_tokens == tokenizer.message(decoded) > 0

    def shown() -> int:
        drop_shared_messages()  # a process that never decoded these rows
        parts = snapshot(alice, session)["messages"]
        return next(p["tokens"] for p in parts if p["id"] == "message:2")

    real = shown()
    Message.objects.filter(session_id=session["id"], seq=2).update(content_tokens=777)
    assert shown() == 777
    Message.objects.filter(session_id=session["id"], seq=2).update(tokens_counter="other@0/r1")
    assert shown() == real


def test_inspect_reads_in_one_statement_what_a_run_reads_and_the_active_run(alice, make_agent,
                                                                  make_session,
                                                                  transactional_db):
    """History, overrides, memory and the file listing come in the run's preload, the
    session's active run and the messages queued behind it with them: one round trip, one
    snapshot."""
    from context.selectors import context_snapshot

    session = Session.objects.select_related("agent", "tenant").get(
        pk=make_session(alice, agent_id=make_agent(alice)["id"])["id"])
    context_snapshot(session=session)  # the process's first look loads what it loads once
    with CaptureQueriesContext(connection) as queries:
        context_snapshot(session=session)
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 1, statements
    assert "statement_timeout" in statements[0] and "pending_messages" in statements[0]
