"""``hango send``, ``follow`` and ``runs`` against a real server (pytest-django's live_server on
PostgreSQL) whose runs execute inline as their message is posted: the JSON a script reads, the
lines a person reads, the exit codes, and the errors."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from click.testing import CliRunner

from cli.client import Client
from cli.main import cli
from runs.live import relay
from tests.support.api import HITL
from tests.support.cli import ok_json
from tests.support.servers import free_port

MESSAGE = "count these four words"
ANSWER = f'You said: "{MESSAGE}". It has 4 words. All planned steps are done.'


@pytest.fixture
def session(api, inline_runs) -> str:
    agent = api.post("/v1/agents", json={"name": "demo", "model": "scripted:demo"}).json()
    return api.post("/v1/sessions", json={"agent": agent["id"]}).json()["id"]


@pytest.fixture
def careful_session(api, inline_runs) -> str:
    """A session whose agent asks before each word_count call."""
    agent = api.post("/v1/agents", json={"name": "careful", "model": "scripted:demo", "config":
                                         {"interrupt_on": {"word_count": HITL}}}).json()
    return api.post("/v1/sessions", json={"agent": agent["id"]}).json()["id"]


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_send_json_is_the_apis_answer_and_runs_list_and_show_find_the_run(hango, api, session):
    answer = ok_json(hango("send", "--session", session, *MESSAGE.split(), "--json"))
    assert set(answer) == {"message", "run"}
    assert answer["message"]["content"] == [{"type": "text", "text": MESSAGE}]
    run_id = answer["run"]["id"]

    listed = ok_json(hango("--json", "runs", "list", "--session", session))
    assert [r["id"] for r in listed["results"]] == [run_id]
    assert ok_json(hango("runs", "show", run_id, "--json")) == api.get(f"/v1/runs/{run_id}").json()
    table = hango("runs", "list", "--session", session)
    assert run_id in table.stdout and "completed" in table.stdout and "3/3" in table.stdout
    shown = hango("runs", "show", run_id)
    assert "[x] Write the answer (completed)" in shown.stdout
    assert "status    completed" in shown.stdout
    assert "cost      nothing priced · 5 calls unpriced" in shown.stdout  # a scripted model


def test_a_message_from_standard_input_loses_only_its_trailing_line_breaks(hango, session):
    # `echo ... | hango send -` ends the message with the newline echo adds; the rest of its
    # whitespace is the message's.
    for read, sent in (("count these four words\n", "count these four words"),
                       ("  two\n\tlines  \r\n\n", "  two\n\tlines  ")):
        answer = ok_json(hango("send", "--session", session, "-", "--json", input=read))
        assert answer["message"]["content"] == [{"type": "text", "text": sent}]
    empty = hango("send", "--session", session, "-", input="\n\n")
    assert empty.exit_code == 2 and "the message is empty" in empty.stderr


def test_send_follow_prints_the_run_as_it_went(hango, session):
    result = hango("send", "--session", session, MESSAGE, "--follow")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Let me plan this."
    assert '→ word_count {"text": "count these four words"}' in lines
    assert "← word_count: 4" in lines
    assert lines.count("  [x] Write the answer") == 1
    assert lines[-2:] == [ANSWER, lines[-1]] and lines[-1].startswith("(completed in 5 turns")
    assert result.stdout.count(ANSWER) == 1


@pytest.fixture
def quickstart_session(api, hango_settings, transactional_db) -> str:
    """A session served as the quickstart serves it: no broker, each run executed on a thread
    of the server's process, its deltas through this process, a word every 100 ms."""
    hango_settings(broker_url="", run_inline=False, live_redis_url="", scripted_word_delay_ms=100)
    agent = api.post("/v1/agents", json={"name": "demo", "model": "scripted:demo"}).json()
    return api.post("/v1/sessions", json={"agent": agent["id"]}).json()["id"]


