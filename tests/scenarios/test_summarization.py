"""Compaction through the real worker service on PostgreSQL: the summary is stored on the session,
the next run starts from it, and the stored messages never change."""

from __future__ import annotations

from harness.history import SUMMARY_PREFIX, is_summary, validate
from runs.models import Session
from tests.support.history import assert_valid_history
from tests.support.summarization import LONG_TASK


def post(caller, session_id, content):
    response = caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": content},
                                  format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def test_two_runs_store_then_reuse_the_summary_and_keep_every_message(
        alice, make_agent, make_session, inline_runs, provider):
    agent = make_agent(alice, allowed_tools=["write_todos", "word_count"], config={
        "summarization": {"trigger_tokens": 1_000, "keep_messages": 4}})
    session_id = make_session(alice, agent["id"])["id"]

    first = post(alice, session_id, LONG_TASK)
    assert first["status"] == "completed", first
    session = Session.objects.get(pk=session_id)
    assert session.summary and session.summary_seq > 1
    summary_after_first = (session.summary, session.summary_seq)
    assert provider.summaries(), "the first run compacted its requests"
    first_requests = len(provider.runs())

    second = post(alice, session_id, "Thanks. Now count them again, please.")
    assert second["status"] == "completed", second
    later = provider.runs()[first_requests:]
    assert later, "the second run called the model"
    for request in later:
        assert is_summary(request.messages[0])
        assert validate(request.messages) == []
    # The second run started from the stored summary (reused as is, or extended).
    opening = later[0].messages[0].text.removeprefix(SUMMARY_PREFIX).strip()
    summaries_second = [r for r in provider.summaries() if r.messages[0].text.startswith(
        f"The summary so far:\n\n{summary_after_first[0]}")]
    assert opening == summary_after_first[0] or summaries_second
    session.refresh_from_db()
    assert session.summary_seq >= summary_after_first[1]

    # Stored history is untouched: every message is listed, in order, none is a summary.
    listed = alice.client.get(f"/v1/sessions/{session_id}/messages").json()["results"]
    stored = assert_valid_history(session_id)
    assert [m["seq"] for m in listed] == [m.seq for m in stored] == list(range(1, len(stored) + 1))
    assert listed[0]["content"] == [{"type": "text", "text": LONG_TASK}]
    texts = [b.get("text", "") for m in listed for b in m["content"]]
    assert not any(t.startswith(SUMMARY_PREFIX) for t in texts)
    # The demo takes five turns (four tool calls, an answer) whether or not it was compacted.
    assert first["turn"] == second["turn"] == 5 and len(listed) == 20
    assert "It has 6 words" in listed[-1]["content"][0]["text"]
