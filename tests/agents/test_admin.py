"""agents.admin: an agent saved in the admin obeys the API's rules for its config and tools, so
it runs like one saved through the API."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from agents.models import Agent


def form(alice, **fields) -> dict:
    return {"tenant": str(alice.member.tenant_id), "owner": str(alice.member.pk),
            "name": "helper", "description": "", "system_prompt": "Help.",
            "model": "scripted:demo", "allowed_tools": "null", "config": "{}",
            "memory_files-TOTAL_FORMS": "0", "memory_files-INITIAL_FORMS": "0", **fields}


@pytest.mark.parametrize(("config", "problem"), [
    ('{"max_turn": 3}', "Additional properties are not allowed"),
    ('{"interrupt_on": {"echo": ["maybe"]}}', "interrupt_on/echo/0"),
    (f'{{"skills": ["{uuid.uuid4()}"]}}', "there is no skill with id"),
])
def test_a_config_the_api_refuses_is_refused_here_too(staff_client, alice, config, problem):
    response = staff_client.post(reverse("admin:agents_agent_add"), form(alice, config=config))
    assert response.status_code == 200  # the form again, with the error
    assert problem in response.content.decode()
    assert not Agent.objects.exists()


def test_a_valid_agent_is_saved(staff_client, alice):
    response = staff_client.post(reverse("admin:agents_agent_add"), form(
        alice, config='{"max_turns": 3}', allowed_tools='["echo"]'))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get()
    assert agent.config == {"max_turns": 3} and agent.allowed_tools == ["echo"]


def test_bad_allowed_tools_are_refused(staff_client, alice):
    response = staff_client.post(reverse("admin:agents_agent_add"),
                                 form(alice, allowed_tools='"echo"'))
    assert response.status_code == 200 and not Agent.objects.exists()
