"""Where a session to a server goes for one member: headers filled in with the member's own
credentials before the tenant's, a missing one named, the SSRF rule on every connection, stdio
from the operator's entry."""

from __future__ import annotations

import ipaddress

import pytest

from hango_project import outbound
from harness.mcp.access import CredentialMissing
from harness.mcp.values import McpUnavailable
from integrations.credentials import credential_set
from integrations.models import McpServer
from integrations.targets import credential_scope, target_for
from tests.support.mcp_servers import time_server

TIME_PROGRAM = time_server().command


@pytest.fixture
def orders(admin, server) -> McpServer:
    made = McpServer.objects.get(pk=server["id"])
    made.headers = {"Authorization": "Bearer {{credential:orders-token}}",
                    "X-Region": "{{credential:region}}-1"}
    made.save()
    return made


def _set(tenant_id, owner, name, value):
    credential_set(tenant_id=tenant_id, owner=owner, name=name, value=value, actor=None)


def test_a_members_own_credential_stands_in_for_the_tenants(orders, alice, bob):
    tenant = orders.tenant_id
    _set(tenant, None, "orders-token", "tenant-token")
    _set(tenant, None, "region", "eu")
    _set(tenant, alice.member, "orders-token", "alice-token")
    for_alice = target_for(orders, alice.member)
    assert for_alice.headers == {"Authorization": "Bearer alice-token", "X-Region": "eu-1"}
    assert target_for(orders, bob.member).headers["Authorization"] == "Bearer tenant-token"
    assert target_for(orders, None).headers["Authorization"] == "Bearer tenant-token"
    assert (for_alice.transport, for_alice.url, for_alice.timeout_seconds) == (
        "streamable_http", orders.url, orders.timeout_seconds)
    assert "alice-token" not in repr(for_alice)
    # The listing cache's scope: alice's own stood in; bob's headers are the tenant's.
    assert credential_scope(orders, alice.member) == alice.member.pk
    assert credential_scope(orders, bob.member) is None


def test_a_credential_set_by_neither_is_named_with_its_server(orders, alice, bob):
    _set(orders.tenant_id, None, "region", "eu")
    _set(orders.tenant_id, alice.member, "orders-token", "alice-token")
    assert target_for(orders, alice.member).headers["Authorization"] == "Bearer alice-token"
    with pytest.raises(CredentialMissing) as missing:
        target_for(orders, bob.member)
    assert missing.value.code == "credential_missing"
    assert (missing.value.server, missing.value.credential) == ("orders", "orders-token")
    assert str(missing.value).startswith(
        "The MCP server 'orders' needs the credential 'orders-token', which is set neither")
    assert "PUT /v1/credentials/orders-token" in str(missing.value)


def test_one_sealed_under_another_key_counts_as_missing_saying_why(orders, settings):
    _set(orders.tenant_id, None, "orders-token", "t")
    _set(orders.tenant_id, None, "region", "eu")
    settings.SECRET_KEY = "another-deployment-key-entirely-0123456789"
    with pytest.raises(CredentialMissing, match="sealed under another DJANGO_SECRET_KEY") as got:
        target_for(orders, None)
    assert (got.value.code, got.value.credential) == ("credential_missing", "orders-token")


def test_every_connection_passes_the_ssrf_rule(orders, hango_settings):
    _set(orders.tenant_id, None, "orders-token", "t")
    _set(orders.tenant_id, None, "region", "eu")
    check = target_for(orders, None).check_address
    assert check is not None and check("93.184.216.34", 443) == "93.184.216.34"
    with pytest.raises(outbound.Refused, match="HANGO_MCP_ALLOW_PRIVATE"):
        check("localhost", 8000)
    hango_settings(mcp_allow_private=True)
    allowed = target_for(orders, None).check_address
    assert allowed is not None and ipaddress.ip_address(allowed("localhost", 80)).is_loopback


def test_stdio_runs_the_operators_entry(admin, hango_settings):
    hango_settings(mcp_stdio_servers={"time": {"command": TIME_PROGRAM,
                                               "args": ["--local-timezone", "UTC"]}})
    server = McpServer.objects.create(tenant_id=admin.member.tenant_id, name="time",
                                      transport="stdio", command="time", timeout_seconds=7)
    target = target_for(server, admin.member)
    assert (target.transport, target.command, target.args, target.timeout_seconds) == (
        "stdio", TIME_PROGRAM, ("--local-timezone", "UTC"), 7)
    assert target.headers == {} and target.check_address is None
    hango_settings(mcp_stdio_servers={})
    with pytest.raises(McpUnavailable, match="'time' is no longer configured"):
        target_for(server, admin.member)
