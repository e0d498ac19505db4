"""The run routes: start, follow, cancel, resume — executed inline (no worker process)."""

from __future__ import annotations

import json

import pytest

from runs.models import Run, RunStatus
from tests.support.history import assert_valid_history


@pytest.fixture
def session(alice, make_session):
    return make_session(alice)


def post(caller, session, content):
    return caller.client.post(f"/v1/sessions/{session['id']}/messages", {"content": content},
                              format="json")


def test_posting_a_message_starts_a_run_that_completes(alice, session, inline_runs):
    response = post(alice, session, "count these words")
    assert response.status_code == 202
    body = response.json()
    assert body["message"]["seq"] == 1 and body["message"]["role"] == "user"
    assert body["message"]["content"] == [{"type": "text", "text": "count these words"}]
    run = body["run"]
    assert run["status"] == "completed" and run["turn"] == 5
    assert [t["status"] for t in run["todos"]] == ["completed"] * 3
    assert run["error"] is None and run["pending_approvals"] == []
    assert set(run["usage"]) == {"input_tokens", "output_tokens", "cache_read_tokens",
                                 "cache_write_tokens"}
    messages = alice.client.get(f"/v1/sessions/{session['id']}/messages").json()["results"]
    assert len(messages) == 10 and all(m["run"] == run["id"] for m in messages)
    assert_valid_history(session["id"])
    runs = alice.client.get(f"/v1/sessions/{session['id']}/runs").json()["results"]
    assert [r["id"] for r in runs] == [run["id"]]
    assert alice.client.get(f"/v1/sessions/{session['id']}").json()["active_run"] is None


def test_a_second_message_while_a_run_is_active_answers_409(alice, session, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    first = post(alice, session, "first")
    assert first.status_code == 202 and first.json()["run"]["status"] == "queued"
    second = post(alice, session, "second")
    assert second.status_code == 409
    assert second.json()["error"]["detail"] == {"active_run": first.json()["run"]["id"]}
    # The field that posts it anyway, named where the client reads why it was refused.
    message = second.json()["error"]["message"]
    assert "`multitask`" in message and "enqueue" in message and "interrupt" in message
    assert alice.client.get(f"/v1/sessions/{session['id']}").json()["active_run"] == \
        first.json()["run"]["id"]


@pytest.mark.parametrize("content", [
    "", "   ", [], 42, {"text": "x"}, [{"type": "image"}],
    [{"type": "tool_use", "id": "a", "name": "echo", "input": {}}],
    [{"type": "text"}], None, "nul \u0000 inside",
])
def test_bad_message_content_answers_422(alice, session, inline_runs, content):
    response = post(alice, session, content)
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "validation_error"
    assert not Run.objects.exists()


@pytest.mark.parametrize("content, problems", [
    ([{"type": "text", "text": "hi", "citations": []}], ["0/citations: Unknown field."]),
    ([{"type": "text", "text": "a"}, {"type": "tool_result", "tool_use_id": "t", "content": "c",
                                      "status": "ok", "name": "x"}],
     ["1/status: Unknown field.", "1/name: Unknown field."]),
])
def test_a_blocks_unknown_field_is_422_naming_it(alice, session, inline_runs, content,
                                                  problems):
    response = post(alice, session, content)
    assert response.status_code == 422, response.content
    assert response.json()["error"]["detail"] == {"content": problems}
    assert not Run.objects.exists()


def test_a_lone_surrogate_in_a_message_answers_422(alice, session, inline_runs):
    raw = '{"content": [{"type": "text", "text": "\\ud800"}]}'
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages", raw,
                                 content_type="application/json")
    assert response.status_code == 422
    assert not Run.objects.exists()


