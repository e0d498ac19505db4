"""The integrations tables hold their rules themselves: whatever writes a row (a service, the
admin, a shell), the database refuses one the API would refuse."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from integrations.models import Credential, McpListing, McpServer


def refused(make) -> bool:
    try:
        with transaction.atomic():
            make()
    except IntegrityError:
        return True
    return False


def server(tenant, **fields) -> McpServer:
    values = {"name": "docs", "transport": "streamable_http", "url": "https://d.example/mcp",
              "timeout_seconds": 30, **fields}
    return McpServer.objects.create(tenant=tenant, **values)


@pytest.mark.parametrize("fields", [
    {"name": "Docs"}, {"name": "my_docs"}, {"name": "9docs"}, {"name": ""},
    {"transport": "websocket"},
    {"url": ""}, {"command": "time"},
    {"transport": "stdio", "url": "", "command": ""},
    {"transport": "stdio", "command": "time"},  # and a URL
    {"timeout_seconds": 0.5}, {"timeout_seconds": 601},
])
def test_a_server_the_api_would_refuse_is_refused(tenant, fields):
    assert refused(lambda: server(tenant, **fields))
    assert not McpServer.objects.exists()


def test_a_server_name_is_once_per_tenant(tenant, other_tenant):
    server(tenant)
    assert refused(lambda: server(tenant))
    server(other_tenant)
    assert server(tenant, transport="stdio", url="", command="time", name="time")


def test_credential_names_are_once_among_the_tenants_and_once_among_each_members(tenant, alice,
                                                                               bob):
    def make(member=None, name="token"):
        return Credential.objects.create(tenant=tenant, member=member, name=name, value="x")

    make()
    assert refused(make)  # the tenant's twice
    make(alice.member)  # alice's own beside the tenant's
    assert refused(lambda: make(alice.member))
    make(bob.member)
    assert refused(lambda: make(name="Token")) and refused(lambda: make(name="-t"))
    assert refused(lambda: Credential.objects.create(tenant=tenant, name="empty", value=""))
    assert Credential.objects.count() == 3


def test_a_listing_is_once_per_server_and_scope(tenant, alice):
    made = server(tenant)

    def listing(scope=None):
        return McpListing.objects.create(server=made, scope=scope, attempted_at=timezone.now())

    listing()
    assert refused(listing)  # NULL scopes are not distinct here
    listing(alice.member)
    assert refused(lambda: listing(alice.member))
    assert McpListing.objects.count() == 2
