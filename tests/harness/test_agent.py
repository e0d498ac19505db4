"""harness.agent: the config document parsed once into a frozen AgentConfig, the schema the
API publishes for it, and the spec's one answer to "may this agent use this tool"."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import ValidationError

from harness.agent import (
    CONFIG_SCHEMA,
    TOOL_LIST_SCHEMA,
    AgentConfig,
    AgentSpec,
    MemoryOptions,
    SubagentSpec,
    SummarizationOptions,
    config_problems,
)
from harness.errors import ConfigurationError

# Fixed, not random: pytest-xdist needs the same test ids in each process.
SKILL = "64d7fe90-a70a-416a-b016-d40f81498823"
FULL = {
    "max_turns": 7,
    "interrupt_on": {"delete": ["approve", "reject"]},
    "summarization": {"trigger_tokens": 900, "keep_messages": 2},
    "subagents": [{"name": "r", "description": "Finds.", "system_prompt": "Find.",
                   "tools": ["echo"]},
                  {"name": "w", "description": "Writes.", "system_prompt": "Write."}],
    "memory": {"writable": True},
    "skills": [SKILL],
}


def test_every_option_is_parsed_into_typed_values():
    config = AgentConfig.from_json(json.dumps(FULL))
    assert config.max_turns == 7
    assert dict(config.interrupt_on) == {"delete": ("approve", "reject")}
    assert config.summarization == SummarizationOptions(trigger_tokens=900, keep_messages=2)
    assert config.subagents == (
        SubagentSpec(name="r", description="Finds.", system_prompt="Find.", tools=("echo",)),
        SubagentSpec(name="w", description="Writes.", system_prompt="Write.", tools=None))
    assert config.memory == MemoryOptions(writable=True) and config.skills == (SKILL,)


def test_an_empty_document_is_the_defaults_and_the_config_is_frozen():
    config = AgentConfig.from_json("{}")
    assert config == AgentConfig()
    assert config.max_turns is None and config.summarization.enabled
    assert not config.memory.writable and config.subagents == config.skills == ()
    with pytest.raises(ValidationError, match="frozen"):
        config.max_turns = 3  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        config.summarization.keep_messages = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.interrupt_on["x"] = ("approve",)  # type: ignore[index]


@pytest.mark.parametrize(("document", "where"), [
    ({"max_turn": 3}, "max_turn"),
    ({"max_turns": 0}, "max_turns"),
    # JSON integers only: JSON Schema alone would read 5.0 as an integer (and store it)
    ({"max_turns": 5.0}, "max_turns"),
    ({"max_turns": True}, "max_turns"),
    ({"summarization": {"keep_messages": 4.0}}, "summarization/keep_messages"),
    ({"memory": {"writable": 1}}, "memory/writable"),
    ({"interrupt_on": {"x": ["maybe"]}}, "interrupt_on/x/0"),
    # Left out is unset, but no option is ever null.
    ({"max_turns": None}, "max_turns"),
    ({"summarization": {"trigger_tokens": None}}, "summarization/trigger_tokens"),
    ({"subagents": [{**FULL["subagents"][1], "tools": None}]}, "subagents/0/tools"),
    ({"interrupt_on": {"x": []}}, "interrupt_on/x"),
    ({"interrupt_on": {"x": ["approve", "approve"]}}, "interrupt_on/x"),
    ({"interrupt_on": {"no spaces": ["approve"]}}, "interrupt_on/no spaces"),
    ({"summarization": {"trigger_tokens": 100, "trigger_fraction": 0.5}}, "summarization"),
    ({"summarization": {"trigger_fraction": 1.5}}, "summarization/trigger_fraction"),
    ({"subagents": [{"name": "x"}]}, "subagents/0"),
    # A name is the whole string: no newline after it (Python's "$" would let one through).
    ({"subagents": [{**FULL["subagents"][1], "name": "w\n"}]}, "subagents/0/name"),
    ({"subagents": [FULL["subagents"][1], FULL["subagents"][1]]}, "subagents: names must be "
                                                                   "unique"),
    ({"skills": ["not-a-uuid"]}, "skills/0"),
    ({"skills": [SKILL.replace("-", "")]}, "skills/0"),  # the canonical form only
    ({"skills": [SKILL, SKILL]}, "skills"),
    ([], "(root)"),
])
def test_a_bad_document_is_refused_saying_where(document, where):
    with pytest.raises(ConfigurationError, match="malformed") as raised:
        AgentConfig.from_json(json.dumps(document))
    assert where in str(raised.value)
    assert any(p.startswith(where) for p in config_problems(document))


def test_each_problem_is_one_line_naming_its_place():
    assert config_problems({"max_turns": 5.0, "memory": {"writable": True, "extra": 1},
                            "interrupt_on": {"x": ["maybe"]}}) == [
        "max_turns: Input should be a valid integer",
        "interrupt_on/x/0: Input should be 'approve', 'edit', 'reject' or 'respond'",
        "memory/extra: Extra inputs are not permitted",
    ]
    assert config_problems({"interrupt_on": {"x": []}}) == [
        "interrupt_on/x: List should have at least 1 item, not 0"]
    assert config_problems({"skills": [SKILL, SKILL]}) == [
        f"skills: Items should be unique, {SKILL!r} is repeated"]


VALID = [{}, FULL, {"summarization": {"trigger_fraction": 1}},
         {"summarization": {"enabled": False, "trigger_fraction": 0.5}},
         {"skills": [SKILL.upper()]}, {"subagents": [], "interrupt_on": {}}]
# Not {"max_turns": 5.0}: JSON Schema counts 5.0 as an integer, hango's JSON does not.
INVALID = [{"max_turn": 3}, {"max_turns": True}, {"max_turns": None},
           {"max_turns": 10_001}, {"interrupt_on": {"x y": ["approve"]}},
           {"interrupt_on": {"x": ["approve", "approve"]}}, {"interrupt_on": {"x": []}},
           {"summarization": {"trigger_tokens": 9, "trigger_fraction": 0.5}},
           {"summarization": {"trigger_fraction": 0}}, {"summarization": {"x": 1}},
           {"subagents": [{"name": "a", "description": "", "system_prompt": ""}]},
           {"subagents": [{"name": "a", "description": "d", "system_prompt": "", "tools": None}]},
           {"memory": {"writable": 1}}, {"skills": ["not-a-uuid"]}, {"skills": [SKILL, SKILL]}, []]


@pytest.mark.parametrize("document", VALID + INVALID, ids=json.dumps)
def test_the_published_schema_says_what_the_model_accepts(document):
    # The API publishes CONFIG_SCHEMA: a client validating against it gets the server's answer
    # (the one rule it cannot state, unique subagent names, aside).
    checker = jsonschema.Draft202012Validator(
        CONFIG_SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert checker.is_valid(document) == (document in VALID) == (not config_problems(document))


def test_the_published_schemas_stand_alone():
    # OpenAPI embeds them in a field: no $defs to point into, no titles made from field names.
    for schema in (CONFIG_SCHEMA, TOOL_LIST_SCHEMA):
        jsonschema.Draft202012Validator.check_schema(schema)
        assert "$ref" not in json.dumps(schema) and "$defs" not in schema
    assert "title" not in CONFIG_SCHEMA["properties"]["max_turns"]
    assert TOOL_LIST_SCHEMA == {"type": "array", "maxItems": 256, "uniqueItems": True,
                                "items": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}


def test_allows_and_max_turns():
    open_agent = AgentSpec(id="a", name="a", model="scripted:x")
    assert open_agent.allows("anything") and open_agent.max_turns == 50
    narrow = AgentSpec(id="a", name="a", model="scripted:x", allowed_tools=("echo",),
                       config=AgentConfig(max_turns=3), default_max_turns=9)
    assert narrow.allows("echo") and not narrow.allows("write_todos")
    assert narrow.max_turns == 3
    assert AgentSpec(id="a", name="a", model="scripted:x", default_max_turns=9).max_turns == 9


CLIENT_TOOL = {"name": "lookup_order", "description": "Find an order.",
               "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}}}}


@pytest.mark.parametrize(("config", "problem"), [
    ({"client_tools": [{**CLIENT_TOOL, "input_schema": {"type": "objet"}}]},
     "client_tools/0/input_schema: not a valid JSON Schema"),
    ({"client_tools": [{**CLIENT_TOOL, "input_schema": {"type": "string"}}]},
     "client_tools/0/input_schema: a tool's arguments are an object"),
    ({"client_tools": [{**CLIENT_TOOL, "name": "look up"}]}, "client_tools/0/name:"),
    ({"client_tools": [CLIENT_TOOL, CLIENT_TOOL]}, "client_tools: names must be unique"),
    ({"client_tools": [{**CLIENT_TOOL, "extra": 1}]}, "client_tools/0/extra:"),
    ({"client_tool_timeout": -1}, "client_tool_timeout:"),
    ({"client_tool_timeout": 1.5}, "client_tool_timeout:"),
])
def test_client_tools_are_checked_as_tools_and_their_schemas_as_json_schema(config, problem):
    assert any(p.startswith(problem) for p in config_problems(config)), config_problems(config)


def test_client_tools_default_to_none_and_a_ten_minute_wait():
    parsed = AgentConfig.from_json(json.dumps({"client_tools": [CLIENT_TOOL]}))
    assert parsed.client_tools[0].input_schema == CLIENT_TOOL["input_schema"]
    assert parsed.client_tool_timeout == 600 and AgentConfig().client_tools == ()
