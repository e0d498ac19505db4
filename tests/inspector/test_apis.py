"""The override routes: GET and PUT for an agent (system and tool parts) and for a session
(message parts and the summary); pairs added, invalid sets refused with 422, stale parts kept,
an audit row without the replacement text."""

from __future__ import annotations

import json

import pytest

from accounts.models import AuditEntry
from context.models import ContextOverride
from runs.models import Session
from tests.support.api import error_of


def put(caller, url: str, overrides: list) -> object:
    return caller.client.put(url, overrides, format="json")


def session_url(session) -> str:
    return f"/v1/sessions/{session['id']}/context-overrides"


def test_an_empty_set_at_first_and_an_empty_list_clears(alice, demo):
    url = session_url(demo)
    assert alice.client.get(url).json() == {"overrides": [], "added": []}
    assert put(alice, url, [{"part": "message:10", "action": "exclude"}]).status_code == 200
    assert put(alice, url, []).json() == {"overrides": [], "added": []}
    assert not ContextOverride.objects.exists()


def test_excluding_a_result_excludes_its_call_and_says_so(alice, demo):
    response = put(alice, session_url(demo), [{"part": "message:5", "action": "exclude"}])
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["added"] == ["message:4"]
    assert body["overrides"] == [
        {"part": "message:5", "action": "exclude", "replacement": None},
        {"part": "message:4", "action": "exclude", "replacement": None}]
    assert alice.client.get(session_url(demo)).json()["overrides"] == body["overrides"]


def test_agent_overrides_take_system_and_tool_parts(alice, demo):
    url = f"/v1/agents/{demo['agent']}/context-overrides"
    body = [{"part": "system:agent", "action": "replace", "replacement": "Be terse."},
            {"part": "system:memory:/memories/AGENTS.md", "action": "exclude"},
            {"part": "tool:echo", "action": "exclude"}]
    response = put(alice, url, body)
    assert response.status_code == 200, response.content
    assert response.json() == {"overrides": [{**o, "replacement": o.get("replacement")}
                                             for o in body], "added": []}


@pytest.mark.parametrize(("target", "overrides", "reason"), [
    ("session", [{"part": "message:1", "action": "exclude"}], "starts with an assistant"),
    ("session", [{"part": f"message:{i}", "action": "exclude"} for i in range(1, 11)],
     "No user message would be left"),
    ("agent", [{"part": "tool:echo", "action": "replace", "replacement": "x"}],
     "can only be excluded"),
    ("agent", [{"part": "message:3", "action": "exclude"}], "not a part of an agent"),
    ("session", [{"part": "system:agent", "action": "exclude"}], "not a part of a session"),
    ("session", [{"part": "repair:1", "action": "exclude"}], "not a part of a session"),
    ("session", [{"part": "message:10", "action": "exclude"},
                 {"part": "message:10", "action": "exclude"}], "more than one override"),
    ("session", [{"part": "message:5", "action": "exclude"},
                 {"part": "message:4", "action": "replace", "replacement": "x"}],
     "cannot be replaced"),
])
def test_a_set_that_would_leave_an_invalid_request_is_refused(alice, demo, target, overrides,
                                                              reason):
    url = (session_url(demo) if target == "session"
           else f"/v1/agents/{demo['agent']}/context-overrides")
    error = error_of(put(alice, url, overrides), 422, "validation_error")
    assert reason in json.dumps(error["detail"]), error
    assert not ContextOverride.objects.exists()


@pytest.mark.parametrize("body", [
    {"part": "message:10", "action": "exclude"},  # an object, not a list
    [{"part": "message:10", "action": "hide"}],
    [{"part": "message:10", "action": "replace"}],
    [{"part": "message:10", "action": "exclude", "replacement": "x"}],
    [{"action": "exclude"}],
    [{"part": 8, "action": "exclude"}],
    [{"part": "message:10", "action": "replace", "replacement": "x" * 200_001}],
])
def test_malformed_overrides_answer_422(alice, demo, body):
    error_of(put(alice, session_url(demo), body), 422, "validation_error")


