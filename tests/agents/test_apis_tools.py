"""Tool names an agent or a skill gives must be tools a run can offer: an unknown one in
``allowed_tools``, ``config.interrupt_on`` or a subagent's ``tools`` (an agent's), or in a
skill's ``allowed_tools``, is a 422 naming it, on create and on PATCH, and nothing is written.
Every tool of hango's own is accepted; an agent stored before the rule keeps its names until
they are written again."""

from __future__ import annotations

import pytest

from agents.models import Agent, Skill
from harness.tool_names import builtin_tool_names
from tests.support.api import AGENT_BODY, error_of

SUBAGENT = {"name": "helper", "description": "Helps.", "system_prompt": "Help."}

# A body's field naming "serch" (no tool) at one place, and where the 422 says so.
UNKNOWN = [
    ({"allowed_tools": ["echo", "serch"]}, "allowed_tools", "1: "),
    ({"config": {"interrupt_on": {"serch": ["approve"]}}}, "config", "interrupt_on/serch: "),
    ({"config": {"subagents": [{**SUBAGENT, "tools": ["ls", "serch"]}]}}, "config",
     "subagents/0/tools/1: "),
]
IDS = ["allowed_tools", "interrupt_on", "subagent tools"]


def unknown_named(response, field: str, where: str, name: str = "serch") -> None:
    error = error_of(response, 422, "validation_error")
    assert error["detail"] == {field: [f"{where}Unknown tool {name!r}: the tools are "
                                       f"{', '.join(sorted(builtin_tool_names()))}."]}, error


@pytest.mark.parametrize("fields, field, where", UNKNOWN, ids=IDS)
def test_an_unknown_tool_name_is_refused_on_create(alice, fields, field, where):
    response = alice.client.post("/v1/agents", {**AGENT_BODY, **fields}, format="json")
    unknown_named(response, field, where)
    assert not Agent.objects.exists()


@pytest.mark.parametrize("fields, field, where", UNKNOWN, ids=IDS)
def test_an_unknown_tool_name_is_refused_on_patch(alice, make_agent, fields, field, where):
    agent = make_agent(alice, allowed_tools=["echo"], config={"max_turns": 3})
    before = Agent.objects.values().get(pk=agent["id"])
    response = alice.client.patch(f"/v1/agents/{agent['id']}", {"name": "renamed", **fields},
                                  format="json")
    unknown_named(response, field, where)
    assert Agent.objects.values().get(pk=agent["id"]) == before


def test_every_unknown_name_is_named_and_a_near_one_suggested(alice):
    response = alice.client.post("/v1/agents", {
        **AGENT_BODY, "allowed_tools": ["read_flie", "echo", "wrte_todos"],
        "config": {"interrupt_on": {"edit_fiel": ["approve"], "echo": ["reject"]}}},
        format="json")
    error = error_of(response, 422, "validation_error")
    assert error["detail"] == {
        "allowed_tools": ["0: Unknown tool 'read_flie': did you mean 'read_file'?",
                          "2: Unknown tool 'wrte_todos': did you mean 'write_todos'?"],
        "config": ["interrupt_on/edit_fiel: Unknown tool 'edit_fiel': did you mean "
                   "'edit_file'?"]}


def test_every_tool_a_run_can_offer_is_accepted_everywhere(alice):
    names = sorted(builtin_tool_names())
    body = {**AGENT_BODY, "allowed_tools": names,
            "config": {"interrupt_on": {name: ["approve"] for name in names},
                       "subagents": [{**SUBAGENT, "tools": names}]}}
    response = alice.client.post("/v1/agents", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["allowed_tools"] == names
    skill = alice.client.post("/v1/skills", {"name": "all", "description": "d",
                                             "allowed_tools": names}, format="json")
    assert skill.status_code == 201, skill.content


def test_a_stored_agent_with_an_unknown_name_still_takes_other_changes(alice, make_agent):
    agent = make_agent(alice)
    Agent.objects.filter(pk=agent["id"]).update(
        allowed_tools=["gone"], config={"interrupt_on": {"gone": ["approve"]}})

    response = alice.client.patch(f"/v1/agents/{agent['id']}", {"name": "renamed"},
                                  format="json")

    assert response.status_code == 200, response.content
    assert response.json()["allowed_tools"] == ["gone"]
    again = alice.client.patch(f"/v1/agents/{agent['id']}", {"allowed_tools": ["gone"]},
                               format="json")
    unknown_named(again, "allowed_tools", "0: ", "gone")


def test_a_skill_with_an_unknown_tool_is_refused_on_create_and_patch(alice):
    body = {"name": "pdf-forms", "description": "d", "allowed_tools": ["echo", "serch"]}
    unknown_named(alice.client.post("/v1/skills", body, format="json"), "allowed_tools", "1: ")
    assert not Skill.objects.exists()

    skill = alice.client.post("/v1/skills", {**body, "allowed_tools": ["echo"]}, format="json")
    assert skill.status_code == 201, skill.content
    patched = alice.client.patch(f"/v1/skills/{skill.json()['id']}",
                                 {"description": "e", "allowed_tools": ["serch"]}, format="json")
    unknown_named(patched, "allowed_tools", "0: ")
    assert Skill.objects.values_list("description", "allowed_tools").get() == ("d", ["echo"])


LOOKUP = {"name": "lookup_order", "description": "Find an order.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}}}}


def test_client_tools_are_stored_and_allowed_tools_may_name_them(alice):
    response = alice.client.post("/v1/agents", {
        **AGENT_BODY, "allowed_tools": ["echo", "lookup_order"],
        "config": {"client_tools": [LOOKUP], "client_tool_timeout": 30}}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["config"]["client_tools"] == [LOOKUP]


@pytest.mark.parametrize(("config", "problem"), [
    ({"client_tools": [{**LOOKUP, "name": "read_file"}]},
     "client_tools/0/name: 'read_file' is already the name of a built-in tool; give the client "
     "tool another name."),
    ({"client_tools": [LOOKUP], "interrupt_on": {"lookup_order": ["approve"]}},
     "interrupt_on/lookup_order: 'lookup_order' is a client tool: its calls wait for the "
     "caller's result, not for a human's decision."),
    ({"client_tools": [LOOKUP, LOOKUP]},
     "client_tools: names must be unique, 'lookup_order' is repeated"),
    ({"client_tools": [{**LOOKUP, "input_schema": {"type": "object", "required": "order"}}]},
     "client_tools/0/input_schema: not a valid JSON Schema"),
    ({"client_tool_timeout": -5}, "client_tool_timeout: Input should be greater than or equal"),
], ids=["builtin clash", "interrupt_on", "repeated", "bad schema", "negative timeout"])
def test_a_client_tool_that_clashes_or_is_malformed_is_a_422_naming_it(alice, make_agent,
                                                                        config, problem):
    response = alice.client.post("/v1/agents", {**AGENT_BODY, "config": config}, format="json")
    error = error_of(response, 422, "validation_error")
    assert any(line.startswith(problem) for line in error["detail"]["config"]), error
    agent = make_agent(alice, config={"max_turns": 3})
    patched = alice.client.patch(f"/v1/agents/{agent['id']}", {"config": config}, format="json")
    assert error_of(patched, 422, "validation_error")["detail"] == error["detail"]
    assert not Agent.objects.filter(config__has_key="client_tools").exists()
