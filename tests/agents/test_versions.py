"""Agent versions written by the services: one per change of content, none otherwise, each with
the hash of its canonical content, immutable."""

from __future__ import annotations

import pytest

from accounts.models import AuditEntry
from agents import services, versions
from agents.models import Agent, AgentVersion

BODY = {"name": "helper", "system_prompt": "You help.", "model": "scripted:demo",
        "allowed_tools": ["echo"], "config": {"max_turns": 3}}


def numbers(agent: Agent) -> list[int]:
    return list(AgentVersion.objects.filter(agent=agent).values_list("number", flat=True))


def test_create_makes_version_one_authored_by_the_creator(alice):
    agent = services.agent_create(member=alice.member, data=BODY)

    version = AgentVersion.objects.get(agent=agent)
    assert (version.number, version.author_id) == (1, alice.member.pk)
    assert versions.content_of(version) == versions.content_of(agent)
    assert version.content_hash == versions.content_hash(versions.content_of(agent))
    assert (agent.version, agent.content_hash) == (1, version.content_hash)
    assert Agent.objects.get(pk=agent.pk).version == 1


def test_a_change_of_content_makes_a_new_version_and_anything_else_none(alice):
    agent = services.agent_create(member=alice.member, data=BODY)

    services.agent_update(agent=agent, data={"name": "renamed", "description": "d"},
                          actor=alice.member)
    services.agent_update(agent=agent, data={"system_prompt": "You help."}, actor=alice.member)
    services.agent_update(agent=agent, data={"config": {"max_turns": 3}}, actor=alice.member)
    assert numbers(agent) == [1]

    updated = services.agent_update(agent=agent, data={"system_prompt": "Be brief."},
                                    actor=alice.member)
    assert numbers(agent) == [2, 1]
    assert updated.version == 2
    assert Agent.objects.get(pk=agent.pk).version == 2
    audit = AuditEntry.objects.filter(object_id=str(agent.pk), action="agent.update")
    assert [e.detail.get("version") for e in audit.order_by("created_at")] == [
        None, None, None, 2]


def test_the_hash_is_that_of_the_content_whatever_its_keys_order():
    one = {"model": "scripted:demo", "config": {"a": 1, "b": {"c": [1, 2], "d": None}}}
    two = {"config": {"b": {"d": None, "c": [1, 2]}, "a": 1}, "model": "scripted:demo"}
    assert versions.content_hash(one) == versions.content_hash(two)
    assert versions.content_hash(one) != versions.content_hash({**one, "model": "scripted:x"})
    # Pinned: the hash is stored, so the canonical form may never change.
    assert versions.canonical({"b": "é", "a": [1, None]}) == '{"a":[1,null],"b":"é"}'


def test_going_back_is_a_new_version_with_the_old_hash(alice):
    agent = services.agent_create(member=alice.member, data=BODY)
    services.agent_update(agent=agent, data={"model": "scripted:calls", "allowed_tools": None},
                          actor=alice.member)
    first = AgentVersion.objects.get(agent=agent, number=1)

    services.agent_update(agent=agent, data=versions.content_of(first), actor=alice.member)

    third = AgentVersion.objects.get(agent=agent, number=3)
    assert third.content_hash == first.content_hash
    assert versions.content_of(third) == versions.content_of(first)


def test_a_version_is_immutable(alice):
    agent = services.agent_create(member=alice.member, data=BODY)
    version = AgentVersion.objects.get(agent=agent)
    version.system_prompt = "changed"
    with pytest.raises(ValueError, match="immutable"):
        version.save()
    assert AgentVersion.objects.get(pk=version.pk).system_prompt == "You help."


def test_detaching_a_deleted_skill_makes_a_version(alice):
    skill = services.skill_create(member=alice.member,
                                  data={"name": "s", "description": "d", "instructions": "i"})
    agent = services.agent_create(member=alice.member,
                                  data={**BODY, "config": {"skills": [str(skill.pk)]}})

    services.skill_delete(skill=skill, actor=alice.member)

    latest = AgentVersion.objects.filter(agent=agent).first()
    assert latest is not None and latest.number == 2
    assert latest.config == {"skills": []}


def test_executed_is_the_row_for_the_latest_and_the_version_for_an_older_one(alice):
    agent = services.agent_create(member=alice.member, data=BODY)
    services.agent_update(agent=agent, data={"system_prompt": "Be brief."}, actor=alice.member)
    agent = Agent.objects.get(pk=agent.pk)

    assert versions.executed(agent, 2) is agent
    assert versions.executed(agent, None) is agent
    old = versions.executed(agent, 1)
    assert (old.pk, old.system_prompt, old.version) == (agent.pk, "You help.", 1)
    assert agent.system_prompt == "Be brief."