def test_too_many_overrides_answer_422(alice, demo):
    body = [{"part": f"message:{i}", "action": "exclude"} for i in range(1, 1_002)]
    error_of(put(alice, session_url(demo), body), 422, "validation_error")


def test_an_override_for_a_part_that_is_not_there_is_kept(alice, demo):
    response = put(alice, session_url(demo), [{"part": "message:99", "action": "exclude"}])
    assert response.status_code == 200
    assert response.json()["overrides"] == [
        {"part": "message:99", "action": "exclude", "replacement": None}]


def test_each_put_writes_one_audit_row_without_the_replacement_text(alice, demo):
    put(alice, session_url(demo), [{"part": "message:1", "action": "replace",
                                    "replacement": "SECRET REPLACEMENT"},
                                   {"part": "message:7", "action": "exclude"}])
    put(alice, f"/v1/agents/{demo['agent']}/context-overrides",
        [{"part": "system:agent", "action": "replace", "replacement": "SECRET PROMPT"}])
    rows = list(AuditEntry.objects.filter(action="context.override").order_by("created_at"))
    assert [(r.object_type, r.object_id) for r in rows] == [("session", demo["id"]),
                                                           ("agent", demo["agent"])]
    assert rows[0].detail == {"overrides": [{"part": "message:1", "action": "replace"},
                                            {"part": "message:7", "action": "exclude"},
                                            {"part": "message:6", "action": "exclude"}],
                              "added": ["message:6"]}
    assert "SECRET" not in json.dumps([r.detail for r in rows])


def test_overrides_belong_to_their_tenant_and_member(alice, bob, admin, outsider, demo):
    url = session_url(demo)
    assert put(alice, url, [{"part": "message:10", "action": "exclude"}]).status_code == 200
    for other in (bob, outsider):
        error_of(other.client.get(url), 404, "not_found")
        error_of(put(other, url, []), 404, "not_found")
        error_of(other.client.get(f"/v1/agents/{demo['agent']}/context-overrides"), 404)
    assert ContextOverride.objects.count() == 1
    assert admin.client.get(url).json()["overrides"][0]["part"] == "message:10"


def test_the_gauge_reports_each_tenants_overrides(alice, outsider, demo, make_session):
    from opentelemetry.metrics import CallbackOptions

    from context.telemetry import active_overrides
    from harness import telemetry

    put(alice, session_url(demo), [{"part": "message:5", "action": "exclude"}])  # + its pair
    theirs = make_session(outsider)
    put(outsider, session_url(theirs), [{"part": "message:1", "action": "replace",
                                         "replacement": "x"}])
    seen = {o.attributes[telemetry.ATTR_TENANT_ID]: o.value
            for o in active_overrides(CallbackOptions())}
    assert seen == {str(alice.member.tenant_id): 2, str(outsider.member.tenant_id): 1}


def test_a_paused_runs_session_takes_overrides_and_the_refusals_name_parts(
        alice, make_agent, make_session, inline_runs):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ["approve"]}})
    session = make_session(alice, agent_id=agent["id"])
    run = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                            {"content": "count these four words"}, format="json").json()["run"]
    assert run["status"] == "awaiting_approval"  # the history ends with a call awaiting results
    url = session_url(session)
    assert put(alice, url, []).status_code == 200
    assert put(alice, url, [{"part": "message:1", "action": "replace",
                             "replacement": "Count them."}]).status_code == 200
    error = error_of(put(alice, url, [{"part": "message:1", "action": "exclude"}]), 422)
    assert error["detail"]["overrides"] == [
        "message:2: the history starts with an assistant message"]


# -- both sets in one request: the Context panel's Save ---------------------------------------

def both_url(session) -> str:
    return f"/v1/sessions/{session['id']}/context-overrides/both"


