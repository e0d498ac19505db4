"""The inspector never lies: with the agent on the OpenAI-compatible adapter and, separately, the
Anthropic adapter, both pointed at a local HTTP server that records each request body, the
included parts of an inspect snapshot — their full contents, in order — mapped by the adapter
are byte for byte what the next model call sends: a new run's first, before any override and
after a message exclude, a system replace and a tool exclude; and the call of a run resuming
from a pause for approval, with overrides saved during the pause."""

from __future__ import annotations

import json

import pytest

from harness.messages import CacheControl, Message, Request, TextBlock, ToolDef
from harness.providers import anthropic, openai_compat
from harness.serde import content_from_json
from runs import tasks
from runs.models import Message as StoredMessage
from runs.models import Run, Session
from tests.support.replay import ReplayServer, wire
from tests.support.wire_count import o200k, openai_input_tokens

# Runs stream (HANGO_STREAM_DELTAS): the server answers in each API's streaming wire format.
MODELS = {
    "openai": ("openai:gpt-4o", "openai_stream_text.sse", openai_compat._map_request,
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
    messages = [Message(role=roles[p["id"]], content=content_from_json(json.loads(full(p["id"]))))
                for p in snapshot["messages"] if p["included"]]
    return Request(model="", system=tuple(system), tools=tuple(tools), messages=tuple(messages))


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
        if adapter == "openai":
            # The total the inspector showed, against the body sent recounted from its bytes by
            # OpenAI's published rules on a path of its own; the system blocks' joins may merge
            # a token with their neighbours, which the parts count apart.
            inspected = observed["inspected"]
            joins = sum(p["included"] for p in inspected["system"]) - 1
            recounted = openai_input_tokens(observed["sent"], o200k())
            assert abs(inspected["totals"]["after"] - recounted) <= joins, (
                inspected["totals"]["after"], recounted)
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
    if adapter == "openai":
        joins = sum(p["included"] for p in decided["system"]) - 1
        recounted = openai_input_tokens(sent, o200k())
        assert abs(decided["totals"]["after"] - recounted) <= joins
