"""The inspector shows the session's next call whatever its state: a run paused for approval
(the call after the decision, from the run's own state), a run between two slices (from its
last checkpoint), messages queued behind the active run (listed apart, not sent). The runs
execute for real on the scripted model, which records every request it receives: what the
inspector showed is compared with what the model then got."""

from __future__ import annotations

import json

import pytest

from harness import approvals
from harness.messages import Message, Request, Response, ToolUseBlock
from harness.providers.scripted import text, tool_call
from harness.serde import content_to_json
from runs.execution import tasks
from runs.models import Run
from tests.support.api import error_of
from tests.support.approvals import ALL, approve

TODOS = {"todos": [{"content": "Count the words", "status": "in_progress"},
                   {"content": "Say how many", "status": "pending"}]}


@pytest.fixture
def held(broker, hango_settings):
    """Runs execute inline at first; ``held()`` sends them to the suite's broker from then on,
    where no worker takes them: the test advances them by hand."""
    hango_settings(run_inline=True, broker_url="")
    return lambda: hango_settings(run_inline=False, broker_url=broker)


@pytest.fixture
def session(alice, make_agent, make_session) -> dict:
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ALL}})
    return make_session(alice, agent_id=agent["id"])


def batch(*calls: tuple[str, str, dict]) -> Response:
    """One assistant message calling every tool of ``calls`` (id, name, arguments) at once."""
    return Response(message=Message(role="assistant", content=tuple(
        ToolUseBlock(id=i, name=name, input=args) for i, name, args in calls)),
        stop_reason="tool_use")


def post(caller, session: dict, content: str, **extra) -> dict:
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": content, **extra}, format="json")
    assert response.status_code == 202, response.content
    return response.json()


def inspected(caller, session: dict) -> tuple[dict, dict[str, str]]:
    """The snapshot, and each included part's full content as the next call sends it."""
    url = f"/v1/sessions/{session['id']}/context"
    snapshot = caller.client.get(url).json()
    full = {p["id"]: caller.client.get(url, {"full": p["id"]}).json()["content"]
            for group in ("system", "tools", "messages") for p in snapshot[group]
            if p["included"]}
    return snapshot, full


def sent_parts(request: Request) -> tuple[list[str], list[str], list[list]]:
    return ([b.text for b in request.system], [t.name for t in request.tools],
            [content_to_json(m.content) for m in request.messages])


def shown_parts(snapshot: dict, full: dict[str, str]) -> tuple[list[str], list[str], list[list]]:
    def included(group: str) -> list[str]:
        return [full[p["id"]] for p in snapshot[group] if p["included"]]

    return (included("system"), [json.loads(t)["name"] for t in included("tools")],
            [json.loads(m) for m in included("messages")])


def blank(messages: list[list], call_ids: set[str]) -> list[list]:
    """``messages`` with the results of ``call_ids`` emptied: what is not known before they run."""
    return [[{**b, "content": "", "is_error": False} if b.get("tool_use_id") in call_ids else b
             for b in blocks] for blocks in messages]


def test_a_paused_run_shows_the_call_after_its_decisions(alice, session, model, held,
                                                         transactional_db):
    model.steps += [
        tool_call("write_todos", TODOS),
        batch(("c_echo", "echo", {"text": "alpha"}), ("c_count", "word_count", {"text": "a b"}),
              ("c_no", "word_count", {"text": "c"})),
        text("Two words."),
    ]
    run = post(alice, session, "count 'a b'")["run"]
    assert run["status"] == "awaiting_approval"

    paused, paused_full = inspected(alice, session)
    assert paused["run"] == {"id": run["id"], "status": "awaiting_approval", "turn": 2}
    # The run's own todo list, not a new run's empty one.
    [todo] = [p for p in paused["system"] if p["id"] == "system:todo"]
    assert "Count the words" in todo["preview"]
    # The batch's results are the next message: the call that ran has its result, the two
    # waiting ones are empty and said to wait; nothing is made up for them.
    assert paused["batch_part"] == "message:5"
    assert [(c["tool_use_id"], c["outlook"]) for c in paused["pending_calls"]] == [
        ("c_echo", "ran"), ("c_count", "awaiting_decision"), ("c_no", "awaiting_decision")]
    results = json.loads(paused_full["message:5"])
    assert [(r["tool_use_id"], r["content"]) for r in results] == [
        ("c_echo", "alpha"), ("c_count", ""), ("c_no", "")]
    assert "2 of 3 not known yet" in paused["messages"][-1]["label"]
    assert not any(p["id"].startswith("repair:") for p in paused["messages"])

    # Decided, not resumed yet: the edit shows in the call, the reject's answer in its result.
    held()
    response = approve(alice, run["id"],
                       {"tool_use_id": "c_count", "type": "edit", "input": {"text": "a b c"}},
                       {"tool_use_id": "c_no", "type": "reject", "message": "no"})
    assert response.status_code == 202, response.content
    decided, decided_full = inspected(alice, session)
    assert decided["run"]["status"] == "queued"
    assert [c["outlook"] for c in decided["pending_calls"]] == ["ran", "will_run", "answered"]
    assert json.loads(decided_full["message:4"])[1]["input"] == {"text": "a b c"}
    assert json.loads(decided_full["message:5"])[2]["content"].endswith("Reason: no")

    tasks.advance_run(run["id"])
    assert Run.objects.get(pk=run["id"]).status == "completed"
    system, tools, messages = sent_parts(model.calls[-1])
    shown_system, shown_tools, shown_messages = shown_parts(decided, decided_full)
    assert (shown_system, shown_tools) == (system, tools)
    # Everything but the one result that was not known until the edited call ran.
    assert shown_messages == blank(messages, {"c_count"})
    assert messages[-1][1]["content"] == "3"


