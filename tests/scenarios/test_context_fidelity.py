"""The inspector never lies: with the agent on the OpenAI-compatible adapter and, separately, the
Anthropic adapter, both pointed at a local HTTP server that records each request body, the
included parts of an inspect snapshot — their full contents, in order — mapped by the adapter
are byte for byte what the next model call sends: a new run's first, before any override and
after a message exclude, a system replace and a tool exclude; the call of a run resuming from a
pause for approval, with overrides saved during the pause; and a call compacted first, with the
stored summary or a new one (whose text only the summarizer's call gives)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.history import summary_message
from harness.messages import CacheControl, Message, Request, TextBlock, ToolDef
from harness.providers import anthropic, openai_chat
from harness.serde import content_from_json
from runs.execution import tasks
from runs.models import Message as StoredMessage
from runs.models import Run, Session
from tests.support.replay import ReplayServer, wire, wire_json
from tests.support.wire_count import (
    anthropic_content_tokens,
    ctok_counter,
    o200k,
    openai_input_tokens,
)

# Runs stream (HANGO_STREAM_DELTAS): the server answers in each API's streaming wire format.
MODELS = {
    "openai": ("openai:gpt-4o", "openai_stream_text.sse", openai_chat.map_request,
               ("messages", "tools")),
    "anthropic": ("anthropic:claude-sonnet-4-6", "anthropic_stream_text.sse",
                  anthropic._map_request, ("system", "messages", "tools")),
}
HISTORY = [
    ("user", [{"type": "text", "text": "Echo 'alpha', then tell me how many words it has."}]),
    ("assistant", [{"type": "text", "text": "Echoing."},
                   {"type": "tool_use", "id": "call_1", "name": "echo",
                    "input": {"text": "alpha"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "call_1", "content": "alpha",
               "is_error": False}]),
    ("assistant", [{"type": "text", "text": "It said alpha: one word. Let me check."},
                   {"type": "tool_use", "id": "call_2", "name": "word_count",
                    "input": {"text": "alpha"}}]),
    # A rejected call: Anthropic's wire carries the flag, OpenAI's marks it in the content.
    ("user", [{"type": "tool_result", "tool_use_id": "call_2",
               "content": "The user rejected this call: not needed.", "is_error": True}]),
    ("assistant", [{"type": "text", "text": "One word, then."}]),
]


@pytest.fixture
def server():
    replay = ReplayServer()
    yield replay
    replay.close()


def snapshot_request(caller, session_id: str) -> Request:
    """The request the snapshot says the next call sends, rebuilt from the parts' full contents
    (the inspector's own words, over HTTP), with the cache mark where it says the breakpoint is."""
    url = f"/v1/sessions/{session_id}/context"
    snapshot = caller.client.get(url).json()

    def full(part: str) -> str:
        return caller.client.get(url, {"full": part}).json()["content"]

    system = [TextBlock(text=full(p["id"])) for p in snapshot["system"] if p["included"]]
    if snapshot["cache_breakpoint"] is not None:
        marked = system[snapshot["cache_breakpoint"]]
        system[snapshot["cache_breakpoint"]] = TextBlock(text=marked.text,
                                                         cache_control=CacheControl())
    tools = [ToolDef(**json.loads(full(p["id"]))) for p in snapshot["tools"] if p["included"]]
    roles = {f"message:{m.seq}": m.role for m in StoredMessage.objects.filter(
        session_id=session_id)}
    if snapshot["batch_part"] is not None:  # a paused batch's results, not stored yet
        roles[snapshot["batch_part"]] = "user"
    roles["summary"] = "user"  # a compacted call's summary
    messages = [Message(role=roles[p["id"]], content=content_from_json(json.loads(full(p["id"]))))
                for p in snapshot["messages"] if p["included"]]
    return Request(model="", system=tuple(system), tools=tuple(tools), messages=tuple(messages))


def recount_matches(adapter: str, inspected: dict, sent: dict) -> None:
    """The snapshot against the body sent, recounted from its bytes on a path of its own.
    OpenAI: the total, by OpenAI's published rules (the system blocks' joins may merge a token
    with their neighbours, which the parts count apart). Anthropic, whose framing has no
    published rule: the included parts' content, with ctok over the wire JSON."""
    included = sum(p["tokens"] for g in ("system", "tools", "messages") for p in inspected[g]
                   if p["included"])
    if adapter == "openai":
        joins = sum(p["included"] for p in inspected["system"]) - 1
        recounted = openai_input_tokens(sent, o200k())
        assert abs(inspected["totals"]["after"] - recounted) <= joins, (
            inspected["totals"]["after"], recounted)
    else:
        assert included == anthropic_content_tokens(sent, ctok_counter("3.0"))
    assert inspected["totals"]["after"] == included + inspected["framing"]


def next_run_sends(caller, session_id: str, server: ReplayServer, adapter: str) -> dict:
    """Post a message (the run waits, queued), inspect, then run it: the first call's body."""
    _, canned, _, _ = MODELS[adapter]
    response = caller.client.post(f"/v1/sessions/{session_id}/messages",
                                  {"content": "Now count 'alpha beta'."}, format="json")
    assert response.status_code == 202, response.content
    seen = len(server.requests)
    expected = snapshot_request(caller, session_id)
    inspected = caller.client.get(f"/v1/sessions/{session_id}/context").json()
    assert len(server.requests) == seen  # inspecting called no model (nor counted tokens)
    server.reply_sse(wire(canned))
    tasks.advance_run(response.json()["run"]["id"])
    assert Run.objects.get(pk=response.json()["run"]["id"]).status == "completed"
    return {"expected": expected, "sent": server.requests[seen].body, "inspected": inspected}


@pytest.mark.parametrize("adapter", sorted(MODELS))
def test_the_snapshot_is_what_the_next_call_sends(adapter, alice, make_agent, hango_settings,
                                                 server):
    model, _, map_request, keys = MODELS[adapter]
    hango_settings(run_inline=False, broker_url="", provider_max_retries=0,
                   **{f"{adapter}_api_key": "test-key", f"{adapter}_base_url": server.url})
    agent = make_agent(alice, model=model, system_prompt="You count words.")
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="fidelity")
    for seq, (role, content) in enumerate(HISTORY, start=1):
        StoredMessage.objects.create(session=session, seq=seq, role=role, content=content)

    def compare() -> dict:
        observed = next_run_sends(alice, str(session.pk), server, adapter)
        mapped = map_request(observed["expected"])
        for key in keys:
            assert mapped.get(key) == observed["sent"].get(key), key
        recount_matches(adapter, observed["inspected"], observed["sent"])
        return observed["sent"]

    first = compare()
    rejected = "The user rejected this call: not needed."
    full = alice.client.get(f"/v1/sessions/{session.pk}/context", {"full": "message:5"}).json()
    [shown] = json.loads(full["content"])
    if adapter == "openai":
        assert {"role": "tool", "tool_call_id": "call_2",
                "content": f"Error: {rejected}"} in first["messages"]
        # The inspector shows the result as the wire has it: no flag the model never sees.
        assert (shown["content"], shown["is_error"]) == (f"Error: {rejected}", False)
    else:
        assert (shown["content"], shown["is_error"]) == (rejected, True)
        assert {"type": "tool_result", "tool_use_id": "call_2", "content": rejected,
                "is_error": True} in first["messages"][4]["content"]
    assert any(t.get("name", t.get("function", {}).get("name")) == "echo" for t in first["tools"])

    overrides = alice.client.put(f"/v1/sessions/{session.pk}/context-overrides",
                                 [{"part": "message:3", "action": "exclude"}], format="json")
    assert overrides.json()["added"] == ["message:2"]
    agent_overrides = alice.client.put(f"/v1/agents/{agent['id']}/context-overrides", [
        {"part": "system:agent", "action": "replace", "replacement": "You count, tersely."},
        {"part": "tool:echo", "action": "exclude"}], format="json")
    assert agent_overrides.status_code == 200
    second = compare()
    tool_names = [t.get("name", t.get("function", {}).get("name")) for t in second["tools"]]
    assert "echo" not in tool_names and "word_count" in tool_names
    assert "call_1" not in json.dumps(second["messages"])
    assert "You count, tersely." in json.dumps(second)
    assert "You count words." not in json.dumps(second)


