"""Explicit input and output shapes for MCP servers, their tool listings and credentials.

The inputs check each value's type and size; what a server may be as a whole (a URL for an
HTTP transport, a configured stdio entry, headers that take secrets from credentials) is the
services' rule (:mod:`integrations.rules`), which the admin's forms share.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from hango_api import fields as strict
from hango_api.inputs import Input
from hango_project.outbound import URL_PATTERN
from integrations.credentials import MAX_VALUE, SCOPES, problem_of
from integrations.models import (
    MAX_TIMEOUT,
    MIN_TIMEOUT,
    SERVER_NAME_PATTERN,
    Credential,
    McpServer,
    Transport,
)
from integrations.rules import MAX_TOOL_NAME
from integrations.templates import MAX_TEMPLATE, RESERVED, TOKEN


def _any_case(name: str) -> str:
    """A pattern matching the header name in any case (its other characters are ``-``)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in name)


# An HTTP token, not one hango sets itself (templates.header_problems), in any case.
_HEADER_NAME = (f"^(?!(?:{'|'.join(_any_case(n) for n in sorted(RESERVED))})$)"
                f"{TOKEN.pattern.lstrip('^')}")


def _tool_names(help_text: str, **kwargs: Any) -> strict.ListField:
    return strict.ListField(child=strict.CharField(max_length=MAX_TOOL_NAME),
                            required=False, help_text=help_text, **kwargs)


class McpServerInput(Input):
    # integrations.rules.server_problems, but whether a URL's host is public and a command is
    # one the operator configured (which depend on the deployment).
    schema_extra = {
        "properties": {"name": {"pattern": SERVER_NAME_PATTERN},
                       "url": {"pattern": f"(?:^$)|(?:{URL_PATTERN})"},
                       "timeout_seconds": {"minimum": MIN_TIMEOUT, "maximum": MAX_TIMEOUT},
                       "headers": {"propertyNames": {"pattern": _HEADER_NAME},
                                   "additionalProperties": {
                                       "type": "string", "maxLength": MAX_TEMPLATE,
                                       "pattern": r"^[!-~](?:[ \t!-~]*[!-~])?$"}}},
        "if": {"properties": {"transport": {"const": Transport.STDIO.value}}},
        "then": {"required": ["command"], "properties": {
            "command": {"minLength": 1}, "url": {"maxLength": 0},
            "headers": {"maxProperties": 0}}},
        "else": {"required": ["url"], "properties": {
            "url": {"minLength": 1}, "command": {"maxLength": 0}}},
        # A PATCH naming the transport: what the body alone shows.
        "patch": {"allOf": [
            {"if": {"required": ["transport"],
                    "properties": {"transport": {"const": Transport.STDIO.value}}},
             "then": {"properties": {"command": {"minLength": 1}, "url": {"maxLength": 0},
                                     "headers": {"maxProperties": 0}}}},
            {"if": {"required": ["transport"],
                    "properties": {"transport": {"not": {"const": Transport.STDIO.value}}}},
             "then": {"properties": {"url": {"minLength": 1}, "command": {"maxLength": 0}}}},
        ]},
    }

    name = strict.CharField(max_length=30, help_text=(
        "`[a-z][a-z0-9-]{0,29}`, unique in the tenant; its tools are `<name>__<tool>` in runs."))
    description = strict.CharField(max_length=1024, required=False, allow_blank=True)
    transport = strict.ChoiceField(choices=Transport.values)
    url = strict.CharField(max_length=2000, required=False, allow_blank=True, help_text=(
        "HTTP transports: http(s), no credentials in it; a non-public address needs "
        "HANGO_MCP_ALLOW_PRIVATE."))
    command = strict.CharField(max_length=64, required=False, allow_blank=True, help_text=(
        "stdio: the name of an entry of the operator's HANGO_MCP_STDIO_SERVERS."))
    headers = strict.DictField(
        child=strict.CharField(max_length=MAX_TEMPLATE, trim_whitespace=False),
        required=False, help_text=(
            "Request headers: name -> template; `{{credential:<name>}}` is the value of the "
            "credential of that name (the caller's own, else the tenant's)."))
    timeout_seconds = strict.FloatField(required=False, help_text=(
        f"Per call and per listing, {MIN_TIMEOUT}-{MAX_TIMEOUT}; default "
        "HANGO_MCP_TIMEOUT_SECONDS."))
    tools_allow = _tool_names("The server's tools runs may use (MCP names); null: all.",
                              allow_null=True)
    tools_deny = _tool_names("The server's tools runs may not use (MCP names).")
    # The metaclass takes declared fields off the class: this does not shadow Field.required.
    required = strict.BooleanField(required=False, help_text=(  # type: ignore[assignment]
        "A run fails when the server cannot be used; else it goes on without it."))
    idempotent = strict.BooleanField(required=False, help_text=(
        "Its calls may be sent again after a crash; else an interrupted call's outcome is "
        "reported unknown."))


