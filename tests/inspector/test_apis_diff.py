"""GET /v1/sessions/{id}/context?against=: the next call against one the session sent before."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import UsageRecord
from runs.models import Run
from tests.support.api import error_of

# A run id no tenant has; fixed, since pytest-xdist needs the same test ids in each process.
NO_RUN = "7f3c2a9e-5b1d-4c8e-a6f0-2d9b8e4c1a37"

pytestmark = pytest.mark.django_db


def against(caller, session, value: str):
    return caller.client.get(f"/v1/sessions/{session['id']}/context", {"against": value})


def diffed(caller, session, value: str) -> dict:
    response = against(caller, session, value)
    assert response.status_code == 200, response.content
    return response.json()["diff"]


def _run_id(session) -> str:
    return str(Run.objects.get(session_id=session["id"]).pk)


def test_against_the_last_call_only_the_answer_since_is_new(alice, demo):
    body = against(alice, demo, "last").json()
    diff = body["diff"]
    call = diff["against"].pop("call")
    assert diff["against"] == {"ref": f"{_run_id(demo)}:5", "run": _run_id(demo), "turn": 5}
    # What the cache did for that call, as its answer's event tells it.
    events = alice.client.get(f"/v1/runs/{_run_id(demo)}/events").json()["results"]
    told = [e["data"]["call"] for e in events
            if e["type"] == "message.created" and e["data"]["role"] == "assistant"]
    assert call == told[-1] and call["turn"] == 5 and call["predicted_cached_tokens"] > 0
    status = {p["id"]: p["status"] for p in diff["parts"]}
    assert status["message:10"] == "added"  # the answer of turn 5, sent from the next call on
    # A tool call's arguments come back from jsonb with their keys reordered (shorter first),
    # so a new run sends write_todos' calls with other bytes than the run that made them: true
    # of the wire, so shown changed (with no token delta).
    changed = {p["id"] for p in diff["parts"] if p["status"] == "changed"}
    assert changed & {f"message:{i}" for i in range(1, 10)} == {"message:2", "message:4",
                                                                "message:8"}
    assert all(p["delta"] == 0 for p in diff["parts"] if p["id"] in changed - {"system:todo"})
    assert {status[f"message:{i}"] for i in (1, 3, 5, 6, 7, 9)} == {"same"}
    assert status["system:agent"] == "same" and status["tool:echo"] == "same"
    assert diff["cache_break"] is None  # the agent's prompt and the tools are sent as they were
    answer = next(p for p in body["messages"] if p["id"] == "message:10")
    added = next(p for p in diff["parts"] if p["id"] == "message:10")
    assert (added["tokens"], added["tokens_before"], added["delta"]) == (answer["tokens"], 0,
                                                                         answer["tokens"])
    assert diff["totals"]["delta"] == diff["totals"]["after"] - diff["totals"]["before"]
    # The parts compared are the ones the snapshot shows as sent, with the same counts.
    shown = {p["id"]: p["tokens"] for g in ("system", "tools", "messages") for p in body[g]
             if p["included"]}
    assert {p["id"]: p["tokens"] for p in diff["parts"] if p["status"] != "removed"} == shown
    assert diff["cached_prefix"]["after"] == sum(
        p["tokens"] for g in ("system", "tools") for p in body[g] if p["cached_prefix"])


def test_a_replaced_system_prompt_breaks_the_cached_prefix(alice, demo):
    alice.client.put(f"/v1/agents/{demo['agent']}/context-overrides",
                     [{"part": "system:agent", "action": "replace",
                       "replacement": "Be terse: answer in one short sentence, never a table."}],
                     format="json")
    diff = diffed(alice, demo, "last")
    prompt = next(p for p in diff["parts"] if p["id"] == "system:agent")
    assert prompt["status"] == "changed" and prompt["delta"] > 0
    assert diff["cache_break"]["part"] == "system:agent"
    assert diff["cache_break"]["status"] == "changed"


def test_an_excluded_tool_is_removed_and_breaks_the_prefix_where_it_was(alice, demo):
    alice.client.put(f"/v1/agents/{demo['agent']}/context-overrides",
                     [{"part": "tool:echo", "action": "exclude"}], format="json")
    diff = diffed(alice, demo, "last")
    removed = next(p for p in diff["parts"] if p["id"] == "tool:echo")
    assert (removed["status"], removed["tokens"]) == ("removed", 0)
    assert removed["delta"] == -removed["tokens_before"] < 0
    assert diff["parts"][-1]["id"] == "tool:echo"  # the removed parts come last
    assert (diff["cache_break"]["part"], diff["cache_break"]["status"]) == ("tool:echo", "removed")


def test_against_an_earlier_turn_of_the_run(alice, demo):
    diff = diffed(alice, demo, f"{_run_id(demo)}:1")
    assert diff["against"]["turn"] == 1
    status = {p["id"]: p["status"] for p in diff["parts"]}
    assert status["message:1"] == "same"
    assert {status[f"message:{i}"] for i in range(2, 11)} == {"added"}


@pytest.mark.parametrize("value", ["", "first", "12", "not-a-uuid:1", f"{NO_RUN}:0",
                                   f"{NO_RUN}:-1", f"{NO_RUN}:x", NO_RUN])
def test_a_malformed_against_is_a_400(alice, demo, value):
    error_of(against(alice, demo, value), 400, "invalid_query")


def test_against_and_full_do_not_go_together(alice, demo):
    response = alice.client.get(f"/v1/sessions/{demo['id']}/context",
                                {"against": "last", "full": "message:1"})
    assert response.status_code == 400


def test_a_run_of_another_session_is_a_404(alice, demo, make_session):
    other = make_session(alice)
    assert against(alice, other, f"{_run_id(demo)}:1").status_code == 404
    assert against(alice, demo, f"{uuid.uuid4()}:1").status_code == 404


def test_a_turn_with_no_call_is_a_409(alice, demo):
    error = error_of(against(alice, demo, f"{_run_id(demo)}:6"), 409)
    assert error["detail"]["reason"] == "no_call"


def test_a_session_that_sent_nothing_is_a_409(alice, make_session):
    error = error_of(against(alice, make_session(alice), "last"), 409)
    assert error["detail"]["reason"] == "no_call"


def test_a_call_sent_before_prints_were_kept_is_a_409_that_says_so(alice, demo):
    UsageRecord.objects.filter(run_id=_run_id(demo)).update(request_print=None)
    for value in ("last", f"{_run_id(demo)}:2"):
        error = error_of(against(alice, demo, value), 409)
        assert error["detail"]["reason"] == "no_print"
        assert "before hango kept a print" in error["message"]


def test_another_tenant_s_or_member_s_session_is_a_404(alice, bob, outsider, demo):
    for caller in (bob, outsider):
        assert against(caller, demo, "last").status_code == 404