def sends_next(server: ReplayServer, run_id: str, canned: str) -> dict:
    """Advance the run one slice, its model answering ``canned``: the body of its one call."""
    seen = len(server.requests)
    server.reply_sse(wire(canned))
    tasks.advance_run(run_id)
    [sent] = server.requests[seen:]
    return sent.body


@pytest.mark.parametrize("adapter", sorted(MODELS))
def test_a_paused_run_is_shown_as_it_resumes(adapter, alice, make_agent, hango_settings,
                                            server):
    model, text, map_request, keys = MODELS[adapter]
    hango_settings(run_inline=False, broker_url="", provider_max_retries=0,
                   **{f"{adapter}_api_key": "test-key", f"{adapter}_base_url": server.url})
    agent = make_agent(alice, model=model, system_prompt="You count words.",
                       config={"interrupt_on": {"word_count": ["approve", "reject"]}})
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="paused")
    for seq, (role, content) in enumerate(HISTORY, start=1):
        StoredMessage.objects.create(session=session, seq=seq, role=role, content=content)
    url = f"/v1/sessions/{session.pk}/context"
    posted = alice.client.post(f"/v1/sessions/{session.pk}/messages",
                               {"content": "Count 'one two three'."}, format="json").json()
    run_id = posted["run"]["id"]
    tool_use = "anthropic_stream_tool_use.sse" if adapter == "anthropic" else \
        "openai_stream_tool_calls.sse"
    sends_next(server, run_id, tool_use)
    assert Run.objects.get(pk=run_id).status == "awaiting_approval"
    [call] = StoredMessage.objects.get(session=session, seq=8).content[-1:]

    # Paused: the next call sends the batch's results once they are known; until a decision,
    # the waiting call's is empty and said to be waiting.
    waiting = alice.client.get(url).json()
    assert waiting["run"] == {"id": run_id, "status": "awaiting_approval", "turn": 1}
    assert waiting["batch_part"] == "message:9"
    assert waiting["pending_calls"] == [{"tool_use_id": call["id"], "name": "word_count",
                                         "outlook": "awaiting_decision"}]
    assert not any(p["id"].startswith("repair:") for p in waiting["messages"])
    [shown] = json.loads(alice.client.get(url, {"full": "message:9"}).json()["content"])
    assert (shown["tool_use_id"], shown["content"]) == (call["id"], "")

    # Overrides saved during the pause apply to the call after it.
    assert alice.client.put(f"/v1/agents/{agent['id']}/context-overrides", [
        {"part": "system:agent", "action": "replace",
         "replacement": "You count, tersely."}], format="json").status_code == 200
    assert alice.client.put(f"/v1/sessions/{session.pk}/context-overrides", [
        {"part": "message:3", "action": "exclude"}], format="json").status_code == 200
    approved = alice.client.post(f"/v1/runs/{run_id}/approve", {"decisions": [
        {"tool_use_id": call["id"], "type": "reject", "message": "not now"}]}, format="json")
    assert approved.status_code == 202, approved.content
    decided = alice.client.get(url).json()
    assert decided["run"]["status"] == "queued"
    assert decided["pending_calls"][0]["outlook"] == "answered"
    expected = map_request(snapshot_request(alice, str(session.pk)))
    sent = sends_next(server, run_id, text)
    assert Run.objects.get(pk=run_id).status == "completed"
    for key in keys:
        assert expected.get(key) == sent.get(key), key
    assert "You count, tersely." in json.dumps(sent) and "call_1" not in json.dumps(sent)
    assert "not now" in json.dumps(sent["messages"][-1])
    recount_matches(adapter, decided, sent)