# The schema's component is "McpServer": the inspector's snapshot has an McpServerOutput of its
# own (a server as a run's context shows it).
@extend_schema_serializer(component_name="McpServer")
class McpServerOutput(serializers.ModelSerializer):
    headers = serializers.DictField(child=serializers.CharField(), read_only=True,
                                    help_text="Name -> template (no credential's value).")
    tools_allow = serializers.ListField(child=serializers.CharField(), read_only=True,
                                        allow_null=True)
    tools_deny = serializers.ListField(child=serializers.CharField(), read_only=True)
    created_by = serializers.UUIDField(source="created_by_id", read_only=True, allow_null=True)

    class Meta:
        model = McpServer
        fields = ["id", "name", "description", "transport", "url", "command", "headers",
                  "timeout_seconds", "tools_allow", "tools_deny", "required", "idempotent",
                  "created_by", "created_at", "updated_at"]
        read_only_fields = fields


class McpToolOutput(serializers.Serializer):
    name = serializers.CharField(help_text="Its name in runs: `<server>__<tool>`.")
    mcp_name = serializers.CharField(help_text="Its name on the server.")
    description = serializers.CharField()
    input_schema = serializers.DictField(help_text="The JSON Schema of its arguments.")
    allowed = serializers.BooleanField(help_text="Whether tools_allow and tools_deny keep it.")


class McpListingOutput(serializers.Serializer):
    server = serializers.UUIDField()
    status = serializers.ChoiceField(choices=["ok", "unreachable", "never_listed"], help_text=(
        "ok: the last listing worked; unreachable: it failed (`error` says why; the tools are "
        "the last ones listed); never_listed."))
    credential_scope = serializers.ChoiceField(choices=SCOPES, help_text=(
        "member: listed with the caller's own credentials; tenant: with the tenant's."))
    listed_at = serializers.DateTimeField(allow_null=True)
    age_seconds = serializers.FloatField(allow_null=True)
    attempted_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()
    tools = McpToolOutput(many=True)


class CredentialInput(Input):
    # integrations.credentials.value_problem: what a request header carries.
    schema_extra = {"properties": {"value": {"pattern": r"^(?:[!-~]|[!-~][ \t!-~]*[!-~])$"}}}

    value = strict.CharField(max_length=MAX_VALUE, trim_whitespace=False, help_text=(
        "The secret (write-only: never answered back)."))


class CredentialOutput(serializers.ModelSerializer):
    scope = serializers.ChoiceField(choices=SCOPES, read_only=True, help_text=(
        "tenant: the tenant's; member: the caller's own, which stands in for the tenant's."))
    problem = serializers.SerializerMethodField(help_text=(
        "Why it cannot be used (sealed under another DJANGO_SECRET_KEY: runs count it as not "
        "set); null when it can."))

    class Meta:
        model = Credential
        fields = ["name", "scope", "problem", "created_at", "updated_at"]
        read_only_fields = fields

    def get_problem(self, credential: Credential) -> str | None:
        return problem_of(credential)
