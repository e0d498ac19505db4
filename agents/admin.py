"""Agents, their memory files and the tenant's skills in the admin: written through the same
services as the API (its checks, its audit rows), as the staff user's member of the tenant; the
forms, with the API's rules, are :mod:`agents.forms`."""

from typing import Any

from django.contrib import admin
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from accounts.admin import acting_member
from accounts.models import Member
from agents import services
from agents.forms import AgentForm, MemoryFileForm, MemoryFileFormSet, OneMemoryFileForm, SkillForm
from agents.models import Agent, MemoryFile, Skill
from agents.version_admin import versions_table
from hango_project.admin import OwnerAdmin, ServiceWrittenAdmin, adopt, written


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
    readonly_fields = ["id", "version", "versions", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]
    inlines = [MemoryFileInline]
    written_fields = services.WRITABLE_FIELDS

    @admin.display(description="Versions (newest first; read-only)")
    def versions(self, obj: Agent) -> Any:
        return versions_table(obj)

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