# Each provider's count endpoint (Anthropic's count_tokens, OpenAI's input-token count).
COUNTERS = {"anthropic": "/v1/messages/count_tokens", "openai": "/responses/input_tokens"}
SUMMARIZER = {"anthropic": "anthropic_message_text.json", "openai": "openai_completion_text.json"}
STORED_SUMMARY = "The user had 'alpha' echoed and counted: one word."


@pytest.mark.parametrize("stored", [True, False], ids=["stored-summary", "new-summary"])
@pytest.mark.parametrize("adapter", sorted(MODELS))
def test_a_call_compacted_first_is_shown_as_it_is_sent(adapter, stored, alice, make_agent,
                                                      hango_settings, server):
    model, text, map_request, keys = MODELS[adapter]
    hango_settings(run_inline=False, broker_url="", provider_max_retries=0,
                   **{f"{adapter}_api_key": "test-key", f"{adapter}_base_url": server.url})
    # The provider's counter decides near the budget, for the inspector as for the run: over.
    counter = COUNTERS[adapter]
    server.always(counter, {"object": "response.input_tokens", "input_tokens": 10 ** 6})
    agent = make_agent(alice, model=model, system_prompt="You count words.")

    def compacting() -> tuple[Session, str]:
        """A session with the history and a message posted: its run queued."""
        session = Session.objects.create(
            tenant_id=alice.member.tenant_id, agent_id=agent["id"], member=alice.member,
            title="compacting", summary=STORED_SUMMARY if stored else "",
            summary_seq=5 if stored else 0)
        for seq, (role, content) in enumerate(HISTORY, start=1):
            StoredMessage.objects.create(session=session, seq=seq, role=role, content=content)
        return session, alice.client.post(f"/v1/sessions/{session.pk}/messages",
                                          {"content": "Now count 'alpha beta'."},
                                          format="json").json()["run"]["id"]

    # The budget is set just under what the next call holds, measured on a twin session: a run
    # executes the agent version it was made with, so the change comes before the real post.
    twin, _ = compacting()
    whole = alice.client.get(f"/v1/sessions/{twin.pk}/context").json()["compaction"]["tokens"]
    assert alice.client.patch(f"/v1/agents/{agent['id']}", {"config": {"summarization": {
        "trigger_tokens": whole - 40, "keep_messages": 2, "summary_max_tokens": 16}}},
        format="json").status_code == 200
    session, run_id = compacting()
    url = f"/v1/sessions/{session.pk}/context"

    inspected = alice.client.get(url).json()
    compaction = inspected["compaction"]
    assert inspected["would_compact"]
    assert compaction["summary"] == ("reused" if stored else "created")
    assert compaction["summary_pending"] is not stored
    assert compaction["summarized"] == {"from": "message:1", "through": "message:5"}
    summary, *messages = inspected["messages"]
    assert (summary["id"], summary["included"]) == ("summary", True)
    assert [m["id"] for m in messages if m["summarized"]] == [f"message:{i}" for i in range(1, 6)]
    assert [m["id"] for m in messages if m["included"]] == ["message:6", "message:7"]

    shown = snapshot_request(alice, str(session.pk))
    seen = len(server.requests)
    if not stored:
        server.reply(200, wire_json(SUMMARIZER[adapter]))
    server.reply_sse(wire(text))
    tasks.advance_run(run_id)
    assert Run.objects.get(pk=run_id).status == "completed"
    assert server.requests_to(counter)
    calls = [r.body for r in server.requests[seen:] if not r.path.startswith(counter)]
    assert len(calls) == (1 if stored else 2)  # a new summary is one summarizer call first
    session.refresh_from_db()
    if not stored:  # what the snapshot could not know: the text of a summary made on sending
        assert shown.messages[0].text == "Summary of the earlier conversation: "
        shown = replace(shown, messages=(summary_message(session.summary), *shown.messages[1:]))
    expected = map_request(shown)
    for key in keys:
        assert expected.get(key) == calls[-1].get(key), key
    assert (session.summary == STORED_SUMMARY) is stored
    if stored:  # a summary made on sending is not in the snapshot's count
        recount_matches(adapter, inspected, calls[-1])


