from django.contrib import admin

from agents.models import Agent


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "owner", "model", "updated_at"]
    list_filter = ["tenant", "model"]
    search_fields = ["name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    autocomplete_fields = ["owner"]
