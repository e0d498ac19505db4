"""POST /v1/sessions/{id}/context: the snapshot of a selection before it is saved — the override
set in place of the stored ones, assembled as the GET assembles, checked as the PUTs check."""

from __future__ import annotations

import pytest

from accounts.models import AuditEntry
from context.models import ContextOverride
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