def parts_of(snapshot: dict) -> list[tuple[str, int, bool]]:
    return [(p["id"], p["tokens"], p["included"])
            for group in ("system", "tools", "messages") for p in snapshot[group]]


@pytest.mark.parametrize("adapter", sorted(MODELS))
def test_a_dangling_call_is_repaired_as_the_run_repairs_it(adapter, alice, make_agent,
                                                           hango_settings, server):
    """The history ends with a call whose result never came (a run cut before its tools ran):
    the next message carries the repair's result in the same user message, in inspect as in
    the run."""
    model, text, map_request, keys = MODELS[adapter]
    hango_settings(run_inline=False, broker_url="", provider_max_retries=0,
                   **{f"{adapter}_api_key": "test-key", f"{adapter}_base_url": server.url})
    agent = make_agent(alice, model=model, system_prompt="You count words.")
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="dangling")
    for seq, (role, content) in enumerate(HISTORY[:4], start=1):
        StoredMessage.objects.create(session=session, seq=seq, role=role, content=content)
    url = f"/v1/sessions/{session.pk}/context"
    alone = alice.client.get(url).json()["messages"][-1]
    assert alone["id"] == "repair:1" and alone["included"]
    assert alone["label"].endswith("a message posted next is sent with it, in the same user "
                                   "message")
    previewed = alice.client.post(url, {"message": "Go on."}, format="json").json()
    assert not any(p["id"].startswith("repair:") for p in previewed["messages"])
    assert previewed["messages"][-1]["label"] == "#5 user (previewed, not posted)"
    assert StoredMessage.objects.filter(session=session).count() == 4  # nothing posted

    run_id = alice.client.post(f"/v1/sessions/{session.pk}/messages", {"content": "Go on."},
                               format="json").json()["run"]["id"]
    posted = alice.client.get(url).json()
    assert parts_of(posted) == parts_of(previewed)
    assert posted["totals"] == previewed["totals"]
    [merged] = json.loads(alice.client.get(url, {"full": "message:5"}).json()["content"])[:1]
    assert merged["type"] == "tool_result" and merged["tool_use_id"] == "call_2"
    expected = map_request(snapshot_request(alice, str(session.pk)))
    sent = sends_next(server, run_id, text)
    for key in keys:
        assert expected.get(key) == sent.get(key), key
    recount_matches(adapter, posted, sent)
