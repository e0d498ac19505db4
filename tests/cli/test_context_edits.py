"""``hango context exclude|include|try`` against a real server: the overrides it saves (the
agent's and the session's, pairs kept together) and the one real call a try makes."""

from __future__ import annotations

import re

from accounts.models import Tenant
from tests.cli.test_context import excluded, overrides, show
from tests.support.cli import ok_json


def test_exclude_saves_the_message_with_its_pair(hango, api, demo):
    result = hango("context", "exclude", "--session", demo["id"], "message:5")
    assert result.exit_code == 0, result.stderr
    assert "Saved the session's overrides" in result.stdout
    assert "Added as pairs (left out with the message they go with): message:4" in result.stdout
    assert overrides(api, f"/v1/sessions/{demo['id']}") == excluded("message:5", "message:4")
    assert overrides(api, f"/v1/agents/{demo['agent']}") == []
    rows = show(hango, demo).rows
    assert [p for p, r in rows.items() if not r.sent] == ["message:4", "message:5"]

    again = hango("context", "exclude", "--session", demo["id"], "message:5")
    assert again.exit_code == 0, again.stderr
    assert "message:5 was already excluded." in again.stdout
    assert "Unchanged: the session's overrides" in again.stdout


def test_exclude_json_prints_the_apis_answer(hango, api, demo):
    answer = ok_json(hango("--json", "context", "exclude", "--session", demo["id"], "message:7"))
    assert answer == {"session": {"overrides": excluded("message:7", "message:6"),
                                  "added": ["message:6"]}}


def test_agent_parts_go_to_the_agents_overrides(hango, api, demo):
    agent = f"/v1/agents/{demo['agent']}"
    replaced = {"part": "system:agent", "action": "replace", "replacement": "Be terse."}
    api.put(f"{agent}/context-overrides", json=[replaced]).raise_for_status()

    result = hango("context", "exclude", "--session", demo["id"], "tool:echo", "system:todo")
    assert result.exit_code == 0, result.stderr
    assert f"Saved agent {demo['agent']}'s overrides" in result.stdout
    assert overrides(api, agent) == [replaced, *excluded("tool:echo", "system:todo")]
    assert overrides(api, f"/v1/sessions/{demo['id']}") == []
    rows = show(hango, demo).rows
    assert not rows["tool:echo"].sent and not rows["system:todo"].sent

    back = hango("context", "include", "--session", demo["id"], "tool:echo", "system:todo")
    assert back.exit_code == 0, back.stderr
    assert overrides(api, agent) == [replaced]

    unreplaced = hango("context", "include", "--session", demo["id"], "system:agent")
    assert unreplaced.exit_code == 0, unreplaced.stderr
    assert ("system:agent was replaced: its replace override is removed, so its original text "
            "is sent again.") in unreplaced.stdout
    assert overrides(api, agent) == []


def test_one_command_saves_both_sets(hango, api, demo):
    answers = ok_json(hango("context", "exclude", "--session", demo["id"], "--json",
                            "tool:echo", "message:5"))
    assert answers == {
        "session": {"overrides": excluded("message:5", "message:4"), "added": ["message:4"]},
        "agent": {"overrides": excluded("tool:echo"), "added": []}}
    assert overrides(api, f"/v1/agents/{demo['agent']}") == excluded("tool:echo")

    back = ok_json(hango("context", "include", "--session", demo["id"], "--json",
                         "message:5", "tool:echo"))
    assert back == {"session": {"overrides": [], "added": []},
                    "agent": {"overrides": [], "added": []}}


def test_include_brings_a_message_back_with_its_pair(hango, api, demo):
    session = f"/v1/sessions/{demo['id']}"
    api.put(f"{session}/context-overrides", json=excluded("message:5", "message:99"))
    result = hango("context", "include", "--session", demo["id"], "message:5")
    assert result.exit_code == 0, result.stderr
    assert "message:4 is included too" in result.stdout
    assert overrides(api, session) == excluded("message:99")
    assert all(show(hango, demo).rows[f"message:{n}"].sent for n in range(1, 11))


def test_an_invalid_set_shows_the_servers_reasons(hango, api, demo):
    result = hango("context", "exclude", "--session", demo["id"], "message:1")
    assert result.exit_code == 1
    assert result.stderr.startswith("error 422 validation_error: ")
    assert "\n  overrides: " in result.stderr and "assistant message" in result.stderr
    assert overrides(api, f"/v1/sessions/{demo['id']}") == []


def test_try_prints_the_answer_and_adds_no_message(hango, api, demo):
    messages = api.get(f"/v1/sessions/{demo['id']}/messages").json()["results"]
    result = hango("context", "try", "--session", demo["id"], "--exclude", "message:5",
                   "--exclude", "tool:word_count", "--replace", "system:agent=Be terse.",
                   "--message", "And now?")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    # The demo model plans a new request: some text, then a write_todos call.
    assert lines[0] == "Let me plan this."
    assert re.fullmatch(r"tool call write_todos \(id \S+\), not run:", lines[1])
    assert '        "content": "Read the request",' in lines
    assert lines[-2] == "stop reason: tool_use"
    assert re.fullmatch(r"usage: input \d+, output \d+, cache read \d+, cache write \d+ tokens",
                        lines[-1])
    assert api.get(f"/v1/sessions/{demo['id']}/messages").json()["results"] == messages
    assert overrides(api, f"/v1/sessions/{demo['id']}") == []

    # Without its tools the demo model answers at once.
    answer = ok_json(hango("--json", "context", "try", "--session", demo["id"], "--exclude",
                           "tool:write_todos", "--exclude", "tool:word_count",
                           "--message", "count these three words"))
    assert set(answer) == {"message", "stop_reason", "usage"}
    assert answer["message"]["role"] == "assistant" and answer["stop_reason"] == "end_turn"
    assert answer["message"]["content"][0]["text"].startswith('You said: "count these')


def test_try_shows_the_servers_reasons_one_a_line(hango, demo):
    result = hango("context", "try", "--session", demo["id"], "--replace", "tool:echo=x",
                   "--replace", "tool:ls=y")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error 422 validation_error: These overrides cannot be tried.",
        "  overrides: 'tool:echo': a tool can only be excluded.",
        "  overrides: 'tool:ls': a tool can only be excluded."]


def test_try_on_a_spent_quota_is_402(hango, demo):
    Tenant.objects.filter(name="cli").update(token_quota=1)
    result = hango("context", "try", "--session", demo["id"], "--message", "Again?")
    assert result.exit_code == 1
    assert result.stderr.startswith("error 402 quota_exceeded: ")


def test_try_without_a_message_after_the_answer_says_to_give_one(hango, demo):
    result = hango("context", "try", "--session", demo["id"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error 422 validation_error: The session's history ends with the agent's answer: give "
        "a message to try it with.", "  message: required here"]
