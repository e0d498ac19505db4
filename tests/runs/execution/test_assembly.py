"""Building a run's harness objects: an agent's config is parsed once per document."""

from __future__ import annotations

import pytest

from runs.execution import assembly


def test_an_agents_config_is_parsed_once_and_a_bad_one_fails_every_time(alice, make_agent):
    from agents.models import Agent
    from harness.errors import ConfigurationError

    agent = Agent.objects.get(pk=make_agent(alice, config={
        "interrupt_on": {"word_count": ["approve"]}, "max_turns": 7})["id"])
    first = assembly.agent_spec(agent)
    assert first.config.max_turns == 7 and dict(first.config.interrupt_on) == {
        "word_count": ("approve",)}
    agent.config = {"max_turns": 7, "interrupt_on": {"word_count": ["approve"]}}  # same, reordered
    assert assembly.agent_spec(agent).config is first.config
    agent.config = {"max_turns": "seven"}  # as a row edited past the API's checks could hold
    for _ in range(2):
        with pytest.raises(ConfigurationError, match="max_turns"):
            assembly.agent_spec(agent)