def test_a_paused_batch_that_no_longer_matches_says_the_run_would_fail(alice, session, model,
                                                                     held, transactional_db):
    """A paused batch that does not answer the calls of the last message finishes nothing: the
    run fails instead of calling the model, and the snapshot says so in the run's words."""
    model.steps += [tool_call("word_count", {"text": "a b"}, call_id="c1"), text("Two.")]
    run = post(alice, session, "count 'a b'")["run"]
    held()
    decided = approve(alice, run["id"], {"tool_use_id": "c1", "type": "respond", "message": "2"})
    assert decided.status_code == 202, decided.content
    row = Run.objects.get(pk=run["id"])
    paused = row.state_json["pending_batch"]  # decided, for a call the history does not hold
    paused["pending"][0]["tool_use_id"] = "c_gone"
    paused["decisions"]["c_gone"] = paused["decisions"].pop("c1")
    row.save(update_fields=["state_json"])
    calls = len(model.calls)

    snapshot = alice.client.get(f"/v1/sessions/{session['id']}/context").json()
    assert snapshot["would_fail"] == approvals.MISMATCHED_BATCH
    assert (snapshot["pending_calls"], snapshot["batch_part"]) == ([], None)
    tasks.advance_run(run["id"])
    row.refresh_from_db()
    assert (row.status, row.error) == ("failed", {"code": "invalid_state",
                                                  "message": approvals.MISMATCHED_BATCH})
    assert len(model.calls) == calls  # no model call, as the snapshot said


def test_an_override_saved_during_a_pause_applies_to_the_call_after_it(alice, session, model,
                                                                       inline_runs):
    model.steps += [tool_call("word_count", {"text": "a b"}, call_id="c1"), text("Two.")]
    run = post(alice, session, "count 'a b'")["run"]
    response = alice.client.put(f"/v1/sessions/{session['id']}/context-overrides", [
        {"part": "message:1", "action": "replace", "replacement": "count them"}], format="json")
    assert response.status_code == 200
    snapshot, full = inspected(alice, session)
    assert json.loads(full["message:1"]) == [{"type": "text", "text": "count them"}]
    assert snapshot["overrides"]["active"] == 1
    approve(alice, run["id"], {"tool_use_id": "c1", "type": "respond", "message": "two"})
    assert content_to_json(model.calls[-1].messages[0].content) == [
        {"type": "text", "text": "count them"}]
    assert shown_parts(snapshot, full)[2] == blank(sent_parts(model.calls[-1])[2], {"c1"})


def test_a_run_between_slices_is_shown_from_its_last_checkpoint(alice, session, model, held,
                                                                 hango_settings, transactional_db):
    held()
    hango_settings(run_slice_seconds=0)
    model.steps += [tool_call("write_todos", TODOS), text("done")]
    run = post(alice, session, "plan it")["run"]
    tasks.advance_run(run["id"])  # one turn, then its slice is over: queued again
    snapshot, full = inspected(alice, session)
    assert snapshot["run"] == {"id": run["id"], "status": "running", "turn": 1}
    assert snapshot["pending_calls"] == [] and snapshot["batch_part"] is None
    # The run keeps the overrides it started with: a selection previewed now is the next
    # run's, and a message posted now would wait; neither is this call's.
    url = f"/v1/sessions/{session['id']}/context"
    preview = error_of(alice.client.post(url, {"overrides": []}, format="json"), 409)
    assert preview["detail"] == {"active_run": run["id"]}
    error_of(alice.client.post(url, {"message": "and?"}, format="json"), 409)
    assert alice.client.post(url, {}, format="json").json() == snapshot  # the stored set
    tasks.advance_run(run["id"])
    assert Run.objects.get(pk=run["id"]).status == "completed"
    assert shown_parts(snapshot, full) == sent_parts(model.calls[-1])


