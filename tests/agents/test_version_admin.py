"""agents.version_admin: the agent's page lists its versions, read-only."""

from __future__ import annotations

import html

from django.urls import reverse

from agents.models import AgentVersion


def test_the_agents_page_lists_its_versions_newest_first(staff_client, alice, make_agent):
    agent = make_agent(alice, system_prompt="One <b>bold</b>.")
    alice.client.patch(f"/v1/agents/{agent['id']}", {"model": "scripted:calls"}, format="json")

    page = staff_client.get(reverse("admin:agents_agent_change", args=[agent["id"]]))
    assert page.status_code == 200
    text = page.content.decode()
    first, second = (AgentVersion.objects.get(agent_id=agent["id"], number=n) for n in (1, 2))
    assert text.index(second.content_hash[:12]) < text.index(first.content_hash[:12])
    assert "scripted:calls" in text and html.escape("One <b>bold</b>.") in text
    assert "<b>bold</b>" not in text  # the prompt is text, never markup
