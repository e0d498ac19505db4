from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agents import services
from agents.config import allowed_tools_problems, config_problems
from agents.models import SKILL_NAME_PATTERN, Agent, MemoryFile, Skill
from hango_project.config import hango
from hango_project.errors import ApplicationError
from harness.middleware.memory import content_problem, path_problem


class MemoryFileForm(forms.ModelForm):
    """The API's rules for a memory file: a normalized absolute path, content within budget."""

    class Meta:
        model = MemoryFile
        fields = ["agent", "path", "content"]
        widgets = {"content": forms.Textarea(attrs={"rows": 12, "cols": 100})}

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


class MemoryFileInline(admin.StackedInline):
    model = MemoryFile
    form = MemoryFileForm
    extra = 0
    fields = ["path", "content", "updated_at"]
    readonly_fields = ["updated_at"]


class AgentForm(forms.ModelForm):
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
        cleaned = super().clean() or {}
        tenant, config = cleaned.get("tenant"), cleaned.get("config")
        if tenant is not None and isinstance(config, dict):  # the skills must be the tenant's
            try:
                cleaned["config"] = services.checked_config(tenant.pk, config)
            except ApplicationError as exc:
                self.add_error("config", [str(p) for p in exc.detail.get("config", [exc])])
        return cleaned


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ["name", "tenant", "owner", "model", "updated_at"]
    list_filter = ["tenant", "model"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]
    inlines = [MemoryFileInline]


@admin.register(MemoryFile)
class MemoryFileAdmin(admin.ModelAdmin):
    form = MemoryFileForm
    list_display = ["path", "agent", "size", "updated_at"]
    list_filter = ["agent__tenant"]
    search_fields = ["path", "agent__name"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["agent"]

    @admin.display(description="size (bytes)")
    def size(self, obj: MemoryFile) -> int:
        return len(obj.content.encode())


class SkillForm(forms.ModelForm):
    """The API's rules for a skill's name and tools."""

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


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    form = SkillForm
    list_display = ["name", "tenant", "owner", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]

    def delete_model(self, request: HttpRequest, obj: Skill) -> None:
        services.skill_delete(skill=obj)  # also detaches it from the tenant's agents

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Skill]) -> None:
        for skill in queryset:
            services.skill_delete(skill=skill)
