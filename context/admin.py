from django.contrib import admin

from context.models import ContextOverride
from hango_project.admin import AppWrittenAdmin


@admin.register(ContextOverride)
class ContextOverrideAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only here: overrides are written through the API's PUT routes, which check that a
    set leaves a valid request (and add the pairs of excluded tool messages)."""

    list_display = ["part", "action", "agent", "session", "tenant", "created_by", "created_at"]
    list_filter = ["action", "tenant"]
    search_fields = ["part"]
    may_delete = True  # deleting an agent or a session deletes its overrides
