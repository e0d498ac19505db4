"""Context overrides through the API and a real run (inline, on PostgreSQL): what a PUT saves is
what the next run of the session leaves out, while the stored history keeps every message."""

from __future__ import annotations

from harness import telemetry
from tests.support.harness import spans_named


def post(caller, session_id: str, content: str) -> dict:
    response = caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": content},
                                  format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def test_an_excluded_message_is_absent_from_the_next_run_and_still_stored(
        alice, make_session, inline_runs, provider, spans):
    session = make_session(alice)
    assert post(alice, session["id"], "count these four words")["status"] == "completed"
    response = alice.client.put(f"/v1/sessions/{session['id']}/context-overrides",
                                [{"part": "message:5", "action": "exclude"}], format="json")
    assert response.json()["added"] == ["message:4"]
    first_run_calls = len(provider.requests)
    agent = alice.client.put(f"/v1/agents/{session['agent']}/context-overrides",
                             [{"part": "tool:echo", "action": "exclude"},
                              {"part": "system:agent", "action": "replace",
                               "replacement": "You help, briefly."}], format="json")
    assert agent.status_code == 200

    assert post(alice, session["id"], "and these three")["status"] == "completed"
    requests = provider.requests[first_run_calls:]
    stored = alice.client.get(f"/v1/sessions/{session['id']}/messages").json()["results"]
    by_seq = {m["seq"]: m for m in stored}
    assert {4, 5} <= set(by_seq)  # the stored history keeps them
    for request in requests:
        texts = [b.text for m in request.messages for b in m.content if b.type == "text"]
        results = [b for m in request.messages for b in m.tool_results]
        assert all(r.tool_use_id != by_seq[5]["content"][0]["tool_use_id"] for r in results)
        assert "count these four words" in texts[0]
        assert request.system[0].text == "You help, briefly."
        assert "echo" not in [t.name for t in request.tools]
    chats = spans_named(spans, telemetry.SPAN_CHAT)[-len(requests):]
    assert {c.attributes[telemetry.ATTR_CONTEXT_OVERRIDES] for c in chats} == {4}
    assert all(c.attributes[telemetry.ATTR_CONTEXT_EXCLUDED_TOKENS] > 0 for c in chats)
