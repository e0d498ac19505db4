"""runs.intake.selectors: a run's own model calls read back with the prints of what they sent, the
cache figures each assistant message's event carries, and a stream's read on the engine the
suite runs on."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection

from accounts.models import UsageRecord
from harness import fingerprint
from runs.intake import selectors
from runs.intake.selectors import run_calls
from runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_run(alice, make_session, inline_runs) -> Run:
    """A completed demo run: five turns, each one model call."""
    session = make_session(alice)
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": "count these four words"}, format="json")
    assert response.json()["run"]["status"] == "completed"
    return Run.objects.select_related("session").get(pk=response.json()["run"]["id"])


def test_each_call_of_a_run_stores_its_print_whole_then_as_edits(demo_run):
    stored = [bytes(p) for p in UsageRecord.objects.filter(run_id=demo_run.pk).order_by(
        "dedupe_key").values_list("request_print", flat=True)]
    assert len(stored) == 5
    assert fingerprint.is_whole(stored[0])
    assert not any(fingerprint.is_whole(p) for p in stored[1:])
    # An edit is a few bytes: the turn's new messages and what changed, not the whole request.
    assert all(len(p) < len(stored[0]) for p in stored[1:])

    calls = run_calls(demo_run.pk, tenant_id=demo_run.session.tenant_id,
                      since=demo_run.created_at)
    assert [c.turn for c in calls] == [1, 2, 3, 4, 5]
    assert calls[1:] and all(c.sent is not None for c in calls)
    messages = [[p.part for p in c.sent.parts if p.part.startswith("message:")] for c in calls]
    assert messages == [[f"message:{i}" for i in range(1, 2 * n)] for n in range(1, 6)]
    assert all(c.sent.cached_tokens > 0 for c in calls)  # the agent's prompt and the tools


def test_an_assistant_message_s_event_shows_its_call_s_cache_figures(alice, demo_run):
    events = alice.client.get(f"/v1/runs/{demo_run.pk}/events").json()["results"]
    created = [e["data"] for e in events if e["type"] == "message.created"]
    answers = [d for d in created if d["role"] == "assistant"]
    assert [d["turn"] for d in answers] == [1, 2, 3, 4, 5]
    calls = run_calls(demo_run.pk, tenant_id=demo_run.session.tenant_id,
                      since=demo_run.created_at)
    for data, call in zip(answers, calls, strict=True):
        assert data["call"] == {
            "turn": call.turn, "input_tokens": call.usage.input_tokens,
            "cache_read_tokens": call.usage.cache_read_tokens,
            "cache_write_tokens": call.usage.cache_write_tokens,
            "cache_read_ratio": call.cache_read_ratio and round(call.cache_read_ratio, 4),
            "predicted_cached_tokens": call.sent.cached_tokens}
    assert not any("call" in d for d in created if d["role"] == "user")


def test_a_call_sent_before_prints_were_kept_reads_back_without_one(demo_run):
    UsageRecord.objects.filter(run_id=demo_run.pk).update(request_print=None)
    calls = run_calls(demo_run.pk, tenant_id=demo_run.session.tenant_id,
                      since=demo_run.created_at)
    assert [c.sent for c in calls] == [None] * 5


def test_a_stream_reads_without_waiting_for_sqlite_s_write_lock(waiting_run):
    """On SQLite every transaction begins IMMEDIATE (it takes the write lock): a stream's read
    takes none, so a thousand polls never queue behind a run committing its turn, nor hold up
    the next commit."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write lock: PostgreSQL reads from a snapshot anyway")
    writer = sqlite3.connect(connection.settings_dict["NAME"], timeout=0)
    try:
        writer.execute("BEGIN IMMEDIATE")  # a turn's commit, under way
        # A read that took the lock would wait its 20 s, then fail ("database is locked").
        read = selectors.stream_read(run_id=waiting_run.pk, after=0, limit=100)
    finally:
        writer.rollback()
        writer.close()
    assert read.status == "queued" and [e.type for e in read.events] == ["run.status"]
