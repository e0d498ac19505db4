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


def test_a_runs_page_links_to_the_version_it_ran(staff_client, alice, make_agent, make_session,
                                                 hango_settings):
    from runs.models import Run
    from tests.support.api import post_message

    hango_settings(run_inline=False, broker_url="")  # the run stays queued
    agent = make_agent(alice)
    alice.client.patch(f"/v1/agents/{agent['id']}", {"model": "scripted:calls"}, format="json")
    session = make_session(alice, agent["id"])
    run = Run.objects.get(pk=post_message(alice, session["id"], "hi").json()["run"]["id"])
    assert run.agent_version == 2

    page = staff_client.get(reverse("admin:runs_run_change", args=[run.pk])).content.decode()
    agent_page = reverse("admin:agents_agent_change", args=[agent["id"]])
    assert f'<a href="{agent_page}#agent-version-2">version 2</a>' in page
    listed = staff_client.get(reverse("admin:runs_run_changelist")).content.decode()
    assert f'href="{agent_page}#agent-version-2"' in listed
    table = staff_client.get(agent_page).content.decode()
    assert '<tr id="agent-version-2">' in table and '<tr id="agent-version-1">' in table

    Run.objects.filter(pk=run.pk).update(agent_version=None)  # a run from before versions
    page = staff_client.get(reverse("admin:runs_run_change", args=[run.pk])).content.decode()
    assert "#agent-version-" not in page
