"""The admin's forms for agents, their memory files and skills: the API's rules for what they
write (the services' own checks, asked before anything is saved), so a row saved in the admin
behaves like one saved through the API."""

from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.forms.models import BaseInlineFormSet

from accounts.models import Member, Tenant
from agents import mcp_servers, services
from agents.config import allowed_tools_problems, config_problems, settings_problems
from agents.models import SKILL_NAME_PATTERN, Agent, MemoryFile, Skill
from hango_project.config import hango
from hango_project.errors import ApplicationError
from harness.middleware.memory import content_problem, path_problem


def refuse_unknown_tools(form: forms.ModelForm, cleaned: dict[str, Any],
                         names: tuple[str, ...],
                         mcp: Callable[[], frozenset[str]] = frozenset) -> None:
    """The services' check of tool names (:func:`agents.services.checked_tools`) on the fields
    ``names`` the form writes — every one on an add, the changed ones on a change, as the
    services are given them — as the form's errors; ``mcp``: the MCP tools' names it may
    use."""
    adding = form.instance._state.adding
    data = {k: cleaned[k] for k in names if k in cleaned and (adding or k in form.changed_data)}
    try:
        services.checked_tools(data, mcp=mcp)
    except ApplicationError as exc:
        for field, problems in exc.detail.items():
            form.add_error(field, problems)


class TenantOwnedForm(forms.ModelForm):
    """A row with a tenant and an owner, both chosen when it is added and fixed after (the
    admin shows them read-only): the owner must be a member of the tenant."""

    def tenant(self) -> Tenant | None:
        return self.cleaned_data.get("tenant") if "tenant" in self.fields else self.instance.tenant

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        tenant, owner = cleaned.get("tenant"), cleaned.get("owner")
        if isinstance(owner, Member) and tenant is not None and owner.tenant_id != tenant.pk:
            self.add_error("owner", f"{owner} is not a member of {tenant}.")
        return cleaned


class MemoryFileForm(forms.ModelForm):
    """The API's rules for a memory file: a normalized absolute path, content within budget.
    A file's path is fixed once it exists (the API has no rename)."""

    class Meta:
        model = MemoryFile
        fields = ["agent", "path", "content"]
        widgets = {"content": forms.Textarea(attrs={"rows": 12, "cols": 100})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding and "path" in self.fields:
            self.fields["path"].disabled = True

    def clean_path(self) -> str:
        path = self.cleaned_data["path"]
        problem = path_problem(path)
        if problem:
            raise forms.ValidationError(problem)
        return path

    def clean_content(self) -> str:
        content = self.cleaned_data["content"]
        problem = content_problem(content, hango().memory_max_bytes)
        if problem:
            raise forms.ValidationError(problem)
        return content


class OneMemoryFileForm(MemoryFileForm):
    """A memory file's own page: a new one must fit under its agent's cap."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        agent = cleaned.get("agent")
        if self.instance._state.adding and (problem := services.memory_room_problem(agent)):
            raise forms.ValidationError(problem)
        return cleaned


class MemoryFileFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        adding = sum(1 for f in self.extra_forms if f.has_changed() and f not in
                     self.deleted_forms)
        deleting = sum(1 for f in self.deleted_forms if not f.instance._state.adding)
        if problem := services.memory_room_problem(self.instance, adding, deleting):
            raise forms.ValidationError(problem)


class AgentForm(TenantOwnedForm):
    """The API's rules for an agent's tools and config, so an agent saved here runs like one
    saved through the API (a run parses the config and fails on one it cannot; it goes without
    a tool it cannot offer, so an unknown name is refused here)."""

    class Meta:
        model = Agent
        fields = ["tenant", "owner", "name", "description", "system_prompt", "model",
                  "allowed_tools", "config"]

    def clean_allowed_tools(self) -> Any:
        value = self.cleaned_data["allowed_tools"]
        if problems := allowed_tools_problems(value):
            raise forms.ValidationError(problems)
        return value

    def clean_config(self) -> Any:
        value = self.cleaned_data["config"]
        if problems := config_problems(value):
            raise forms.ValidationError(problems)
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        tenant, config = self.tenant(), cleaned.get("config")
        if tenant is not None and isinstance(config, dict):  # the skills must be the tenant's
            try:
                cleaned["config"] = services.checked_config(tenant.pk, config)
            except ApplicationError as exc:
                self.add_error("config", [str(p) for p in exc.detail.get("config", [exc])])
        refuse_unknown_tools(self, cleaned, ("allowed_tools", "config"), frozenset
                             if tenant is None else partial(mcp_servers.run_tool_names,
                                                            tenant.pk, cleaned.get("config"), None))
        if "config" in cleaned and (problems := settings_problems(
                cleaned.get("model"), cleaned["config"], cleaned.get("allowed_tools"))):
            self.add_error("config", problems)  # as the API's 422 (services.checked_settings)
        return cleaned


class SkillForm(TenantOwnedForm):
    """The API's rules for a skill's name and tools (known ones); a name is the tenant's
    once."""

    name = forms.RegexField(regex=SKILL_NAME_PATTERN, max_length=64,
                            help_text="Lowercase letters, digits and single hyphens.")

    class Meta:
        model = Skill
        fields = ["tenant", "owner", "name", "description", "instructions", "allowed_tools"]

    def clean_allowed_tools(self) -> list[str] | None:
        value = self.cleaned_data["allowed_tools"]
        problems = allowed_tools_problems(value)
        if problems:
            raise forms.ValidationError(problems)
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        name = cleaned.get("name")
        # On an add, the model's own constraint is checked; on a change its tenant is fixed.
        if "tenant" not in self.fields and name and Skill.objects.filter(
                tenant_id=self.instance.tenant_id, name=name).exclude(pk=self.instance.pk).exists():
            self.add_error("name", "A skill with this name already exists in the tenant.")
        tenant = self.tenant()
        refuse_unknown_tools(self, cleaned, ("allowed_tools",), frozenset if tenant is None
                             else partial(mcp_servers.tenant_tool_names, tenant.pk))
        return cleaned
