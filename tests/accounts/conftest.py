"""Fixtures of the accounts tests."""

from __future__ import annotations

import pytest

from agents import services as agent_services
from agents.models import Agent


@pytest.fixture
def world(owner, alice, make_agent, make_session, hango_settings):
    """An agent, a session, a memory file and a skill of ``alice``, a webhook and a schedule of
    hers, and an MCP server of the tenant; runs stay queued."""
    hango_settings(run_inline=False, broker_url="")
    agent = make_agent(alice)
    session = make_session(alice, agent_id=agent["id"])
    memory = agent_services.memory_file_create(
        agent=Agent.objects.get(pk=agent["id"]), path="/memories/old.md", content="old")
    skill = alice.client.post("/v1/skills", {"name": "pdf-forms", "description": "Forms.",
                                             "instructions": "Fill them."}, format="json").json()
    webhook = alice.client.post("/v1/webhooks", {"url": "https://hooks.example.com/x"},
                                format="json").json()
    schedule = alice.client.post("/v1/schedules", {"name": "n", "agent": agent["id"],
                                                   "cron": "0 9 * * *", "content": "hi"},
                                 format="json").json()
    server = owner.client.post("/v1/mcp-servers", {"name": "docs", "transport": "streamable_http",
                                                   "url": "https://docs.example.com/mcp"},
                               format="json").json()
    suite = alice.client.post("/v1/eval-suites", {"name": "smoke"}, format="json").json()
    case = alice.client.post(f"/v1/eval-suites/{suite['id']}/cases",
                             {"name": "hi", "turns": ["hi"]}, format="json").json()
    return {"agent": agent["id"], "session": session["id"], "memory": memory, "skill": skill["id"],
            "webhook": webhook["id"], "schedule": schedule["id"], "mcp_server": server["id"],
            "suite": suite["id"], "case": case["id"]}
