from django.contrib import admin

from runs.models import Message, Run, Session


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ["seq", "role", "content", "run", "created_at"]
    readonly_fields = fields
    can_delete = False
    ordering = ["seq"]

    def has_add_permission(self, request, obj=None):
        return False


class RunInline(admin.TabularInline):
    model = Run
    extra = 0
    fields = ["id", "status", "turn", "created_at", "finished_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "agent", "member", "tenant", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["title", "id"]
    readonly_fields = ["id", "tenant", "agent", "member", "created_at", "updated_at"]
    inlines = [RunInline, MessageInline]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "session", "agent", "status", "turn", "created_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["id", "session__id"]
    readonly_fields = [
        "id", "session", "agent", "status", "turn", "state_json", "error",
        "created_at", "updated_at", "started_at", "finished_at",
    ]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """Stored history is append-only: messages are read-only here."""

    list_display = ["session", "seq", "role", "run", "created_at"]
    search_fields = ["session__id"]
    readonly_fields = ["id", "session", "seq", "role", "content", "run", "created_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
