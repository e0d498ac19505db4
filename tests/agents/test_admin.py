"""agents.admin: an agent saved in the admin obeys the API's rules for its config and tools
(known tool names only), so it runs like one saved through the API."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from accounts.models import AuditAction, AuditEntry
from agents.models import Agent, MemoryFile, Skill


def form(alice, **fields) -> dict:
    return {"tenant": str(alice.member.tenant_id), "owner": str(alice.member.pk),
            "name": "helper", "description": "", "system_prompt": "Help.",
            "model": "scripted:demo", "allowed_tools": "null", "config": "{}",
            "memory_files-TOTAL_FORMS": "0", "memory_files-INITIAL_FORMS": "0", **fields}


@pytest.mark.parametrize(("config", "problem"), [
    ('{"max_turn": 3}', "max_turn: Extra inputs are not permitted"),
    ('{"interrupt_on": {"echo": ["maybe"]}}', "interrupt_on/echo/0"),
    ('{"skills": ["2b0e6c5e-2f5c-4a8e-9d07-1f1a6c3e8b11"]}', "there is no skill with id"),
    ('{"model_settings": {"top_p": 2}}', "model_settings/top_p"),
    ('{"model_settings": {"max_output_tokens": 40000}}',
     "model_settings/max_output_tokens: 40,000 is more than scripted:demo gives"),
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


@pytest.mark.parametrize(("fields", "problem"), [
    ({"allowed_tools": '["echo", "serch"]'}, "1: Unknown tool 'serch'"),
    ({"config": '{"interrupt_on": {"serch": ["approve"]}}'},
     "interrupt_on/serch: Unknown tool 'serch'"),
    ({"config": '{"subagents": [{"name": "h", "description": "d", "system_prompt": "p", '
                '"tools": ["serch"]}]}'}, "subagents/0/tools/0: Unknown tool 'serch'"),
])
def test_an_unknown_tool_name_is_refused_here_as_by_the_api(staff_client, alice, fields,
                                                            problem):
    response = staff_client.post(reverse("admin:agents_agent_add"), form(alice, **fields))
    assert response.status_code == 200  # the form again, with the error
    assert problem in html.unescape(response.content.decode())
    assert not Agent.objects.exists()


# -- every write through the services, audited ----------------------------------------------------

def audited(action: str) -> AuditEntry:
    return AuditEntry.objects.get(action=action)


def test_an_agent_added_here_is_audited_as_the_staff_users_member(staff_client, alice,
                                                                  staff_member):
    response = staff_client.post(reverse("admin:agents_agent_add"), form(alice))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get()
    assert agent.owner == alice.member
    entry = audited(AuditAction.AGENT_CREATE)
    assert entry.actor == staff_member and entry.object_id == str(agent.pk)


def test_an_agent_added_with_a_memory_file_writes_both_through_the_services(staff_client,
                                                                           alice):
    rows = {"memory_files-TOTAL_FORMS": "1", "memory_files-0-path": "/memories/AGENTS.md",
            "memory_files-0-content": "Be kind."}
    response = staff_client.post(reverse("admin:agents_agent_add"), form(alice, **rows))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get()
    assert list(agent.memory_files.values_list("path", "content")) == [
        ("/memories/AGENTS.md", "Be kind.")]
    entry = audited(AuditAction.MEMORY_WRITE)
    assert entry.detail == {"agent": str(agent.pk), "path": "/memories/AGENTS.md",
                            "created": True}


def test_an_owner_from_another_tenant_is_refused(staff_client, alice, outsider):
    response = staff_client.post(reverse("admin:agents_agent_add"),
                                 form(alice, owner=str(outsider.member.pk)))
    assert response.status_code == 200 and "not a member of" in response.content.decode()
    assert not Agent.objects.exists()


def change_form(agent: Agent, **fields) -> dict:
    return {"name": agent.name, "description": agent.description,
            "system_prompt": agent.system_prompt, "model": agent.model,
            "allowed_tools": "null", "config": "{}", "initial-config": "{}",
            "memory_files-TOTAL_FORMS": "0", "memory_files-INITIAL_FORMS": "0", **fields}


def test_an_agent_changed_here_is_audited_and_keeps_its_tenant_and_owner(staff_client, alice,
                                                                         bob, outsider,
                                                                         make_agent):
    agent = Agent.objects.get(pk=make_agent(alice)["id"])
    change = reverse("admin:agents_agent_change", args=[agent.pk])
    response = staff_client.post(change, change_form(
        agent, description="Now terse.", tenant=str(outsider.member.tenant_id),
        owner=str(bob.member.pk)))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent.refresh_from_db()
    assert agent.description == "Now terse."
    assert (agent.tenant_id, agent.owner_id) == (alice.member.tenant_id, alice.member.pk)
    entry = audited(AuditAction.AGENT_UPDATE)
    assert entry.actor is None and entry.detail == {"changed": ["description"]}


def test_an_agent_deleted_here_is_audited_with_what_it_held(staff_client, alice, make_session):
    session = make_session(alice)
    schedule = alice.client.post("/v1/schedules", {
        "name": "nightly", "agent": session["agent"], "cron": "0 3 * * *",
        "content": "Go."}, format="json")
    assert schedule.status_code == 201, schedule.content
    delete = reverse("admin:agents_agent_delete", args=[session["agent"]])
    confirm = staff_client.get(delete).content.decode()
    assert "Cannot delete" not in confirm and "nightly" in confirm
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not Agent.objects.exists()
    assert audited(AuditAction.AGENT_DELETE).object_id == session["agent"]


def test_memory_files_on_the_agents_page_go_through_the_services(staff_client, alice,
                                                                 make_agent, hango_settings):
    hango_settings(memory_max_files=2)
    agent = Agent.objects.get(pk=make_agent(alice)["id"])
    kept = MemoryFile.objects.create(agent=agent, path="/memories/a.md", content="a")
    gone = MemoryFile.objects.create(agent=agent, path="/memories/b.md", content="b")
    change = reverse("admin:agents_agent_change", args=[agent.pk])
    rows = {"memory_files-TOTAL_FORMS": "3", "memory_files-INITIAL_FORMS": "2",
            "memory_files-0-id": str(kept.pk), "memory_files-0-agent": str(agent.pk),
            "memory_files-0-path": kept.path, "memory_files-0-content": "a, again",
            "memory_files-1-id": str(gone.pk), "memory_files-1-agent": str(agent.pk),
            "memory_files-1-path": gone.path, "memory_files-1-content": "b",
            "memory_files-1-DELETE": "on",
            "memory_files-2-agent": str(agent.pk), "memory_files-2-path": "/memories/c.md",
            "memory_files-2-content": "c"}
    response = staff_client.post(change, {**change_form(agent), **rows})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert dict(MemoryFile.objects.values_list("path", "content")) == {
        "/memories/a.md": "a, again", "/memories/c.md": "c"}
    writes = AuditEntry.objects.filter(action=AuditAction.MEMORY_WRITE)
    assert sorted(e.detail["path"] for e in writes) == ["/memories/a.md", "/memories/c.md"]
    assert audited(AuditAction.MEMORY_DELETE).detail["path"] == "/memories/b.md"


def test_the_agents_memory_cap_holds_on_its_page(staff_client, alice, make_agent,
                                                 hango_settings):
    hango_settings(memory_max_files=1)
    agent = Agent.objects.get(pk=make_agent(alice)["id"])
    MemoryFile.objects.create(agent=agent, path="/memories/a.md", content="a")
    rows = {"memory_files-TOTAL_FORMS": "1", "memory_files-INITIAL_FORMS": "0",
            "memory_files-0-agent": str(agent.pk), "memory_files-0-path": "/memories/b.md",
            "memory_files-0-content": "b"}
    response = staff_client.post(reverse("admin:agents_agent_change", args=[agent.pk]),
                                 {**change_form(agent), **rows})
    assert response.status_code == 200
    assert "at most 1 memory files" in response.content.decode()
    assert MemoryFile.objects.count() == 1


def test_a_memory_file_page_writes_through_the_services(staff_client, alice, make_agent):
    agent = Agent.objects.get(pk=make_agent(alice)["id"])
    add = staff_client.post(reverse("admin:agents_memoryfile_add"), {
        "agent": str(agent.pk), "path": "/memories/notes.md", "content": "one"})
    assert add.status_code == 302, add.content.decode()[:2000]
    memory_file = MemoryFile.objects.get()
    change = reverse("admin:agents_memoryfile_change", args=[memory_file.pk])
    assert staff_client.post(change, {"path": "/memories/moved.md", "content": "two"}
                             ).status_code == 302
    memory_file.refresh_from_db()
    assert (memory_file.path, memory_file.content) == ("/memories/notes.md", "two")
    delete = reverse("admin:agents_memoryfile_delete", args=[memory_file.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not MemoryFile.objects.exists()
    assert [e.action for e in AuditEntry.objects.order_by("created_at")][-3:] == [
        AuditAction.MEMORY_WRITE, AuditAction.MEMORY_WRITE, AuditAction.MEMORY_DELETE]


def skill_form(alice, **fields) -> dict:
    return {"tenant": str(alice.member.tenant_id), "owner": str(alice.member.pk),
            "name": "summarize", "description": "Sums up.", "instructions": "Be brief.",
            "allowed_tools": "null", **fields}


def test_a_skill_added_and_changed_here_is_audited(staff_client, alice, staff_member):
    add = staff_client.post(reverse("admin:agents_skill_add"), skill_form(alice))
    assert add.status_code == 302, add.content.decode()[:2000]
    skill = Skill.objects.get()
    assert audited(AuditAction.SKILL_CREATE).actor == staff_member
    change = reverse("admin:agents_skill_change", args=[skill.pk])
    assert staff_client.post(change, skill_form(alice, description="Sums up, shortly.")
                             ).status_code == 302
    assert audited(AuditAction.SKILL_UPDATE).detail == {"changed": ["description"]}


def test_a_skill_with_an_unknown_tool_is_refused_here(staff_client, alice):
    response = staff_client.post(reverse("admin:agents_skill_add"),
                                 skill_form(alice, allowed_tools='["serch"]'))
    assert response.status_code == 200
    assert "0: Unknown tool 'serch'" in html.unescape(response.content.decode())
    assert not Skill.objects.exists()


def test_a_skill_name_taken_in_the_tenant_is_refused_here(staff_client, alice):
    assert staff_client.post(reverse("admin:agents_skill_add"),
                             skill_form(alice)).status_code == 302
    again = staff_client.post(reverse("admin:agents_skill_add"), skill_form(alice))
    assert again.status_code == 200 and "already exists" in again.content.decode()
    assert Skill.objects.count() == 1


def test_a_stored_unknown_tool_name_left_as_it_is_does_not_stop_a_change(staff_client, alice,
                                                                         make_agent):
    agent = Agent.objects.get(pk=make_agent(alice)["id"])
    Agent.objects.filter(pk=agent.pk).update(allowed_tools=["gone"])
    change = reverse("admin:agents_agent_change", args=[agent.pk])
    unchanged = change_form(agent, description="New.", allowed_tools='["gone"]')

    assert staff_client.post(change, unchanged).status_code == 302
    agent.refresh_from_db()
    assert (agent.description, agent.allowed_tools) == ("New.", ["gone"])
    changed = staff_client.post(change, change_form(agent, allowed_tools='["gone", "echo"]'))
    assert changed.status_code == 200
    assert "Unknown tool 'gone'" in html.unescape(changed.content.decode())