PROMPT = {"part": "system:agent", "action": "replace", "replacement": "Be terse."}


def test_both_sets_are_replaced_by_one_request(alice, demo):
    response = put(alice, both_url(demo), {
        "agent": [PROMPT, {"part": "tool:echo", "action": "exclude"}],
        "session": [{"part": "message:5", "action": "exclude"}]})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body == {
        "agent": {"overrides": [PROMPT, {"part": "tool:echo", "action": "exclude",
                                         "replacement": None}], "added": []},
        "session": {"overrides": [
            {"part": "message:5", "action": "exclude", "replacement": None},
            {"part": "message:4", "action": "exclude", "replacement": None}],
            "added": ["message:4"]}}
    assert alice.client.get(both_url(demo)).json() == {
        "agent": {**body["agent"], "added": []}, "session": {**body["session"], "added": []}}
    # The routes of each set read what the one request wrote.
    assert alice.client.get(session_url(demo)).json()["overrides"] == body["session"][
        "overrides"]
    assert alice.client.get(f"/v1/agents/{demo['agent']}/context-overrides").json()[
        "overrides"] == body["agent"]["overrides"]
    assert put(alice, both_url(demo), {"agent": [], "session": []}).json() == {
        "agent": {"overrides": [], "added": []}, "session": {"overrides": [], "added": []}}
    assert not ContextOverride.objects.exists()


def test_a_refused_session_set_leaves_the_agents_untouched(alice, demo):
    agent_url = f"/v1/agents/{demo['agent']}/context-overrides"
    assert put(alice, agent_url, [PROMPT]).status_code == 200
    before = list(AuditEntry.objects.values_list("pk", flat=True))
    error = error_of(put(alice, both_url(demo), {
        "agent": [{"part": "tool:echo", "action": "exclude"}],
        "session": [{"part": "message:1", "action": "exclude"}]}), 422, "validation_error")
    assert error["detail"]["overrides"] == [
        "message:2: the history starts with an assistant message"]
    assert alice.client.get(agent_url).json()["overrides"] == [PROMPT]
    assert list(AuditEntry.objects.values_list("pk", flat=True)) == before


@pytest.mark.parametrize(("body", "reason"), [
    ({"agent": [{"part": "message:3", "action": "exclude"}], "session": []},
     "'message:3' is not a part of an agent"),
    ({"agent": [], "session": [{"part": "system:agent", "action": "exclude"}]},
     "'system:agent' is not a part of a session"),
    ({"agent": [{"part": "tool:echo", "action": "replace", "replacement": "x"}], "session": []},
     "a tool can only be excluded"),
    ({"agent": [PROMPT, PROMPT], "session": []}, "more than one override"),
    ({"agent": [], "session": [{"part": "message:5", "action": "exclude"},
                               {"part": "message:4", "action": "replace",
                                "replacement": "x"}]}, "cannot be replaced"),
    ({"agent": [PROMPT], "session": [{"part": f"message:{i}", "action": "exclude"}
                                     for i in range(1, 11)]}, "No user message would be left"),
])
def test_both_sets_are_checked_as_their_own_puts_check_them(alice, demo, body, reason):
    error = error_of(put(alice, both_url(demo), body), 422, "validation_error")
    assert reason in json.dumps(error["detail"]), error
    assert not ContextOverride.objects.exists()
    assert not AuditEntry.objects.filter(action="context.override").exists()


@pytest.mark.parametrize("body", [
    [PROMPT],  # a list, as the single PUTs take, not the two sets
    {},  # neither set
    {"agent": PROMPT, "session": []},
    {"agent": None, "session": []},
    {"agent": [], "session": [{"part": "message:10", "action": "hide"}]},
    {"agent": [{"part": "system:agent", "action": "replace"}], "session": []},
    {"agent": [], "session": [{"part": f"message:{i}", "action": "exclude"}
                              for i in range(1, 1_002)]},
])
def test_a_malformed_pair_of_sets_answers_422(alice, demo, body):
    error_of(put(alice, both_url(demo), body), 422, "validation_error")
    assert not ContextOverride.objects.exists()


