"""integrations.admin: MCP servers and credentials written through the services (their rules,
their audit rows), a credential's value write-only on every page."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from accounts.models import AuditAction, AuditEntry
from agents.models import Agent
from hango_project import sealing
from integrations.models import Credential, McpServer

SECRET = "sk-admin-5e6f7a8b9c"


def server_form(tenant, **fields) -> dict:
    return {"tenant": str(tenant.pk), "name": "docs", "description": "",
            "transport": "streamable_http", "url": "https://docs.example.com/mcp",
            "command": "", "headers": '{"Authorization": "Bearer {{credential:docs-token}}"}',
            "timeout_seconds": "30", "tools_allow": "null", "tools_deny": "[]", **fields}


def test_a_server_added_here_is_made_by_the_service_and_audited(staff_client, staff_member,
                                                                tenant):
    response = staff_client.post(reverse("admin:integrations_mcpserver_add"),
                                 server_form(tenant, tools_deny="", headers=""))
    assert response.status_code == 302, response.content.decode()[:3000]
    server = McpServer.objects.get()
    assert (server.created_by, server.headers, server.tools_deny) == (staff_member, {}, [])
    entry = AuditEntry.objects.get(action=AuditAction.MCP_SERVER_CREATE)
    assert entry.actor == staff_member and entry.object_id == str(server.pk)


@pytest.mark.parametrize(("fields", "problem"), [
    ({"url": "http://10.0.0.8/mcp"}, "HANGO_MCP_ALLOW_PRIVATE allows it"),
    ({"headers": '{"Authorization": "Bearer abc"}'}, "put it in a credential"),
    ({"transport": "stdio", "url": "", "headers": "{}", "command": "/bin/sh"},
     "configured no stdio server"),
    ({"name": "Docs_1"}, "lowercase letter"),
    ({"timeout_seconds": "0"}, "1 to 600"),
    ({"tools_deny": '"all"'}, "A list of MCP tool names"),
])
def test_what_the_api_refuses_is_refused_here(staff_client, tenant, fields, problem):
    response = staff_client.post(reverse("admin:integrations_mcpserver_add"),
                                 server_form(tenant, **fields))
    assert response.status_code == 200  # the form again, with the error
    assert problem in response.content.decode()
    assert not McpServer.objects.exists()


def test_a_change_and_a_deletion_go_through_the_services(staff_client, staff_member, tenant,
                                                         alice, make_agent):
    staff_client.post(reverse("admin:integrations_mcpserver_add"), server_form(tenant))
    server = McpServer.objects.get()
    agent = Agent.objects.get(pk=make_agent(alice)["id"])
    agent.config = {"mcp_servers": [{"server": str(server.pk)}]}
    agent.save()
    change = reverse("admin:integrations_mcpserver_change", args=[server.pk])
    renamed = staff_client.post(change, server_form(tenant, name="kb"), follow=True)
    assert "is used by agent" in renamed.content.decode()  # the service's 409, as a message
    assert McpServer.objects.get().name == "docs"
    staff_client.post(change, server_form(tenant, description="Docs."))
    assert McpServer.objects.get().description == "Docs."
    delete = reverse("admin:integrations_mcpserver_delete", args=[server.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not McpServer.objects.exists()
    agent.refresh_from_db()
    assert agent.config == {"mcp_servers": []}
    assert [e.action for e in AuditEntry.objects.order_by("created_at")
            if e.object_type == "mcp_server"] == [AuditAction.MCP_SERVER_CREATE,
                                                  AuditAction.MCP_SERVER_UPDATE,
                                                  AuditAction.MCP_SERVER_DELETE]


def test_a_credential_is_write_only_here_too(staff_client, staff_member, tenant, alice):
    add = reverse("admin:integrations_credential_add")
    assert 'type="password"' in staff_client.get(add).content.decode()
    response = staff_client.post(add, {"tenant": str(tenant.pk), "member": "",
                                       "name": "docs-token", "new_value": SECRET})
    assert response.status_code == 302, response.content.decode()[:3000]
    credential = Credential.objects.get()
    assert credential.member is None and sealing.unseal(credential.value) == SECRET
    entry = AuditEntry.objects.get(action=AuditAction.CREDENTIAL_SET)
    assert entry.actor == staff_member and entry.detail == {
        "name": "docs-token", "scope": "tenant", "created": True}

    change = reverse("admin:integrations_credential_change", args=[credential.pk])
    staff_client.post(change, {"new_value": ""})  # left empty: kept
    assert sealing.unseal(Credential.objects.get().value) == SECRET
    staff_client.post(change, {"new_value": SECRET + "-rotated"})
    assert sealing.unseal(Credential.objects.get().value) == SECRET + "-rotated"
    history = reverse("admin:integrations_credential_history", args=[credential.pk])
    pages = [staff_client.get(url).content.decode() for url in (
        change, history, reverse("admin:integrations_credential_changelist"))]
    stored = Credential.objects.get().value
    for page in pages:
        assert "docs-token" in page
        assert SECRET not in page and stored not in page
    assert all(SECRET not in entry.change_message for entry in LogEntry.objects.all())


def test_a_members_own_credential_and_a_bad_one(staff_client, tenant, alice, outsider):
    add = reverse("admin:integrations_credential_add")
    own = staff_client.post(add, {"tenant": str(tenant.pk), "member": str(alice.member.pk),
                                  "name": "docs-token", "new_value": SECRET})
    assert own.status_code == 302 and Credential.objects.get().member == alice.member
    for fields, problem in (
            ({"member": str(outsider.member.pk)}, "is not a member of"),
            ({"new_value": ""}, "needs its value"),
            ({"new_value": "a\nb"}, "control characters"),
            ({"name": "Bad Name"}, "lowercase letters")):
        response = staff_client.post(add, {"tenant": str(tenant.pk), "member": "",
                                           "name": f"t-{uuid.uuid4().hex[:6]}",
                                           "new_value": SECRET, **fields})
        assert response.status_code == 200 and problem in response.content.decode(), problem
    assert Credential.objects.count() == 1
