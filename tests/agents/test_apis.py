"""``/v1/agents``: create, list (paginated, capped), read, partial update, delete, validation."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

from agents.models import Agent, Skill
from tests.support.api import AGENT_BODY, error_of, walk

AGENT_FIELDS = {
    "id", "name", "description", "system_prompt", "model", "allowed_tools", "config", "version",
    "owner", "created_at", "updated_at",
}

FULL_CONFIG = {
    "max_turns": 12,
    "interrupt_on": {"write_file": ["approve", "reject"]},
    "summarization": {"trigger_fraction": 0.8, "keep_messages": 6},
    "subagents": [
        {"name": "researcher", "description": "Looks things up.", "system_prompt": "Research.",
         "tools": ["read_file", "grep"]},
        {"name": "writer", "description": "Writes.", "system_prompt": "Write."},
    ],
    "memory": {"writable": True},
    "skills": [str(uuid.uuid4())],
}


def parse(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)


def test_create_returns_the_agent_owned_by_the_caller(alice):
    body = {**AGENT_BODY, "allowed_tools": ["echo"], "config": {"max_turns": 3}}
    response = alice.client.post("/v1/agents", body, format="json")

    assert response.status_code == 201, response.content
    agent = response.json()
    assert set(agent) == AGENT_FIELDS
    assert {k: agent[k] for k in body} == body
    assert agent["owner"] == str(alice.member.id)
    row = Agent.objects.get(pk=agent["id"])
    assert row.owner_id == alice.member.id
    assert row.tenant_id == alice.member.tenant_id


def test_create_defaults_optional_fields(alice):
    response = alice.client.post("/v1/agents", {"name": "n", "model": "openai:gpt-4o-mini"},
                                 format="json")
    assert response.status_code == 201, response.content
    agent = response.json()
    assert (agent["description"], agent["system_prompt"]) == ("", "")
    assert agent["allowed_tools"] is None
    assert agent["config"] == {}


def test_get_one_returns_what_create_returned(alice, make_agent):
    agent = make_agent(alice)
    response = alice.client.get(f"/v1/agents/{agent['id']}")
    assert response.status_code == 200
    assert response.json() == agent


def test_list_is_newest_first(alice, make_agent):
    ids = [make_agent(alice, name=f"a{i}")["id"] for i in range(3)]
    response = alice.client.get("/v1/agents")
    assert response.status_code == 200
    body = response.json()
    assert [a["id"] for a in body["results"]] == ids[::-1]
    assert body["next"] is None and body["previous"] is None


def test_list_limit_is_capped_and_next_walks_every_page(alice, make_agent, hango_settings):
    hango_settings(page_size=2, max_page_size=3)
    ids = [make_agent(alice, name=f"a{i}")["id"] for i in range(7)]

    capped = alice.client.get("/v1/agents", {"limit": 1000}).json()
    assert len(capped["results"]) == 3
    assert capped["next"] is not None

    default = alice.client.get("/v1/agents").json()
    assert len(default["results"]) == 2

    small = alice.client.get("/v1/agents", {"limit": 1}).json()
    assert len(small["results"]) == 1

    items, pages = walk(alice.client, "/v1/agents?limit=1000")
    assert [a["id"] for a in items] == ids[::-1]
    assert pages == 3


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1.5", "+2", " 2", "\u0662"])
def test_a_limit_that_is_not_a_positive_integer_is_400(alice, limit):
    error = error_of(alice.client.get("/v1/agents", {"limit": limit}), 400, "invalid_query")
    assert error["detail"] == {"limit": limit}


def test_patch_is_partial_and_moves_updated_at(alice, make_agent):
    agent = make_agent(alice, config={"max_turns": 4}, allowed_tools=["echo"])
    response = alice.client.patch(f"/v1/agents/{agent['id']}", {"name": "renamed"}, format="json")

    assert response.status_code == 200, response.content
    updated = response.json()
    assert updated["name"] == "renamed"
    unchanged = AGENT_FIELDS - {"name", "updated_at"}
    assert {k: updated[k] for k in unchanged} == {k: agent[k] for k in unchanged}
    assert parse(updated["updated_at"]) > parse(agent["updated_at"])
    assert parse(updated["created_at"]) == parse(agent["created_at"])
    assert alice.client.get(f"/v1/agents/{agent['id']}").json() == updated
    assert Agent.objects.get(pk=agent["id"]).name == "renamed"


def test_patch_replaces_config_and_can_null_allowed_tools(alice, make_agent):
    agent = make_agent(alice, config={"max_turns": 4}, allowed_tools=["echo"])
    response = alice.client.patch(
        f"/v1/agents/{agent['id']}",
        {"config": {"memory": {"writable": False}}, "allowed_tools": None},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["config"] == {"memory": {"writable": False}}
    assert response.json()["allowed_tools"] is None


def test_patch_with_invalid_content_changes_nothing(alice, make_agent):
    agent = make_agent(alice)
    response = alice.client.patch(
        f"/v1/agents/{agent['id']}", {"name": "ok", "model": "gpt4"}, format="json"
    )
    assert response.status_code == 422
    assert alice.client.get(f"/v1/agents/{agent['id']}").json() == agent


def test_delete_then_gone(alice, make_agent):
    agent = make_agent(alice)
    response = alice.client.delete(f"/v1/agents/{agent['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert alice.client.get(f"/v1/agents/{agent['id']}").status_code == 404
    assert alice.client.delete(f"/v1/agents/{agent['id']}").status_code == 404
    assert not Agent.objects.filter(pk=agent["id"]).exists()


def test_valid_full_config_is_stored_as_sent(alice):
    # config.skills must name skills of the caller's tenant (tests/agents/test_apis_skills.py).
    skill = Skill.objects.create(tenant_id=alice.member.tenant_id, owner=alice.member,
                                 name="research", description="Looks things up.")
    config = {**FULL_CONFIG, "skills": [str(skill.id)]}
    response = alice.client.post("/v1/agents", {**AGENT_BODY, "config": config},
                                 format="json")
    assert response.status_code == 201, response.content
    assert response.json()["config"] == config
    assert Agent.objects.get(pk=response.json()["id"]).config == config


@pytest.mark.parametrize(
    "field, value",
    [
        ("config", {"max_turn": 3}),  # unknown key (a typo)
        ("config", {"max_turns": 0}),
        ("config", {"interrupt_on": {"tool": ["maybe"]}}),
        ("config", {"summarization": {"trigger_tokens": 1000, "trigger_fraction": 0.5}}),
        ("config", {"summarization": {"trigger_fraction": 1.5}}),
        ("config", {"subagents": [{"name": "x", "description": "d"}]}),
        ("config", {"subagents": [{"name": "x", "description": "d", "system_prompt": ""}] * 2}),
        ("config", {"memory": {"writable": "yes"}}),
        ("config", {"skills": ["not-a-uuid"]}),
        ("model", "gpt4"),
        ("model", "foo:bar"),
        ("model", "anthropic:"),
        ("allowed_tools", "search"),
        ("allowed_tools", 5),
        ("allowed_tools", {"search": True}),
        ("allowed_tools", ["bad name"]),
        ("allowed_tools", ["dup", "dup"]),
        ("name", ""),
    ],
)
def test_invalid_content_is_422_naming_the_field(alice, field, value):
    response = alice.client.post("/v1/agents", {**AGENT_BODY, field: value}, format="json")
    error = error_of(response, 422, "validation_error")
    assert list(error["detail"]) == [field]
    assert not Agent.objects.filter(tenant_id=alice.member.tenant_id).exists()


@pytest.mark.parametrize("model", ["anthropic:claude-sonnet-4-5", "openai:gpt-4o-mini",
                                   "scripted:demo", "openai:org/model@v1.2"])
def test_valid_models_are_accepted(alice, model):
    response = alice.client.post("/v1/agents", {**AGENT_BODY, "model": model}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["model"] == model


@pytest.mark.parametrize("allowed_tools", [None, [], ["word_count", "read_file"]])
def test_allowed_tools_null_or_list(alice, allowed_tools):
    response = alice.client.post(
        "/v1/agents", {**AGENT_BODY, "allowed_tools": allowed_tools}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["allowed_tools"] == allowed_tools
    assert Agent.objects.get(pk=response.json()["id"]).allowed_tools == allowed_tools