def test_saving_both_writes_the_two_audit_rows_the_two_puts_write(alice, demo):
    put(alice, both_url(demo), {
        "agent": [{"part": "system:agent", "action": "replace", "replacement": "SECRET PROMPT"}],
        "session": [{"part": "message:1", "action": "replace", "replacement": "SECRET TEXT"},
                    {"part": "message:7", "action": "exclude"}]})
    rows = list(AuditEntry.objects.filter(action="context.override").order_by("created_at"))
    assert [(r.object_type, r.object_id, r.actor_id) for r in rows] == [
        ("agent", demo["agent"], alice.member.pk), ("session", demo["id"], alice.member.pk)]
    assert rows[0].detail == {"overrides": [{"part": "system:agent", "action": "replace"}],
                              "added": []}
    assert rows[1].detail == {"overrides": [{"part": "message:1", "action": "replace"},
                                            {"part": "message:7", "action": "exclude"},
                                            {"part": "message:6", "action": "exclude"}],
                              "added": ["message:6"]}
    assert "SECRET" not in json.dumps([r.detail for r in rows])


def test_a_set_left_out_is_left_as_it_is(alice, demo):
    """The panel sends only the sets its Save changes: the agent's, shared by every session of
    the agent, is not written back as the page read it (a change made elsewhere meanwhile
    stays), nor audited."""
    agent_url = f"/v1/agents/{demo['agent']}/context-overrides"
    assert put(alice, agent_url, [PROMPT]).status_code == 200
    before = list(AuditEntry.objects.values_list("pk", flat=True))
    body = put(alice, both_url(demo), {"session": [{"part": "message:5", "action": "exclude"}]})
    assert body.status_code == 200, body.content
    assert body.json()["agent"] == {"overrides": [PROMPT], "added": []}
    assert [o["part"] for o in body.json()["session"]["overrides"]] == ["message:5", "message:4"]
    rows = AuditEntry.objects.exclude(pk__in=before)
    assert [(r.action, r.object_type) for r in rows] == [("context.override", "session")]
    stored = alice.client.get(agent_url).json()["overrides"]
    assert stored == [PROMPT]
    agent_only = put(alice, both_url(demo), {"agent": []}).json()
    assert agent_only["agent"]["overrides"] == [] and len(agent_only["session"]["overrides"]) == 2


def test_both_sets_belong_to_their_tenant_and_member(alice, bob, admin, outsider, demo):
    url = both_url(demo)
    body = {"agent": [PROMPT], "session": [{"part": "message:10", "action": "exclude"}]}
    for other in (bob, outsider):
        error_of(other.client.get(url), 404, "not_found")
        error_of(put(other, url, body), 404, "not_found")
    assert not ContextOverride.objects.exists()
    assert put(admin, url, body).status_code == 200
    assert alice.client.get(url).json()["agent"]["overrides"] == [PROMPT]


def test_a_member_who_may_not_change_the_agent_saves_neither_set(alice, owner, make_agent):
    """A session of alice's on an agent she cannot see (an owner's): the session's own PUT is
    hers, but the pair of sets includes the agent's, which answers as a missing agent."""
    agent = make_agent(owner)
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="on the owner's agent")
    url = f"/v1/sessions/{session.pk}/context-overrides/both"
    error_of(alice.client.get(url), 404, "not_found")
    error_of(put(alice, url, {"agent": [PROMPT], "session": []}), 404, "not_found")
    assert not ContextOverride.objects.exists()
    assert owner.client.get(url).status_code == 200
    # Her session's own set alone is hers to save, as its own PUT is.
    session_only = {"session": [{"part": "message:1", "action": "replace", "replacement": "Hi."}]}
    assert put(alice, url, session_only).status_code == 200
