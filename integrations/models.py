"""A tenant's MCP servers, the credentials their request headers name, and the tools each
server last listed per credential scope."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from accounts.tenancy import Tenancy
from hango_project.ids import time_ordered_uuid

# A server's name prefixes its tools' names in a run (``<server>__<tool>``): no "_", so the
# double underscore is never part of it (harness/mcp/names.py).
SERVER_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,29}$"
CREDENTIAL_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
MIN_TIMEOUT, MAX_TIMEOUT = 1, 600
HTTP_TRANSPORTS = ("streamable_http", "sse")


class Transport(models.TextChoices):
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "SSE (the older HTTP transport)"
    STDIO = "stdio", "stdio (an operator's program)"  # HANGO_MCP_STDIO_SERVERS, never a tenant's


class McpServer(models.Model):
    """An MCP server the tenant's agents may take tools from: over HTTP at ``url`` with
    ``headers`` (templates that may name credentials), or an operator's stdio program that
    ``command`` names. Every member sees it; owners and admins change it."""

    tenancy = Tenancy(tenant="tenant", owner=None)

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="mcp_servers",
                               db_index=False)  # the name's unique index leads with it
    created_by = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    name = models.CharField(max_length=30)
    description = models.CharField(max_length=1024, blank=True, default="")
    transport = models.CharField(max_length=16, choices=Transport.choices)
    url = models.CharField(max_length=2000, blank=True, default="")
    command = models.CharField(max_length=64, blank=True, default="",
                               help_text="stdio: the name of an entry of HANGO_MCP_STDIO_SERVERS.")
    headers = models.JSONField(default=dict, blank=True,
                               help_text="Header name -> template; {{credential:<name>}} "
                                         "is the credential's value.")
    timeout_seconds = models.FloatField()
    tools_allow = models.JSONField(null=True, blank=True,
                                   help_text="The MCP tool names runs may use; null: all.")
    tools_deny = models.JSONField(default=list, blank=True,
                                  help_text="MCP tool names runs may not use.")
    required = models.BooleanField(default=False,
                                   help_text="A run fails when the server cannot be used.")
    idempotent = models.BooleanField(default=False,
                                     help_text="Its calls may be sent again after a crash.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "mcp_servers"
        verbose_name = "MCP server"
        ordering = ["tenant", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="mcp_server_name_unique"),
            models.CheckConstraint(condition=Q(name__regex=SERVER_NAME_PATTERN),
                                   name="mcp_server_name_valid"),
            models.CheckConstraint(condition=Q(transport__in=Transport.values),
                                   name="mcp_server_transport_valid"),
            models.CheckConstraint(
                condition=Q(transport__in=HTTP_TRANSPORTS, command="") & ~Q(url="")
                | Q(transport=Transport.STDIO, url="") & ~Q(command=""),
                name="mcp_server_url_or_command"),
            models.CheckConstraint(
                condition=Q(timeout_seconds__gte=MIN_TIMEOUT, timeout_seconds__lte=MAX_TIMEOUT),
                name="mcp_server_timeout_range"),
        ]

    def __str__(self) -> str:
        return self.name


class Credential(models.Model):
    """A secret a server's headers name: the tenant's (``member`` null) or one member's own,
    which stands in for the tenant's in that member's runs. ``value`` is sealed
    (:mod:`hango_project.sealing`) and never shown.

    No tenancy rule of the usual kind: whatever their role, a member sees the tenant's
    credentials and their own, never another member's (:mod:`integrations.credentials`)."""

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="credentials")
    member = models.ForeignKey(Member, null=True, blank=True, on_delete=models.CASCADE,
                               related_name="credentials",
                               help_text="Whose own it is; none: the tenant's.")
    name = models.CharField(max_length=64)
    value = models.TextField()  # sealed
    created_by = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "credentials"
        ordering = ["tenant", "name"]
        constraints = [
            # NULLs are distinct in a unique index: the tenant's and each member's names apart.
            models.UniqueConstraint(fields=["tenant", "name"], condition=Q(member__isnull=True),
                                    name="credential_tenant_name_unique"),
            models.UniqueConstraint(fields=["member", "name"], condition=Q(member__isnull=False),
                                    name="credential_member_name_unique"),
            models.CheckConstraint(condition=Q(name__regex=CREDENTIAL_NAME_PATTERN),
                                   name="credential_name_valid"),
            models.CheckConstraint(condition=~Q(value=""), name="credential_value_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def scope(self) -> str:
        return "tenant" if self.member_id is None else "member"


class McpListing(models.Model):
    """The tools a server listed, per credential scope (``scope`` null: every credential its
    headers name resolved to the tenant's; else the member whose own credential stood in):
    what the API and the inspector show without calling the server. A failed listing keeps
    the tools of the last one that worked and says why in ``error``."""

    tenancy = Tenancy(tenant="server__tenant", owner=None)

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="listings")
    scope = models.ForeignKey(Member, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="+")
    tools = models.JSONField(default=list, blank=True)  # [{name, description, input_schema}]
    digest = models.CharField(max_length=16, blank=True, default="")
    listed_at = models.DateTimeField(null=True, blank=True)  # the last listing that worked
    error = models.CharField(max_length=500, blank=True, default="")  # "": the last one worked
    attempted_at = models.DateTimeField()

    class Meta:
        db_table = "mcp_listings"
        verbose_name = "MCP listing"
        constraints = [
            models.UniqueConstraint(fields=["server"], condition=Q(scope__isnull=True),
                                    name="mcp_listing_tenant_scope_unique"),
            models.UniqueConstraint(fields=["server", "scope"], condition=Q(scope__isnull=False),
                                    name="mcp_listing_member_scope_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.server_id} ({self.scope_id or 'tenant'})"
