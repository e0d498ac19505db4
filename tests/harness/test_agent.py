"""harness.agent: the config document parsed once into a frozen AgentConfig, and the spec's
one answer to "may this agent use this tool"."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from harness.agent import (
    AgentConfig,
    AgentSpec,
    SubagentSpec,
    SummarizationOptions,
    config_problems,
)
from harness.errors import ConfigurationError

SKILL = str(uuid.uuid4())
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
    config = AgentConfig.from_json(FULL)
    assert config.max_turns == 7
    assert dict(config.interrupt_on) == {"delete": ("approve", "reject")}
    assert config.summarization == SummarizationOptions(trigger_tokens=900, keep_messages=2)
    assert config.subagents == (
        SubagentSpec(name="r", description="Finds.", system_prompt="Find.", tools=("echo",)),
        SubagentSpec(name="w", description="Writes.", system_prompt="Write.", tools=None))
    assert config.memory_writable is True and config.skills == (SKILL,)


def test_an_empty_document_is_the_defaults_and_the_config_is_frozen():
    config = AgentConfig.from_json({})
    assert config == AgentConfig()
    assert config.max_turns is None and config.summarization.enabled
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_turns = 3  # type: ignore[misc]
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
    ({"summarization": {"trigger_tokens": 100, "trigger_fraction": 0.5}}, "summarization"),
    ({"subagents": [{"name": "x"}]}, "subagents/0"),
    ({"subagents": [FULL["subagents"][1], FULL["subagents"][1]]}, "subagents: names must be "
                                                                   "unique"),
    ([], "(root)"),
])
def test_a_bad_document_is_refused_saying_where(document, where):
    with pytest.raises(ConfigurationError, match="malformed") as raised:
        AgentConfig.from_json(document)
    assert where in str(raised.value)
    assert any(where in p for p in config_problems(document))


def test_the_api_also_checks_formats_the_harness_does_not_need():
    assert config_problems({"skills": ["not-a-uuid"]}) == [
        "skills/0: 'not-a-uuid' is not a 'uuid'"]
    assert AgentConfig.from_json({"skills": ["not-a-uuid"]}).skills == ("not-a-uuid",)


def test_allows_and_max_turns():
    open_agent = AgentSpec(id="a", name="a", model="scripted:x")
    assert open_agent.allows("anything") and open_agent.max_turns == 50
    narrow = AgentSpec(id="a", name="a", model="scripted:x", allowed_tools=("echo",),
                       config=AgentConfig(max_turns=3), default_max_turns=9)
    assert narrow.allows("echo") and not narrow.allows("write_todos")
    assert narrow.max_turns == 3
    assert AgentSpec(id="a", name="a", model="scripted:x", default_max_turns=9).max_turns == 9