def test_cancel_and_resume_a_queued_run(alice, session, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    run_id = post(alice, session, "hello").json()["run"]["id"]
    cancelled = alice.client.post(f"/v1/runs/{run_id}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["finished_at"] is not None
    assert alice.client.post(f"/v1/runs/{run_id}/cancel").status_code == 409
    resumed = alice.client.post(f"/v1/runs/{run_id}/resume")
    assert resumed.status_code == 202 and resumed.json()["status"] == "queued"
    assert alice.client.post(f"/v1/runs/{run_id}/resume").status_code == 409


def test_cancelling_a_leased_running_run_asks_the_worker(alice, session, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    run_id = post(alice, session, "hello").json()["run"]["id"]
    from runs.execution.worker import claim_run

    claim_run(run_id, "somebody")
    response = alice.client.post(f"/v1/runs/{run_id}/cancel")
    assert response.status_code == 202
    assert response.json()["status"] == "running" and response.json()["cancel_requested"] is True


def test_resume_is_refused_while_another_run_is_active(alice, session, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    old = post(alice, session, "one").json()["run"]["id"]
    alice.client.post(f"/v1/runs/{old}/cancel")
    new = post(alice, session, "two").json()["run"]["id"]
    response = alice.client.post(f"/v1/runs/{old}/resume")
    assert response.status_code == 409
    assert response.json()["error"]["detail"]["active_run"] == new
    assert "multitask" not in response.json()["error"]["message"]  # a resume has no such field


def test_events_after_a_cursor_and_as_a_stream(alice, session, inline_runs):
    run_id = post(alice, session, "hello world").json()["run"]["id"]
    page = alice.client.get(f"/v1/runs/{run_id}/events").json()
    types = [e["type"] for e in page["results"]]
    assert types[0] == "run.status" and types[-1] == "run.status"
    assert {"message.created", "tool.result", "todos.updated"} <= set(types)
    seqs = [e["seq"] for e in page["results"]]
    assert seqs == sorted(seqs) and page["next_after"] == seqs[-1]
    later = alice.client.get(f"/v1/runs/{run_id}/events?after={seqs[3]}").json()
    assert [e["seq"] for e in later["results"]] == seqs[4:]
    assert alice.client.get(f"/v1/runs/{run_id}/events?after=x").status_code == 400

    stream = alice.client.get(f"/v1/runs/{run_id}/events?after={seqs[-3]}",
                              HTTP_ACCEPT="text/event-stream")
    assert stream.status_code == 200 and stream["Content-Type"].startswith("text/event-stream")
    frames = b"".join(stream.streaming_content).decode().strip().split("\n\n")
    assert [f.splitlines()[0] for f in frames] == [f"id: {s}" for s in seqs[-2:]]
    last = json.loads(frames[-1].splitlines()[2].removeprefix("data: "))
    assert last["type"] == "run.status" and last["data"]["status"] == "completed"


def test_an_unknown_model_fails_the_run_with_a_readable_reason(alice, make_session, make_agent,
                                                               inline_runs):
    agent = make_agent(alice, model="scripted:nope")
    session = make_session(alice, agent_id=agent["id"])
    run = post(alice, session, "hi").json()["run"]
    assert run["status"] == "failed"
    assert run["error"]["code"] == "unknown_model" and "scripted:demo" in run["error"]["message"]


def test_a_provider_without_a_key_fails_with_the_offline_hint(alice, make_session, make_agent,
                                                              inline_runs, monkeypatch,
                                                              hango_settings):
    # No key in hango's settings (read at start-up), nor for the adapter's own fallback.
    hango_settings(anthropic_api_key=None)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent = make_agent(alice, model="anthropic:claude-sonnet-4-5")
    session = make_session(alice, agent_id=agent["id"])
    run = post(alice, session, "hi").json()["run"]
    assert run["status"] == "failed"
    assert run["error"]["code"] == "provider_auth"
    assert "scripted:demo" in run["error"]["message"]


def test_max_turns_stops_the_run(alice, make_session, make_agent, inline_runs):
    agent = make_agent(alice, model="scripted:workload-10", config={"max_turns": 3})
    session = make_session(alice, agent_id=agent["id"])
    run = post(alice, session, "go").json()["run"]
    assert run["status"] == "failed" and run["error"]["code"] == "max_turns"
    assert run["turn"] == 3
    assert_valid_history(session["id"])


RUN_ROUTES = [("get", "/v1/runs/{id}"), ("post", "/v1/runs/{id}/cancel"),
              ("post", "/v1/runs/{id}/resume"), ("get", "/v1/runs/{id}/events")]


@pytest.mark.parametrize("method,route", RUN_ROUTES)
def test_run_routes_follow_the_session_rule(alice, bob, admin, outsider, session, hango_settings,
                                            method, route):
    hango_settings(run_inline=False, broker_url="")
    run_id = post(alice, session, "hello").json()["run"]["id"]
    missing = getattr(alice.client, method)(route.format(id="00000000-0000-0000-0000-000000000000"))
    assert missing.status_code == 404
    for stranger in (bob, outsider):
        response = getattr(stranger.client, method)(route.format(id=run_id))
        assert response.status_code == 404 and response.json() == missing.json()
    assert getattr(admin.client, method)(route.format(id=run_id)).status_code in (200, 202, 409)
    assert Run.objects.get(pk=run_id).status in (RunStatus.QUEUED, RunStatus.CANCELLED)


def test_other_members_cannot_post_or_list_runs(alice, bob, outsider, session, inline_runs):
    for stranger in (bob, outsider):
        assert post(stranger, session, "hi").status_code == 404
        assert stranger.client.get(f"/v1/sessions/{session['id']}/runs").status_code == 404
    assert not Run.objects.exists()


def test_a_run_shows_what_its_calls_cost(owner, alice, make_session, inline_runs):
    """Scripted models have no price of their own: the first run's calls are unpriced, the
    second, after the tenant sets one for scripted:demo, are costed with it; the session's run
    list shows each run's cost as the run itself does."""
    first = make_session(alice)
    unpriced = post(alice, first, "count these words").json()["run"]
    assert unpriced["cost"] == {"by_currency": [], "unpriced_calls": 5}
    assert owner.client.put("/v1/prices/scripted:demo", {
        "currency": "EUR", "input": "1", "cache_write": "2", "cache_read": "0.5",
        "output": "4"}, format="json").status_code == 201
    second = make_session(alice)
    run = post(alice, second, "count these words").json()["run"]
    usage = run["usage"]
    total = (usage["input_tokens"] * 1 + usage["cache_write_tokens"] * 2
             + usage["cache_read_tokens"] * 0.5 + usage["output_tokens"] * 4) / 1_000_000
    [eur] = run["cost"]["by_currency"]
    assert (eur["currency"], eur["calls"], run["cost"]["unpriced_calls"]) == ("EUR", 5, 0)
    assert float(eur["total"]) == pytest.approx(total) and total > 0
    assert alice.client.get(f"/v1/runs/{run['id']}").json()["cost"] == run["cost"]
    listed = alice.client.get(f"/v1/sessions/{second['id']}/runs").json()["results"]
    assert [r["cost"] for r in listed] == [run["cost"]]
    assert alice.client.get(f"/v1/runs/{unpriced['id']}").json()["cost"] == unpriced["cost"]
