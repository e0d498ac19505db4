"""Sessions, runs and what they hold, read in the admin: the application writes them. The admin
changes them only through the run services — cancelling and resuming runs, withdrawing a
waiting message — audited as the staff user's member of the tenant. Sessions are made through
the API, by the member whose conversation they are; they and their runs go with their agent."""

from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, unquote
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString

from accounts.admin import acting_member
from accounts.models import UsageRecord
from accounts.usage import CLOCK_SKEW, cost_line
from agents.version_admin import version_link
from hango_project.admin import ActionsAdmin, AppWrittenAdmin, ServiceWrittenAdmin
from hango_project.errors import ApplicationError
from runs import admin_display
from runs.intake import services
from runs.models import (
    Message,
    PendingMessage,
    Run,
    Session,
    SessionFile,
    ToolCallStart,
    Trigger,
)

# The transcript's, the todos' and the event log's styles.
READABLE_CSS = {"all": ["runs/admin.css"]}


class RunInline(AppWrittenAdmin, admin.TabularInline):
    model = Run
    extra = 0
    fields = readonly_fields = ("id", "status", "turn", "created_at", "finished_at")
    show_change_link = True


@admin.register(Session)
class SessionAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only. Not added here: a session is a member's conversation with an agent, made
    through the API as that member (audited as theirs), and one made here could not be
    written to. Its title and summary are not edited here either: the summary is what later
    runs send instead of the messages it covers, and the API changes neither. The inspector
    registers it again with its Context panel (``inspector/admin.py``)."""

    list_display = ["__str__", "agent", "member", "tenant", "updated_at"]
    list_filter = [admin_display.SessionKindFilter, "tenant"]
    search_fields = ["title", "id"]
    fields = readonly_fields = ("id", "tenant", "agent", "member", "title", "kind", "created_at",
                                "updated_at", "cost", "summary_seq", "summary", "transcript")
    inlines = [RunInline]

    class Media:
        css = READABLE_CSS

    @admin.display(description="transcript")
    def transcript(self, session: Session) -> SafeString:
        return admin_display.transcript(session)

    @admin.display(description="cost")
    def cost(self, session: Session) -> str:
        """What the session's model calls cost (its runs', its tries', its summaries')."""
        return cost_line(UsageRecord.objects.filter(
            tenant_id=session.tenant_id, session_id=session.pk,
            created_at__gte=session.created_at - CLOCK_SKEW))


@admin.register(Run)
class RunAdmin(AppWrittenAdmin, ActionsAdmin, admin.ModelAdmin):
    """Runs are changed only through the run services: cancel and resume as actions."""

    list_display = ["id", "session", "agent", "agent_version_link", "status", "turn",
                    "todo_progress", "created_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["id", "session__id"]
    fieldsets = [
        (None, {"fields": ["id", "session", "agent", "agent_version_link", "status", "turn",
                           "error_line", "cancel_requested", "created_at", "started_at",
                           "finished_at"]}),
        ("Todos", {"fields": ["todos"]}),
        ("Usage", {"fields": ["usage", "cost"]}),
        ("Prompt cache", {"fields": ["cache_calls"]}),
        ("Events", {"fields": ["event_log"]}),
        ("Lease and checkpoint", {"classes": ["collapse"], "fields": [
            "lease_owner", "lease_expires_at", "epoch", "updated_at", "checkpoint"]}),
    ]
    readonly_fields = flatten_fieldsets(fieldsets)
    actions = ["cancel_runs", "resume_runs"]

    class Media:
        css = READABLE_CSS

    def get_urls(self) -> list[URLPattern]:
        events = path("<path:object_id>/events/", self.admin_site.admin_view(self.events_view),
                      name="runs_run_events")
        return [events, *super().get_urls()]

    def events_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """All of a run's events, a page of EVENTS_SHOWN at a time in seq order (its page shows
        the last ones)."""
        run = self.get_object(request, unquote(object_id))
        if run is None or not self.has_view_permission(request, run):
            messages.warning(request, f"There is no run with the id “{object_id}”.")
            return HttpResponseRedirect(reverse("admin:runs_run_changelist"))
        page = Paginator(run.events.order_by("seq"), admin_display.EVENTS_SHOWN).get_page(
            request.GET.get("page"))
        return TemplateResponse(request, "runs/admin/run_events.html", {
            **self.admin_site.each_context(request),
            "title": f"Events of run {run.pk}", "subtitle": None, "opts": self.opts,
            "original": run, "has_view_permission": True, "page": page,
            "events": admin_display.shown_events(page.object_list)})

    @admin.display(description="agent version")
    def agent_version_link(self, run: Run) -> SafeString | str:
        """The version the run executed, linked to its row on the agent's page."""
        return version_link(run.agent_id, run.agent_version)

    @admin.display(description="todos")
    def todo_progress(self, run: Run) -> str:
        todos = (run.state_json or {}).get("todos", [])
        done = sum(t.get("status") == "completed" for t in todos)
        return f"{done}/{len(todos)} done" if todos else "—"

    @admin.display(description="todos")
    def todos(self, run: Run) -> SafeString:
        return admin_display.todo_list(run)

    @admin.display(description="tokens")
    def usage(self, run: Run) -> SafeString:
        return admin_display.usage(run)

    @admin.display(description="cost")
    def cost(self, run: Run) -> str:
        """What the run's model calls cost, at the prices they were recorded with."""
        return cost_line(UsageRecord.objects.filter(
            tenant_id=run.session.tenant_id, run_id=run.pk,
            created_at__gte=run.created_at - CLOCK_SKEW))

    @admin.display(description="model calls")
    def cache_calls(self, run: Run) -> SafeString:
        return admin_display.cache_calls(run)

    @admin.display(description="events")
    def event_log(self, run: Run) -> SafeString:
        return admin_display.event_log(run)

    @admin.display(description="error")
    def error_line(self, run: Run) -> str:
        return admin_display.error_line(run.error)

    @admin.display(description="checkpoint")
    def checkpoint(self, run: Run) -> SafeString:
        return admin_display.checkpoint(run)

    def _apply(self, request, queryset, service, verb: str) -> None:
        done, refused = 0, []
        for run in queryset.select_related("session"):
            try:
                service(run=run, actor=acting_member(request, run.session.tenant_id))
                done += 1
            except ApplicationError as exc:
                refused.append(f"{run.id}: {exc.message}")
        self.message_user(request, f"{verb} {done} run(s).")
        for line in refused:
            self.message_user(request, line, level=messages.WARNING)

    @admin.action(description="Cancel selected runs", permissions=["act"])
    def cancel_runs(self, request, queryset):
        self._apply(request, queryset, services.run_cancel, "Cancelled (or asked to stop)")

    @admin.action(description="Resume selected runs", permissions=["act"])
    def resume_runs(self, request, queryset):
        self._apply(request, queryset, services.run_resume, "Resumed")


