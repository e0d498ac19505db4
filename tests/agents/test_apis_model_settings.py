"""An agent's ``config.model_settings`` through the API: values out of bounds, or that do not fit
the agent's model or tools, are a 422 naming them; the inspector shows the effective settings,
where the window came from, and the compaction budget drawn from it."""

from __future__ import annotations

import pytest

from tests.support.api import error_of
from tests.support.replay import ReplayServer


def create(caller, model: str = "scripted:demo", **fields):
    return caller.client.post("/v1/agents", {
        "name": "a", "description": "d", "system_prompt": "p", "model": model, **fields},
        format="json")


@pytest.mark.parametrize(("settings", "field"), [
    ({"temperature": 3}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"stop": ["1", "2", "3", "4", "5"]}, "stop"),
    ({"tool_choice": "always"}, "tool_choice"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls"),
])
def test_out_of_bounds_settings_are_a_422_naming_the_field(alice, settings, field):
    error = error_of(create(alice, config={"model_settings": settings}), 422, "validation_error")
    assert any(f"model_settings/{field}" in line for line in error["detail"]["config"]), error


@pytest.mark.parametrize(("model", "fields", "says"), [
    ("openai:gpt-4o", {"config": {"model_settings": {"max_output_tokens": 100_000}}},
     "model_settings/max_output_tokens: 100,000 is more than openai:gpt-4o gives one answer"),
    ("anthropic:claude-sonnet-4-6", {"config": {"model_settings": {"temperature": 0.1}}},
     "model_settings/temperature: anthropic: models take no sampling parameters"),
    ("openai:gpt-4o", {"allowed_tools": ["echo"],
                       "config": {"model_settings": {"tool_choice": {"name": "ls"}}}},
     "model_settings/tool_choice/name: 'ls' is not a tool the agent offers."),
    ("openai:gpt-4o", {"config": {"model_settings": {"tool_choice": {"name": "nope"}}}},
     "model_settings/tool_choice/name: Unknown tool 'nope'"),
])
def test_settings_that_do_not_fit_the_model_or_tools_are_a_422(alice, model, fields, says):
    error = error_of(create(alice, model, **fields), 422)
    assert any(line.startswith(says) for line in error["detail"]["config"]), error


def test_a_patch_that_changes_the_model_under_the_settings_is_checked(alice):
    agent = create(alice, "openai:mine", config={"model_settings": {"temperature": 0.2}}).json()
    error_of(alice.client.patch(f"/v1/agents/{agent['id']}",
                                {"model": "anthropic:claude-sonnet-4-6"}, format="json"), 422)
    assert alice.client.get(f"/v1/agents/{agent['id']}").json()["model"] == "openai:mine"


def test_a_client_tool_may_be_the_named_choice(alice):
    tool = {"name": "pick", "description": "d", "input_schema": {"type": "object"}}
    response = create(alice, "openai:mine", config={
        "client_tools": [tool], "model_settings": {"tool_choice": {"name": "pick"}}})
    assert response.status_code == 201, response.content


def snapshot_of(caller, make_session, agent: dict) -> dict:
    session = make_session(caller, agent["id"])
    response = caller.client.get(f"/v1/sessions/{session['id']}/context")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_inspector_shows_the_settings_their_sources_and_the_budget_they_give(
        alice, make_session):
    agent = create(alice, config={"model_settings": {
        "context_window": 40_000, "max_output_tokens": 500, "temperature": 0.5,
        "tool_choice": {"name": "echo"}}}).json()
    body = snapshot_of(alice, make_session, agent)
    assert body["model_settings"] == {
        "max_output_tokens": 500, "max_output_tokens_source": "agent",
        "context_window": 40_000, "context_window_source": "agent",
        "temperature": 0.5, "top_p": None, "stop": [], "tool_choice": {"name": "echo"},
        "parallel_tool_calls": None, "reasoning_effort": None}
    assert body["context_window"] == 40_000
    assert body["compaction"]["budget"] == 32_000  # trigger_fraction 0.8 of the window


def test_an_unknown_models_window_is_named_a_default(alice, make_session):
    body = snapshot_of(alice, make_session, create(alice).json())
    assert (body["model_settings"]["context_window_source"],
            body["model_settings"]["max_output_tokens_source"]) == ("default", "default")
    assert body["model_settings"]["max_output_tokens"] == 4096


@pytest.fixture
def own_server(monkeypatch):
    """A team's OpenAI-compatible server whose ``/models`` reports the window it serves."""
    replay = ReplayServer()
    replay.reply(200, {"data": [{"id": "mine", "max_model_len": 16_384}]})
    monkeypatch.setenv("OPENAI_BASE_URL", replay.url)
    yield replay
    replay.close()


def test_the_window_an_openai_compatible_server_reports_is_used_and_named(
        alice, make_session, own_server):
    body = snapshot_of(alice, make_session, create(alice, "openai:mine").json())
    assert (body["context_window"], body["model_settings"]["context_window_source"]) == (
        16_384, "server")
    assert body["compaction"]["budget"] == int(16_384 * 0.8)
    assert [r.path for r in own_server.requests] == ["/models"]
