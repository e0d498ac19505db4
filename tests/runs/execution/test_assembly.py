"""Building a run's harness objects: an agent's config is parsed once per content hash."""

from __future__ import annotations

import pytest

from runs.execution import assembly


def test_an_agents_config_is_parsed_once_per_content_hash_and_a_bad_one_every_time(
        alice, make_agent):
    from agents.models import Agent
    from agents.services import agent_update
    from harness.errors import ConfigurationError

    agent = Agent.objects.get(pk=make_agent(alice, config={
        "interrupt_on": {"word_count": ["approve"]}, "max_turns": 7})["id"])
    first = assembly.agent_spec(agent)
    assert first.config.max_turns == 7 and dict(first.config.interrupt_on) == {
        "word_count": ("approve",)}
    # The same content, reordered: the same hash (computed when written), the same config.
    agent = agent_update(agent=agent, data={"config": {
        "max_turns": 7, "interrupt_on": {"word_count": ["approve"]}}})
    assert assembly.agent_spec(agent).config is first.config
    changed = agent_update(agent=agent, data={"config": {"max_turns": 8}})
    assert changed.content_hash != agent.content_hash
    assert assembly.agent_spec(changed).config.max_turns == 8
    # A row written past the services (no version, no hash) is parsed every time.
    agent.content_hash, agent.config = "", {"max_turns": "seven"}
    for _ in range(2):
        with pytest.raises(ConfigurationError, match="max_turns"):
            assembly.agent_spec(agent)