def test_messages_queued_behind_the_active_run_are_listed_not_sent(alice, session, model,
                                                                   inline_runs):
    model.steps += [tool_call("word_count", {"text": "a"}, call_id="c1")]
    post(alice, session, "count 'a'")
    queued = post(alice, session, "and then 'b'", multitask="enqueue")
    snapshot, full = inspected(alice, session)
    [waiting] = snapshot["queued"]
    assert waiting["id"] == f"queued:{queued['message']['id']}"
    assert (waiting["included"], waiting["preview"]) == (False, "and then 'b'")
    assert waiting["tokens"] > 0
    assert "and then" not in json.dumps(list(full.values()))
    parts = sum(p["tokens"] for g in ("system", "tools", "messages") for p in snapshot[g]
                if p["included"])
    assert snapshot["totals"]["after"] == parts + snapshot["framing"]
    content = alice.client.get(f"/v1/sessions/{session['id']}/context",
                               {"full": waiting["id"]}).json()["content"]
    assert json.loads(content) == [{"type": "text", "text": "and then 'b'"}]


def test_a_run_parked_on_client_tools_shows_their_results_as_the_caller_sends_them(
        alice, make_agent, make_session, model, held, transactional_db):
    lookup = {"name": "lookup_order", "description": "Find an order.",
              "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}}}}
    agent = make_agent(alice, config={"client_tools": [lookup],
                                      "interrupt_on": {"word_count": ALL}})
    session = make_session(alice, agent_id=agent["id"])
    model.steps += [
        batch(("c_echo", "echo", {"text": "alpha"}), ("c_count", "word_count", {"text": "a b"}),
              ("c_one", "lookup_order", {"order": 1}), ("c_two", "lookup_order", {"order": 2})),
        text("Done."),
    ]
    run = post(alice, session, "look up 1 and 2")["run"]
    assert run["status"] == "awaiting_approval"
    paused, paused_full = inspected(alice, session)
    # The client tool is a tool part of the request, as the model is offered it.
    assert json.loads(paused_full["tool:lookup_order"])["input_schema"] == lookup["input_schema"]
    assert [(c["tool_use_id"], c["outlook"]) for c in paused["pending_calls"]] == [
        ("c_echo", "ran"), ("c_count", "awaiting_decision"), ("c_one", "awaiting_result"),
        ("c_two", "awaiting_result")]
    assert "3 of 4 not known yet" in paused["messages"][-1]["label"]
    assert "lookup_order → (waiting for the caller's result)" in \
        paused["messages"][-1]["preview"]

    held()
    submitted = alice.client.post(f"/v1/runs/{run['id']}/tool-results", {"results": [
        {"tool_use_id": "c_one", "output": "found"}]}, format="json")
    assert submitted.status_code == 200, submitted.content
    answered, answered_full = inspected(alice, session)
    assert [c["outlook"] for c in answered["pending_calls"]] == [
        "ran", "awaiting_decision", "answered", "awaiting_result"]
    batch_part = answered["batch_part"]
    assert [r["content"] for r in json.loads(answered_full[batch_part])] == [
        "alpha", "", "found", ""]

    approve(alice, run["id"], {"tool_use_id": "c_count", "type": "approve"})
    alice.client.post(f"/v1/runs/{run['id']}/tool-results", {"results": [
        {"tool_use_id": "c_two", "output": "lost", "is_error": True}]}, format="json")
    decided, decided_full = inspected(alice, session)
    assert decided["run"]["status"] == "queued"
    assert [c["outlook"] for c in decided["pending_calls"]] == [
        "ran", "will_run", "answered", "answered"]
    tasks.advance_run(run["id"])
    assert Run.objects.get(pk=run["id"]).status == "completed"
    system, tools, messages = sent_parts(model.calls[-1])
    shown_system, shown_tools, shown_messages = shown_parts(decided, decided_full)
    assert (shown_system, shown_tools) == (system, tools) and "lookup_order" in tools
    assert shown_messages == blank(messages, {"c_count"})
    assert messages[-1][3] == {"type": "tool_result", "tool_use_id": "c_two",
                               "content": "lost", "is_error": True}