def test_send_follow_that_connects_after_the_first_word_prints_it(hango, quickstart_session,
                                                                   monkeypatch):
    # The run starts writing as soon as its message is posted; the follower's stream opens a
    # little later (here: once the first word is out, as it did about half the time).
    first_word = threading.Event()
    publish = relay.LOCAL.publish

    def spied(channel: str, payload: str) -> None:
        publish(channel, payload)
        if '"index": 0' in payload:
            first_word.set()

    monkeypatch.setattr(relay.LOCAL, "publish", spied)
    connect = Client.events

    def late(self, run_id, **options):
        assert first_word.wait(10)
        return connect(self, run_id, **options)

    monkeypatch.setattr(Client, "events", late)
    result = hango("send", "--session", quickstart_session, MESSAGE, "--follow")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Let me plan this."
    assert "differs" not in result.stdout
    assert lines[-2] == ANSWER


def test_send_follow_json_is_the_answer_then_one_event_a_line(hango, session):
    result = hango("send", "--session", session, MESSAGE, "--follow", "--json")
    assert result.exit_code == 0, result.stderr
    first, *events = json_lines(result.stdout)
    assert set(first) == {"message", "run"}
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run.status" and events[-1]["data"]["status"] == "completed"
    assert {"run.status", "message.created", "todos.updated", "tool.result"} <= {
        e["type"] for e in events}
    # `follow` replays the same events from the route.
    again = hango("follow", first["run"]["id"], "--json")
    assert again.exit_code == 0 and json_lines(again.stdout) == events


def sent_run(hango, api, session: str) -> dict:
    """The run ``hango send`` started, read after it ran. (Its answer is the run as the post
    committed it, queued: the server under test runs it inline once that commit is made.)"""
    run = ok_json(hango("send", "--session", session, MESSAGE, "--json"))["run"]
    return api.get(f"/v1/runs/{run['id']}").json()


def test_a_paused_run_is_followed_to_its_pause_then_approved(hango, api, careful_session):
    run = sent_run(hango, api, careful_session)
    assert run["status"] == "awaiting_approval"
    [call] = run["pending_approvals"]
    call_id = call["tool_use_id"]

    paused = hango("follow", run["id"])
    assert paused.exit_code == 3, paused.stderr
    assert f"{call_id}: word_count" in paused.stderr
    assert f"hango runs approve {run['id']}" in paused.stderr
    assert hango("follow", run["id"], "--json").exit_code == 3

    # Off a terminal, each call needs a decision given as an option.
    undecided = hango("runs", "approve", run["id"])
    assert undecided.exit_code == 2 and f"no decision for {call_id}" in undecided.stderr
    unknown = hango("runs", "approve", run["id"], "--approve", "toolu_nope")
    assert unknown.exit_code == 2 and "not waiting for a decision: toolu_nope" in unknown.stderr
    bad_json = hango("runs", "approve", run["id"], "--edit", f"{call_id}=[1]")
    assert bad_json.exit_code == 2 and "JSON object" in bad_json.stderr

    edited = hango("runs", "approve", run["id"], "--edit", f'{call_id}={{"text": "two words"}}',
                   "--follow", "--json")
    assert edited.exit_code == 0, edited.stderr
    first, *events = json_lines(edited.stdout)
    assert first["id"] == run["id"]  # the approve route's answer
    assert events[-1]["data"]["status"] == "completed"
    messages = api.get(f"/v1/sessions/{careful_session}/messages").json()["results"]
    assert messages[-1]["content"][0]["text"].endswith("It has 2 words. All planned steps are "
                                                       "done.")

    again = hango("runs", "approve", run["id"], "--all", "approve")
    assert again.exit_code == 1
    assert "is completed, not waiting for an approval" in again.stderr


def test_reject_and_respond_from_options(hango, api, careful_session):
    for decision, answer in (("--reject", "=Not now."), ("--respond", "=seven")):
        run = sent_run(hango, api, careful_session)
        call_id = run["pending_approvals"][0]["tool_use_id"]
        decided = hango("runs", "approve", run["id"], decision, call_id + answer, "--follow")
        assert decided.exit_code == 0, decided.stderr
        [result] = [line for line in decided.stdout.splitlines() if line.startswith("← word")]
        if decision == "--reject":
            assert result.startswith("← word_count failed: ") and "Not now." in result
        else:
            assert result == "← word_count: seven"


