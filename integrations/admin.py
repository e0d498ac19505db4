"""MCP servers and credentials in the admin, written through the same services as the API (its
rules, its audit rows) as the staff user's member of the tenant; listings read-only.

A credential's value is write-only here too: a password input that renders empty, never shown
on a page, in the list or in the history (which names the fields changed, not their values);
left empty on a change, the value stays as it is.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from accounts.admin import acting_member
from hango_project.admin import AppWrittenAdmin, ServiceWrittenAdmin, adopt, written
from hango_project.config import hango
from integrations import credentials, services
from integrations.models import Credential, McpListing, McpServer
from integrations.rules import server_problems


class McpServerForm(forms.ModelForm):
    """The API's rules for a server as a whole, shown on the fields they concern."""

    class Meta:
        model = McpServer
        fields = ["tenant", "name", "description", "transport", "url", "command", "headers",
                  "timeout_seconds", "tools_allow", "tools_deny", "required", "idempotent"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "timeout_seconds" in self.fields and self.instance._state.adding:
            self.fields["timeout_seconds"].initial = hango().mcp_timeout_seconds

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        fields = {k: cleaned.get(k, getattr(self.instance, k)) for k in services.SERVER_FIELDS}
        if None in (fields["name"], fields["transport"], fields["timeout_seconds"]):
            return cleaned  # a required field is missing: its own error says so
        fields["headers"] = fields["headers"] if isinstance(fields["headers"], dict) else {}
        for field, problems in server_problems(fields, hango()).items():
            self.add_error(field if field in self.fields else None, problems)
        return cleaned

    def clean_headers(self) -> Any:
        value = self.cleaned_data["headers"]
        if value is None:  # left empty
            return {}
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise forms.ValidationError('An object of header names to templates: {"X-A": "b"}.')
        return value

    def _tool_list(self, field: str) -> Any:
        value = self.cleaned_data[field]
        if value is None:  # left empty: all of them allowed, none denied
            return None if field == "tools_allow" else []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise forms.ValidationError('A list of MCP tool names: ["search", "read"].')
        return value

    def clean_tools_allow(self) -> Any:
        return self._tool_list("tools_allow")

    def clean_tools_deny(self) -> Any:
        return self._tool_list("tools_deny")


@admin.register(McpServer)
class McpServerAdmin(ServiceWrittenAdmin, admin.ModelAdmin):
    form = McpServerForm
    list_display = ["name", "tenant", "transport", "url", "command", "required", "updated_at"]
    list_filter = ["tenant", "transport"]
    search_fields = ["name", "description", "url"]
    readonly_fields = ["id", "created_by", "created_at", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [*super().get_readonly_fields(request, obj), *(["tenant"] if obj else [])]

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        actor = acting_member(request, obj.tenant_id)
        data = written(form, services.SERVER_FIELDS, change)
        if not change:
            adopt(obj, services.server_create(tenant_id=obj.tenant_id, data=data, actor=actor))
        elif data:
            services.server_update(server=obj, data=data, actor=actor)

    def delete_model(self, request: HttpRequest, obj: McpServer) -> None:
        # Takes the server out of every agent that names it, as the API's deletion does.
        services.server_delete(server=obj, actor=acting_member(request, obj.tenant_id))


class CredentialForm(forms.ModelForm):
    """A credential's name and whose it is, and a new value: never the stored one."""

    new_value = forms.CharField(
        label="value", required=False, strip=False, max_length=credentials.MAX_VALUE,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: never shown. Left empty on a change, the value is kept.")

    class Meta:
        model = Credential
        fields = ["tenant", "member", "name"]

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if problem := credentials.name_problem(name):
            raise forms.ValidationError(problem)
        return name

    def clean_new_value(self) -> str:
        value: str = self.cleaned_data["new_value"]
        if not value and self.instance._state.adding:
            raise forms.ValidationError("A new credential needs its value.")
        if value and (problem := credentials.value_problem(value)):
            raise forms.ValidationError(problem)
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        tenant, member = cleaned.get("tenant"), cleaned.get("member")
        if member is not None and tenant is not None and member.tenant_id != tenant.pk:
            self.add_error("member", f"{member} is not a member of {tenant}.")
        return cleaned


@admin.register(Credential)
class CredentialAdmin(ServiceWrittenAdmin, admin.ModelAdmin):
    form = CredentialForm
    list_display = ["name", "tenant", "whose", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["name"]
    readonly_fields = ["created_by", "created_at", "updated_at"]
    autocomplete_fields = ["member"]
    exclude = ("value",)  # sealed, and never shown

    @admin.display(description="whose")
    def whose(self, obj: Credential) -> str:
        return "the tenant's" if obj.member_id is None else str(obj.member)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fixed = ["tenant", "member", "name"] if obj else []
        return [*super().get_readonly_fields(request, obj), *fixed]

    def save_model(self, request: HttpRequest, obj: Credential, form: Any, change: bool) -> None:
        value = form.cleaned_data["new_value"]
        if change and not value:
            return  # nothing to write: the value is kept
        saved, _ = credentials.credential_set(
            tenant_id=obj.tenant_id, owner=obj.member, name=obj.name, value=value,
            actor=acting_member(request, obj.tenant_id))
        adopt(obj, saved)

    def delete_model(self, request: HttpRequest, obj: Credential) -> None:
        credentials.credential_delete(credential=obj,
                                      actor=acting_member(request, obj.tenant_id))


@admin.register(McpListing)
class McpListingAdmin(AppWrittenAdmin, admin.ModelAdmin):
    list_display = ["server", "scope", "listed_at", "attempted_at", "error"]
    list_filter = ["server__tenant"]
    search_fields = ["server__name"]
    readonly_fields = ["id", "server", "scope", "tools", "digest", "listed_at", "error",
                       "attempted_at"]
