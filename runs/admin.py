from django.contrib import admin, messages

from context.panel import ContextPanelAdmin
from hango_project.admin import AppWrittenAdmin
from hango_project.errors import ApplicationError
from runs import services
from runs.models import Message, Run, RunEvent, Session, SessionFile


class MessageInline(AppWrittenAdmin, admin.TabularInline):
    model = Message
    extra = 0
    fields = readonly_fields = ("seq", "role", "content", "run", "created_at")
    may_change = True  # the session page's permission (every field is read-only regardless)
    ordering = ["seq"]


class RunInline(AppWrittenAdmin, admin.TabularInline):
    model = Run
    extra = 0
    fields = readonly_fields = ("id", "status", "turn", "created_at", "finished_at")
    may_change = True  # the session page's permission, which also labels the run link "Change"
    show_change_link = True


@admin.register(Session)
class SessionAdmin(ContextPanelAdmin, admin.ModelAdmin):
    list_display = ["__str__", "agent", "member", "tenant", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["title", "id"]
    readonly_fields = ["id", "tenant", "agent", "member", "created_at", "updated_at"]
    inlines = [RunInline, MessageInline]


@admin.register(Run)
class RunAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Runs are changed only through the run services: cancel and resume as actions."""

    may_change = may_delete = True

    list_display = ["id", "session", "agent", "status", "turn", "todo_progress", "created_at",
                    "finished_at"]
    list_filter = ["status"]
    search_fields = ["id", "session__id"]
    readonly_fields = [
        "id", "session", "agent", "status", "turn", "todo_progress", "state_json", "error",
        "cancel_requested", "lease_owner", "lease_expires_at", "epoch", "input_tokens",
        "output_tokens", "cache_read_tokens", "cache_write_tokens",
        "created_at", "updated_at", "started_at", "finished_at",
    ]
    exclude = ["event_seq"]
    actions = ["cancel_runs", "resume_runs"]

    @admin.display(description="todos")
    def todo_progress(self, run: Run) -> str:
        todos = (run.state_json or {}).get("todos", [])
        done = sum(t.get("status") == "completed" for t in todos)
        return f"{done}/{len(todos)} done" if todos else "—"

    def _apply(self, request, queryset, service, verb: str) -> None:
        done, refused = 0, []
        for run in queryset:
            try:
                service(run=run)
                done += 1
            except ApplicationError as exc:
                refused.append(f"{run.id}: {exc.message}")
        self.message_user(request, f"{verb} {done} run(s).")
        for line in refused:
            self.message_user(request, line, level=messages.WARNING)

    @admin.action(description="Cancel selected runs")
    def cancel_runs(self, request, queryset):
        self._apply(request, queryset, services.run_cancel, "Cancelled (or asked to stop)")

    @admin.action(description="Resume selected runs")
    def resume_runs(self, request, queryset):
        self._apply(request, queryset, services.run_resume, "Resumed")


@admin.register(RunEvent)
class RunEventAdmin(AppWrittenAdmin, admin.ModelAdmin):
    may_delete = True  # deleting a run or a session deletes its events

    list_display = ["run", "seq", "type", "created_at"]
    list_filter = ["type"]
    search_fields = ["run__id"]
    readonly_fields = ["run", "seq", "type", "data", "created_at"]


@admin.register(Message)
class MessageAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Stored history is append-only: messages are read-only here."""

    may_delete = True  # deleting a session deletes its messages

    list_display = ["session", "seq", "role", "run", "created_at"]
    search_fields = ["session__id"]
    readonly_fields = ["id", "session", "seq", "role", "content", "run", "created_at"]


@admin.register(SessionFile)
class SessionFileAdmin(AppWrittenAdmin, admin.ModelAdmin):
    may_change = may_delete = True

    list_display = ["path", "session", "updated_at"]
    search_fields = ["path", "session__id"]
    readonly_fields = ["id", "session", "path", "content", "created_at", "updated_at"]
