"""POST /v1/sessions/{id}/context: the snapshot of a selection before it is saved — the override
set in place of the stored ones, assembled as the GET assembles, checked as the PUTs check."""

from __future__ import annotations

import pytest

from accounts.models import AuditEntry
from context.models import ContextOverride
from runs.models import Message
from tests.support.api import error_of

SELECTION = [{"part": "message:5", "action": "exclude"},
             {"part": "system:agent", "action": "replace", "replacement": "Be terse."},
             {"part": "tool:echo", "action": "exclude"},
             {"part": "system:memory:/memories/gone.md", "action": "exclude"}]  # stale




def preview(caller, session, overrides: list) -> object:
    return caller.client.post(f"/v1/sessions/{session['id']}/context",
                              {"overrides": overrides}, format="json")


def test_a_preview_is_the_snapshot_the_saved_selection_gives(alice, demo):
    previewed = preview(alice, demo, SELECTION)
    assert previewed.status_code == 200, previewed.content
    assert previewed["Content-Type"] == "application/json"
    agent = [o for o in SELECTION if o["part"].startswith(("system:", "tool:"))]
    session = [o for o in SELECTION if o["part"].startswith("message:")]
    assert alice.client.put(f"/v1/agents/{demo['agent']}/context-overrides", agent,
                            format="json").status_code == 200
    assert alice.client.put(f"/v1/sessions/{demo['id']}/context-overrides", session,
                            format="json").json()["added"] == ["message:4"]
    saved = alice.client.get(f"/v1/sessions/{demo['id']}/context").json()
    assert previewed.json() == saved
    by_id = {p["id"]: p for p in saved["system"] + saved["tools"] + saved["messages"]}
    assert by_id["message:4"]["override"] == "exclude"  # the pair, as the PUT adds it
    assert saved["overrides"]["stale"] == ["system:memory:/memories/gone.md"]


def test_a_preview_replaces_the_stored_set_and_writes_nothing(alice, demo):
    alice.client.put(f"/v1/sessions/{demo['id']}/context-overrides",
                     [{"part": "message:7", "action": "exclude"}], format="json")
    rows, audits = ContextOverride.objects.count(), AuditEntry.objects.count()
    body = preview(alice, demo, []).json()  # the stored exclusion taken back
    assert all(p["included"] and p["override"] is None for p in body["messages"])
    assert body["totals"]["before"] == body["totals"]["after"]
    assert body["overrides"] == {"active": 0, "stale": []}
    assert (ContextOverride.objects.count(), AuditEntry.objects.count()) == (rows, audits)
    stored = alice.client.get(f"/v1/sessions/{demo['id']}/context").json()
    assert not next(p for p in stored["messages"] if p["id"] == "message:7")["included"]


@pytest.mark.parametrize("overrides, says", [
    ([{"part": "tool:echo", "action": "replace", "replacement": "x"}], "only be excluded"),
    ([{"part": "message:1", "action": "exclude"}], "starts with an assistant message"),
    ([{"part": "message:2", "action": "exclude"}, {"part": "message:2", "action": "exclude"}],
     "more than one override"),
    ([{"part": "nonsense", "action": "exclude"}], "is not a part"),
])
def test_a_selection_a_put_would_refuse_is_422(alice, demo, overrides, says):
    error = error_of(preview(alice, demo, overrides), 422, "validation_error")
    assert says in " ".join(error["detail"]["overrides"])


def test_a_malformed_preview_body_is_422(alice, demo):
    error = error_of(alice.client.post(f"/v1/sessions/{demo['id']}/context",
                                       {"overrides": [{"part": "message:1"}]}, format="json"),
                     422, "validation_error")
    assert "action" in str(error["detail"])


def preview_message(caller, session, message, **more):
    return caller.client.post(f"/v1/sessions/{session['id']}/context",
                              {"message": message, **more}, format="json")


def test_a_previewed_message_is_the_next_part_and_nothing_is_posted(alice, demo):
    response = preview_message(alice, demo, "and now count these")
    assert response.status_code == 200, response.content
    body = response.json()
    last = body["messages"][-1]
    assert (last["id"], last["label"], last["included"]) == (
        "message:11", "#11 user (previewed, not posted)", True)
    assert last["preview"] == "and now count these"
    assert Message.objects.filter(session_id=demo["id"]).count() == 10
    # Without overrides in the body the stored ones apply, as in the GET.
    assert alice.client.put(f"/v1/sessions/{demo['id']}/context-overrides",
                            [{"part": "message:1", "action": "replace", "replacement": "hi"}],
                            format="json").status_code == 200
    assert preview_message(alice, demo, "x").json()["overrides"]["active"] == 1
    assert preview_message(alice, demo, "x", overrides=[]).json()["overrides"]["active"] == 0


def test_would_compact_counts_the_previewed_message(alice, demo):
    whole = alice.client.get(f"/v1/sessions/{demo['id']}/context").json()["compaction"]["tokens"]
    long = "count these words as well " * 40
    assert alice.client.patch(f"/v1/agents/{demo['agent']}", {"config": {"summarization": {
        "trigger_tokens": whole + 20}}}, format="json").status_code == 200
    assert alice.client.get(f"/v1/sessions/{demo['id']}/context").json()["would_compact"] is False
    body = preview_message(alice, demo, long).json()
    assert body["would_compact"] is True and body["compaction"]["tokens"] > whole + 20
    assert body["messages"][0]["id"] == "summary"
    assert body["messages"][-1]["label"] == "#11 user (previewed, not posted)"


def test_a_message_cannot_be_previewed_while_a_run_is_active(alice, make_agent, make_session,
                                                             inline_runs):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ["approve"]}})
    session = make_session(alice, agent_id=agent["id"])
    run = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                            {"content": "count these four words"}, format="json").json()["run"]
    assert run["status"] == "awaiting_approval"
    error = error_of(preview_message(alice, session, "more"), 409)
    assert error["detail"] == {"active_run": run["id"]}


@pytest.mark.parametrize("message", ["", "  ", [], [{"type": "tool_use", "id": "x", "name": "e",
                                                    "input": {}}], 7])
def test_a_bad_previewed_message_is_422(alice, demo, message):
    error_of(preview_message(alice, demo, message), 422)