def test_cancel_and_resume(hango, session, request):
    done = ok_json(hango("send", "--session", session, MESSAGE, "--json"))["run"]
    finished = hango("runs", "cancel", done["id"])
    assert finished.exit_code == 1
    assert finished.stderr.startswith("error 409 conflict: The run is already completed.")
    assert hango("runs", "resume", done["id"]).exit_code == 1

    request.getfixturevalue("broker")  # from now on runs wait in Redis: no worker takes them
    queued = ok_json(hango("send", "--session", session, "again", "--json"))["run"]
    busy = hango("send", "--session", session, "and again")
    assert busy.exit_code == 1
    assert f"Follow it with: hango follow {queued['id']}" in busy.stderr
    cancelled = hango("runs", "cancel", queued["id"])
    assert cancelled.exit_code == 0, cancelled.stderr
    assert cancelled.stdout.startswith(f"Run {queued['id']} cancelled.")
    assert hango("follow", queued["id"]).exit_code == 1

    resumed = ok_json(hango("runs", "resume", queued["id"], "--json"))
    assert resumed["status"] == "queued"


def test_unknown_ids_bad_keys_and_no_server(hango, session):
    missing = str(uuid.uuid4())
    for args in (("follow", missing), ("runs", "show", missing), ("runs", "cancel", missing),
                 ("runs", "approve", missing, "--all", "approve")):
        result = hango(*args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith("error 404 not_found:"), args
        assert f"No run {missing} is visible with this key" in result.stderr
    sent = hango("send", "--session", missing, "hi")
    assert sent.exit_code == 1 and f"No session {missing}" in sent.stderr
    assert hango("runs", "list", "--session", missing).exit_code == 1

    bad_key = hango("--key", "hk_not_a_key", "follow", missing)
    assert bad_key.exit_code == 1
    assert bad_key.stderr.startswith("error 401 authentication_failed:")

    nobody = f"http://127.0.0.1:{free_port()}"
    for args in (("follow", missing), ("chat", "--agent", missing), ("send", "--session",
                                                                      session, "hi")):
        result = CliRunner().invoke(cli, ["--url", nobody, *args],
                                    env={"HANGO_API_KEY": "hk_x"})
        assert result.exit_code == 2, args
        assert f"cannot connect to the hango server at {nobody}" in result.stderr
        assert "Traceback" not in result.output

    no_target = hango("chat")
    assert no_target.exit_code == 2 and "--agent ID" in no_target.stderr
    empty = hango("send", "--session", session, " ")
    assert empty.exit_code == 2 and "the message is empty" in empty.stderr


def test_a_run_parked_on_client_tools_is_followed_to_its_park_and_shown(hango, api,
                                                                       inline_runs):
    lookup = {"name": "lookup_order", "description": "Find an order.",
              "input_schema": {"type": "object"}}
    agent = api.post("/v1/agents", json={"name": "client", "model": "scripted:calls",
                                         "config": {"client_tools": [lookup]}}).json()
    session = api.post("/v1/sessions", json={"agent": agent["id"]}).json()["id"]
    sent = ok_json(hango("send", "--session", session, 'call lookup_order {"order": 7}',
                         "--json"))["run"]
    run = api.get(f"/v1/runs/{sent['id']}", params={"wait": 30}).json()
    assert run["status"] == "requires_action"
    [call] = run["required_action"]["tool_calls"]
    parked = hango("follow", run["id"])
    assert parked.exit_code == 4, parked.stderr
    assert f'{call["tool_use_id"]}: lookup_order {{"order": 7}}' in parked.stderr
    assert f"POST /v1/runs/{run['id']}/tool-results" in parked.stderr
    assert hango("follow", run["id"], "--json").exit_code == 4
    shown = hango("runs", "show", run["id"])
    assert "requires_action" in shown.stdout and "the caller's result" in shown.stdout
    # Answered by the API's caller, the run goes on; following it again sees the end.
    api.post(f"/v1/runs/{run['id']}/tool-results", json={"results": [
        {"tool_use_id": call["tool_use_id"], "output": "shipped"}]})
    assert hango("follow", run["id"]).exit_code == 0
