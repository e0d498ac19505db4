"""Agents, their memory files and the tenant's skills in the admin: written through the same
services as the API (its checks, its audit rows), as the staff user's member of the tenant."""

from typing import Any

from django import forms
from django.contrib import admin
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from accounts.admin import acting_member
from accounts.models import Member, Tenant
from agents import services
from agents.config import allowed_tools_problems, config_problems
from agents.models import SKILL_NAME_PATTERN, Agent, MemoryFile, Skill
from hango_project.admin import OwnerAdmin, ServiceWrittenAdmin, adopt, written
from hango_project.config import hango
from hango_project.errors import ApplicationError
from harness.middleware.memory import content_problem, path_problem


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


class MemoryFileInline(admin.StackedInline):
    model = MemoryFile
    form = MemoryFileForm
    formset = MemoryFileFormSet
    extra = 0
    fields = ["path", "content", "updated_at"]
    readonly_fields = ["updated_at"]


def save_memory_files(request: HttpRequest, agent: Agent, formset: BaseInlineFormSet) -> None:
    """The agent page's memory files through the API's services: deletions first (they make
    room), then each new or changed file. What it did is kept on the formset, as its own
    ``save()`` would, for the admin's history."""
    actor = acting_member(request, agent.tenant_id)
    formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
    for form in formset.deleted_forms:
        if not form.instance._state.adding:
            services.memory_file_delete(memory_file=form.instance, actor=actor)
            formset.deleted_objects.append(form.instance)
    for form in formset.forms:
        if form in formset.deleted_forms or not form.has_changed():
            continue
        memory_file, created = services.memory_file_put(
            agent=agent, path=form.cleaned_data["path"], content=form.cleaned_data["content"],
            actor=actor)
        if created:
            formset.new_objects.append(memory_file)
        else:
            formset.changed_objects.append((memory_file, form.changed_data))


class AgentForm(TenantOwnedForm):
    """The API's rules for an agent's tools and config, so an agent saved here runs like one
    saved through the API (a run parses the config and fails on one it cannot)."""

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
        return cleaned


class TenantOwnedAdmin(ServiceWrittenAdmin, admin.ModelAdmin):
    """A tenant's row with an owner: both chosen when it is added, read-only after; made,
    changed and deleted through the subclass's services (:meth:`create`, :meth:`update`,
    :meth:`delete`) as the staff user's member of the tenant."""

    written_fields: Any = ()  # what the services take from the form

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fixed = ["tenant", "owner"] if obj else []
        return [*super().get_readonly_fields(request, obj), *fixed]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        actor = acting_member(request, obj.tenant_id)
        data = written(form, self.written_fields, change)
        if not change:
            adopt(obj, self.create(obj.owner, data, actor))
        elif data:
            self.update(obj, data, actor)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete(obj, acting_member(request, obj.tenant_id))

    def create(self, owner: Member, data: dict[str, Any], actor: Member | None) -> Any:
        raise NotImplementedError

    def update(self, obj: Any, data: dict[str, Any], actor: Member | None) -> None:
        raise NotImplementedError

    def delete(self, obj: Any, actor: Member | None) -> None:
        raise NotImplementedError


@admin.register(Agent)
class AgentAdmin(OwnerAdmin, TenantOwnedAdmin):
    form = AgentForm
    list_display = ["name", "tenant", "owner", "model", "updated_at"]
    list_filter = ["tenant", "model"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]
    inlines = [MemoryFileInline]
    written_fields = services.WRITABLE_FIELDS

    def create(self, owner: Member, data: dict[str, Any], actor: Member | None) -> Agent:
        return services.agent_create(member=owner, data=data, actor=actor)

    def update(self, obj: Agent, data: dict[str, Any], actor: Member | None) -> None:
        services.agent_update(agent=obj, data=data, actor=actor)

    def delete(self, obj: Agent, actor: Member | None) -> None:
        services.agent_delete(agent=obj, actor=actor)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        save_memory_files(request, form.instance, formset)



@admin.register(MemoryFile)
class MemoryFileAdmin(ServiceWrittenAdmin, admin.ModelAdmin):
    form = OneMemoryFileForm
    delete_related = ("agent",)
    list_display = ["path", "agent", "size", "updated_at"]
    list_filter = ["agent__tenant"]
    search_fields = ["path", "agent__name"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["agent"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fixed = ["agent", "path"] if obj else []
        return [*super().get_readonly_fields(request, obj), *fixed]

    @admin.display(description="size (bytes)")
    def size(self, obj: MemoryFile) -> int:
        return len(obj.content.encode())

    def save_model(self, request: HttpRequest, obj: MemoryFile, form: Any, change: bool) -> None:
        actor = acting_member(request, obj.agent.tenant_id)
        if not change:
            adopt(obj, services.memory_file_create(agent=obj.agent, path=obj.path,
                                                   content=obj.content, actor=actor))
        elif "content" in form.changed_data:
            services.memory_file_put(agent=obj.agent, path=obj.path, content=obj.content,
                                     actor=actor)

    def delete_model(self, request: HttpRequest, obj: MemoryFile) -> None:
        services.memory_file_delete(memory_file=obj,
                                    actor=acting_member(request, obj.agent.tenant_id))


class SkillForm(TenantOwnedForm):
    """The API's rules for a skill's name and tools; a name is the tenant's once."""

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
        return cleaned


@admin.register(Skill)
class SkillAdmin(TenantOwnedAdmin):
    form = SkillForm
    list_display = ["name", "tenant", "owner", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]
    written_fields = services.SKILL_FIELDS

    def create(self, owner: Member, data: dict[str, Any], actor: Member | None) -> Skill:
        return services.skill_create(member=owner, data=data, actor=actor)

    def update(self, obj: Skill, data: dict[str, Any], actor: Member | None) -> None:
        services.skill_update(skill=obj, data=data, actor=actor)

    def delete(self, obj: Skill, actor: Member | None) -> None:
        services.skill_delete(skill=obj, actor=actor)  # also detaches it from the agents