@admin.register(Message)
class MessageAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Stored history is append-only: messages are read-only here."""

    list_display = ["session", "seq", "role", "run", "created_at"]
    search_fields = ["session__id"]
    readonly_fields = ["id", "session", "seq", "role", "readable", "content", "run", "created_at"]

    class Media:
        css = READABLE_CSS

    @admin.display(description="as a transcript")
    def readable(self, message: Message) -> SafeString:
        return admin_display.one_message(message)


@admin.register(PendingMessage)
class PendingMessageAdmin(ServiceWrittenAdmin, AppWrittenAdmin, admin.ModelAdmin):
    """Messages waiting in their session's queue for the runs before them to end. Deleting one
    withdraws it with its run (:func:`runs.intake.services.run_withdraw`, audited); cancelling the
    waiting run instead (on its page) keeps the message and skips the run."""

    may_delete = True
    delete_related = ("run__session",)

    list_display = ["position", "session", "run", "created_at"]
    search_fields = ["session__id", "run__id"]
    readonly_fields = ["position", "message_id", "session", "run", "content", "created_at"]

    # The run goes too: a pending run without its message would wait for ever (nothing starts
    # it, nothing ends it).
    def delete_model(self, request, obj: PendingMessage) -> None:
        services.run_withdraw(run=obj.run, actor=acting_member(request, obj.run.session.tenant_id))



@admin.register(SessionFile)
class SessionFileAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only: the agent's file tools write these (the API reads them)."""

    list_display = ["path", "session", "updated_at"]
    search_fields = ["path", "session__id"]
    readonly_fields = ["id", "session", "path", "content", "created_at", "updated_at"]


@admin.register(Trigger)
class TriggerAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """The messages other services sent through the broker and hango took (the refused ones
    are in the audit log, ``trigger.reject``): read-only."""

    list_display = ["idempotency_key", "tenant", "member", "session", "run", "sequence",
                    "created_at"]
    list_filter = ["tenant"]
    search_fields = ["idempotency_key", "id", "session__id", "run__id"]
    readonly_fields = ["id", "tenant", "member", "api_key", "idempotency_key", "fingerprint",
                       "session", "run", "sequence", "created_at"]


@admin.register(ToolCallStart)
class ToolCallStartAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """The MCP calls runs sent to servers not marked idempotent, each journaled before it was
    sent (what a worker taking a run over reads): read-only."""

    list_display = ["tool", "tool_use_id", "run", "epoch", "created_at"]
    search_fields = ["tool_use_id", "run__id", "key"]
    readonly_fields = ["run", "tool_use_id", "tool", "key", "epoch", "created_at"]
