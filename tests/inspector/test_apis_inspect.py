"""GET /v1/sessions/{id}/context: the snapshot, and one part in full (the try: test_apis_try.py)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import AuditEntry, UsageRecord
from harness.images import decoded_bytes
from harness.messages import Message as HMessage
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.serde import image_to_json
from runs.models import Message, Run, Session
from tests.support.api import error_of
from tests.support.images import png_image

PART_KEYS = {"id", "kind", "label", "preview", "tokens", "included", "override", "stale",
             "paired_with", "cached_prefix", "counted", "summarized", "images",
             "dropped_by_template"}




def snapshot(caller, session, query: str = "") -> dict:
    response = caller.client.get(f"/v1/sessions/{session['id']}/context{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_snapshot_lists_every_part_in_the_api_shape(alice, demo):
    body = snapshot(alice, demo)
    assert set(body) == {"system", "tools", "messages", "totals", "counted", "tokenizer",
                         "framing", "framing_counted", "would_compact", "cache_breakpoint",
                         "cache_prefix_tokens", "cache_minimum", "overrides", "context_window",
                         "run", "pending_calls", "batch_part", "queued", "compaction",
                         "would_fail", "cost", "mcp_servers", "model_settings",
                         "provider_count"}
    # No run is active: the first call of a new run, nothing paused or queued, nothing failing;
    # the agent uses no MCP server.
    assert (body["run"], body["pending_calls"], body["batch_part"], body["queued"],
            body["would_fail"], body["mcp_servers"]) == (None, [], None, [], None, [])
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


@pytest.mark.parametrize(("model", "sent", "tokens"), [
    ("anthropic:claude-sonnet-4-5", True, 410), ("openai:gpt-4o", False, 0)])
def test_a_results_images_are_listed_on_its_part_and_counted_in_the_sum(
        alice, make_agent, make_session, hango_settings, model, sent, tokens):
    hango_settings(anthropic_api_key=None, openai_api_key=None, run_inline=False,
                   broker_url="")
    session = make_session(alice, agent_id=make_agent(alice, model=model)["id"])
    shot = png_image(640, 480)
    Message.objects.bulk_create([Message(session_id=session["id"], seq=seq, role=role,
                                         content=content) for seq, role, content in [
        (1, "user", [{"type": "text", "text": "Show me the page."}]),
        (2, "assistant", [{"type": "tool_use", "id": "c1", "name": "echo", "input": {}}]),
        (3, "user", [{"type": "tool_result", "tool_use_id": "c1", "content": "the page",
                      "is_error": False, "images": [image_to_json(shot)]}]),
        (4, "user", [{"type": "text", "text": "What do you see?"}])]])
    body = snapshot(alice, session)
    parts = body["system"] + body["tools"] + body["messages"]
    assert sum(p["tokens"] for p in parts) + body["framing"] == body["totals"]["after"]
    [listed] = body["messages"][2]["images"]
    assert listed == {"media_type": "image/png", "bytes": decoded_bytes(shot), "width": 640,
                      "height": 480, "tokens": tokens, "sent": sent, "line": listed["line"]}
    assert listed["line"].startswith("image/png · ") and "640×480 px" in listed["line"]
    assert [p["images"] for p in parts if p["id"] != "message:3"] == [[]] * (len(parts) - 1)
    full = alice.client.get(f"/v1/sessions/{session['id']}/context?full=message:3").json()
    assert (shot.data in full["content"]) == sent
    assert ("this model's API takes no images" in full["content"]) != sent


def test_members_see_their_own_sessions_context_only(alice, bob, outsider, admin, demo):
    for other in (bob, outsider):
        error_of(other.client.get(f"/v1/sessions/{demo['id']}/context"), 404, "not_found")
        error_of(other.client.post(f"/v1/sessions/{demo['id']}/context/try", {},
                                   format="json"), 404, "not_found")
    assert admin.client.get(f"/v1/sessions/{demo['id']}/context").status_code == 200


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
        assert body["provider_count"] == {"counter": "provider", "endpoints": [],
                                          "template_checked": False, "fallback": None}
        parts = body["system"] + body["tools"] + body["messages"]
        assert sum(p["tokens"] for p in parts) + body["framing"] == expected
        # An unreachable counter, or a server without one, leaves the tokenizer's count, and
        # the snapshot says so.
        server.reply(503, {"type": "error", "error": {"type": "api_error", "message": "down"}})
        fallen = snapshot(alice, session, "?counted=provider")
        assert fallen["counted"] == "tokenizer" and fallen["provider_count"]["counter"] is None
        assert "count endpoint failed" in fallen["provider_count"]["fallback"]
        assert "tokenizer" in fallen["provider_count"]["fallback"]
        server.reply(404, {"error": {"message": "Not Found"}})
        fallen = snapshot(alice, session, "?counted=provider")
        assert fallen["counted"] == "tokenizer"
        assert "HTTP 404" in fallen["provider_count"]["fallback"]
    finally:
        server.close()


def test_an_inspection_asks_the_counter_once_per_request(alice, make_agent, make_session,
                                                         hango_settings):
    """Near its budget summarization measures the request with the provider's counter, as a
    run does, and ``?counted=provider`` asks for the total of that same request: one ask (on
    OpenAI, whose requests carry no cache marker, the two are the same request)."""
    from tests.support.replay import ReplayServer

    server = ReplayServer()
    counter = "/responses/input_tokens"
    try:
        hango_settings(provider_max_retries=0, run_inline=False, broker_url="",
                       openai_api_key="test-key", openai_base_url=server.url)
        agent = make_agent(alice, model="openai:gpt-4o")
        session = make_session(alice, agent_id=agent["id"])
        posted = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                   {"content": "hi"}, format="json").json()
        # The run executes the agent's version it was made with: ended, the next run's call
        # (the snapshot's) is made with the version the PATCH below makes.
        alice.client.post(f"/v1/runs/{posted['run']['id']}/cancel")
        measured = snapshot(alice, session)["compaction"]["tokens"]
        assert alice.client.patch(f"/v1/agents/{agent['id']}", {"config": {"summarization": {
            "trigger_tokens": measured}}}, format="json").status_code == 200
        server.always(counter, {"object": "response.input_tokens", "input_tokens": measured - 1})
        body = snapshot(alice, session, "?counted=provider")
        assert (body["counted"], body["totals"]["after"]) == ("provider", measured - 1)
        assert body["compaction"]["tokens"] == measured - 1 and not body["would_compact"]
        assert len(server.requests_to(counter)) == 1
        # A counter that fails is not asked again for the same request either.
        server.always(counter, {"error": {"message": "down"}}, status=503)
        assert snapshot(alice, session, "?counted=provider")["counted"] == "tokenizer"
        assert len(server.requests_to(counter)) == 2
    finally:
        server.close()


def test_the_counts_a_run_stored_are_the_ones_shown(alice, make_agent, make_session,
                                                   inline_runs, serve_model):
    """A run stores each message's count with the key of the tokenizer that made it; the
    inspector takes a count stored under its own tokenizer's key instead of counting again
    (made wrong here on purpose, to see it is taken), and counts one stored under another."""
    from harness.serde import content_from_json
    from harness.tokens.tokenizers import tokenizer_for
    from runs.history import drop_shared_messages

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
    from inspector.selectors import context_snapshot

    session = Session.objects.select_related("agent", "tenant").get(
        pk=make_session(alice, agent_id=make_agent(alice)["id"])["id"])
    context_snapshot(session=session)  # the process's first look loads what it loads once
    with CaptureQueriesContext(connection) as queries:
        context_snapshot(session=session)
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 1, statements
    assert "statement_timeout" in statements[0] and "pending_messages" in statements[0]


def test_a_preview_shows_the_wire_of_the_agents_model_now(alice, make_agent, make_session):
    """Previews are kept per decoded message and per wire: the same stored rows show a failed
    result marked in its content on OpenAI's wire and flagged, unmarked, on Anthropic's."""
    from harness.providers.openai_wire import ERROR_PREFIX

    agent = make_agent(alice, model="openai:gpt-4o")
    session = make_session(alice, agent_id=agent["id"])
    for seq, role, content in (
            (1, "user", [{"type": "text", "text": "run it"}]),
            (2, "assistant", [{"type": "tool_use", "id": "c1", "name": "echo",
                               "input": {"text": "x"}}]),
            (3, "user", [{"type": "tool_result", "tool_use_id": "c1", "content": "boom",
                          "is_error": True}])):
        Message.objects.create(session_id=session["id"], seq=seq, role=role, content=content)

    def result_preview() -> str:
        return snapshot(alice, session)["messages"][2]["preview"]

    assert result_preview() == f"→ {ERROR_PREFIX}boom"
    assert alice.client.patch(f"/v1/agents/{agent['id']}", {
        "model": "anthropic:claude-sonnet-4-6"}, format="json").status_code == 200
    assert result_preview() == "→ boom"


def test_a_call_a_run_would_refuse_says_so(alice, make_session):
    """One message longer than the window leaves: nothing older to summarize, too long to send
    whole. A run stops there (context_overflow); the snapshot says why."""
    session = make_session(alice)
    Message.objects.create(session_id=session["id"], seq=1, role="user",
                           content=[{"type": "text", "text": "word " * 30_000}])
    body = snapshot(alice, session)
    assert body["would_compact"] is True
    assert "no older messages can be summarized away" in body["compaction"]["would_fail"]
    assert body["would_fail"] == body["compaction"]["would_fail"]
    assert [p["id"] for p in body["messages"]] == ["message:1"]  # shown as assembled
