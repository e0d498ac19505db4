"""``/v1/agents/{id}/versions``: the list (newest first, paginated), one version, the diff
between two; going back by PATCH; another tenant's or member's agent is a 404."""

from __future__ import annotations

import pytest

from tests.support.api import error_of, walk

VERSION_FIELDS = {"agent", "number", "content_hash", "system_prompt", "model", "allowed_tools",
                  "config", "author", "created_at"}


@pytest.fixture
def agent(alice, make_agent) -> dict:
    """Three versions: the prompt rewritten, then the model and config changed."""
    made = make_agent(alice, system_prompt="You help.\nBe kind.\n", allowed_tools=["ls", "echo"],
                      config={"max_turns": 3, "summarization": {"keep_messages": 4}})
    for change in ({"system_prompt": "You help.\nBe brief.\n"},
                   {"model": "scripted:calls", "allowed_tools": ["echo", "grep"],
                    "config": {"summarization": {"keep_messages": 6}, "memory": {}}}):
        response = alice.client.patch(f"/v1/agents/{made['id']}", change, format="json")
        assert response.status_code == 200, response.content
    return made


def url(agent: dict, tail: str = "") -> str:
    return f"/v1/agents/{agent['id']}/versions{tail}"


def test_the_list_is_newest_first_and_paginated(alice, agent):
    assert alice.client.get(f"/v1/agents/{agent['id']}").json()["version"] == 3
    everything, pages = walk(alice.client, url(agent, "?limit=2"))
    assert [v["number"] for v in everything] == [3, 2, 1] and pages == 2
    assert set(everything[0]) == VERSION_FIELDS
    assert everything[0]["author"] == str(alice.member.pk)
    first = alice.client.get(url(agent, "/1")).json()
    assert first == everything[2]
    assert (first["system_prompt"], first["model"]) == ("You help.\nBe kind.\n", "scripted:demo")


def test_the_diff_says_what_changed_field_by_field(alice, agent):
    response = alice.client.get(url(agent, "/1/diff/3"))
    assert response.status_code == 200, response.content
    diff = response.json()
    assert (diff["from_version"], diff["to_version"], diff["same_content"]) == (1, 3, False)
    assert diff["system_prompt"]["changed"]
    assert "-Be kind.\n+Be brief.\n" in diff["system_prompt"]["diff"]
    assert diff["model"] == {"changed": True, "old": "scripted:demo", "new": "scripted:calls"}
    assert diff["allowed_tools"]["changes"] == [
        {"path": "$", "change": "removed", "old": "ls", "new": None},
        {"path": "$", "change": "added", "old": None, "new": "grep"}]
    assert diff["config"]["changes"] == [
        {"path": "$.max_turns", "change": "removed", "old": 3, "new": None},
        {"path": "$.memory", "change": "added", "old": None, "new": {}},
        {"path": "$.summarization.keep_messages", "change": "changed", "old": 4, "new": 6}]
    same = alice.client.get(url(agent, "/2/diff/2")).json()
    assert same["same_content"] and not any(
        same[f]["changed"] for f in ("system_prompt", "model", "allowed_tools", "config"))
    assert same["system_prompt"]["diff"] == ""


def test_going_back_is_a_patch_with_an_old_versions_content(alice, agent):
    first = alice.client.get(url(agent, "/1")).json()
    body = {k: first[k] for k in ("system_prompt", "model", "allowed_tools", "config")}
    response = alice.client.patch(f"/v1/agents/{agent['id']}", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 4

    fourth = alice.client.get(url(agent, "/4")).json()
    assert fourth["content_hash"] == first["content_hash"]
    assert alice.client.get(url(agent, "/1/diff/4")).json()["same_content"]
    again = alice.client.patch(f"/v1/agents/{agent['id']}", body, format="json")
    assert again.json()["version"] == 4  # the same content again: no new version


@pytest.mark.parametrize("tail", ["/9", "/0", "/x", "/-1", "/1/diff/9", "/9/diff/1",
                                  "/99999999999999999999"])
def test_a_version_the_agent_does_not_have_is_a_404(alice, agent, tail):
    error_of(alice.client.get(url(agent, tail)), 404, "not_found")


@pytest.mark.parametrize("tail", ["", "/1", "/1/diff/2"])
def test_another_tenants_or_members_agent_is_a_404(alice, bob, outsider, agent, tail):
    for other in (bob, outsider):
        error_of(other.client.get(url(agent, tail)), 404, "not_found")
