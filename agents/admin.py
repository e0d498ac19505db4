from django.contrib import admin

from agents.models import Agent, MemoryFile, Skill


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "owner", "model", "updated_at"]
    list_filter = ["tenant", "model"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]


@admin.register(MemoryFile)
class MemoryFileAdmin(admin.ModelAdmin):
    list_display = ["path", "agent", "updated_at"]
    list_filter = ["agent__tenant"]
    search_fields = ["path", "agent__name"]
    readonly_fields = ["id", "created_at", "updated_at"]


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "owner", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]
