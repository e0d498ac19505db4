"""Files and subagents through real runs (the worker service on PostgreSQL, executed inline): an
agent's file writes show in the files API, large results are offloaded to a readable file, and a
subagent's model calls count in the run's usage."""

from __future__ import annotations

import pytest

from harness.providers.scripted import ScriptedModel, text, tool_call
from runs.models import Message, Run
from tests.support.history import assert_valid_history
from tests.support.subagents import SUBAGENT_CONFIG, subagent_steps


@pytest.fixture
def script(serve_model):
    """Make the next run's model play ``steps``; returns the ScriptedModel (its ``calls``)."""

    def _script(*steps) -> ScriptedModel:
        model = ScriptedModel(list(steps))
        serve_model("scripted", model)
        return model

    return _script


def post(caller, session, content: str) -> dict:
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": content}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def test_a_file_the_agent_writes_shows_in_the_files_api(alice, make_session, inline_runs,
                                                       script):
    session = make_session(alice)
    script(
        tool_call("write_file", {"path": "/notes/plan.md", "content": "# Plan\n- one\n"},
                  call_id="w1"),
        tool_call("edit_file", {"path": "/notes/plan.md", "old_string": "- one",
                                "new_string": "- one\n- two"}, call_id="e1"),
        text("Saved the plan."),
    )
    run = post(alice, session, "plan it")
    assert run["status"] == "completed", run
    listing = alice.client.get(f"/v1/sessions/{session['id']}/files").json()["results"]
    assert [(f["path"], f["size"]) for f in listing] == [("/notes/plan.md", 19)]
    body = alice.client.get(f"/v1/sessions/{session['id']}/files/notes/plan.md").json()
    assert body == {"path": "/notes/plan.md", "content": "# Plan\n- one\n- two\n"}
    assert_valid_history(session["id"])


def test_a_large_result_is_offloaded_to_a_file_the_agent_reads(alice, make_session, inline_runs,
                                                              script, hango_settings):
    hango_settings(large_tool_result_chars=5_000)
    session = make_session(alice)
    big = "\n".join(f"line {i} " + "x" * 40 for i in range(300))
    model = script(
        tool_call("echo", {"text": big}, call_id="toolu_big"),
        tool_call("read_file", {"path": "/large_tool_results/toolu_big", "offset": 299},
                  call_id="r1"),
        text("The last line is 299."),
    )
    run = post(alice, session, "echo a lot")
    assert run["status"] == "completed", run
    stored = {m.seq: m.content for m in Message.objects.filter(session_id=session["id"])}
    pointer = stored[3][0]
    assert pointer["type"] == "tool_result" and len(pointer["content"]) < 3_000
    assert "saved to /large_tool_results/toolu_big" in pointer["content"]
    assert stored[5][0]["content"].startswith("   300\tline 299 ")
    file = alice.client.get(
        f"/v1/sessions/{session['id']}/files/large_tool_results/toolu_big").json()
    assert file["content"] == big
    # The model saw the pointer, never the whole result.
    assert all(len(repr(m.content)) < 10_000 for m in model.calls[1].messages[2:])


def test_a_subagent_runs_inside_the_run_and_its_usage_counts(alice, make_agent, make_session,
                                                             inline_runs, script):
    agent = make_agent(alice, config=SUBAGENT_CONFIG)
    session = make_session(alice, agent_id=agent["id"])

    model = script(*subagent_steps())
    run = post(alice, session, "how many words?")
    assert run["status"] == "completed", run
    assert run["usage"]["input_tokens"] == 100 + 1_000 + 2_000 + 3_000 + 200
    assert run["usage"]["output_tokens"] == 10 + 100 + 200 + 300 + 20
    assert run["todos"] == [] and run["turn"] == 2
    messages = alice.client.get(f"/v1/sessions/{session['id']}/messages").json()["results"]
    assert len(messages) == 4
    assert messages[2]["content"][0]["content"] == "3 words"
    assert model.calls[1].system[0].text == "You count words."
    events = alice.client.get(f"/v1/runs/{run['id']}/events").json()["results"]
    assert "todos.updated" not in {e["type"] for e in events}
    assert Run.objects.get(pk=run["id"]).input_tokens == 6_300
