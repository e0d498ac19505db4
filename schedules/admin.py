"""Schedules in the admin: their state and fires, read-only but for pausing and resuming
(through the same services as the API, audited as the staff user's member of the tenant)."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.admin import acting_member
from hango_project.admin import ActionsAdmin, AppWrittenAdmin
from schedules import services
from schedules.models import Fire, Schedule


class FireInline(AppWrittenAdmin, admin.TabularInline):
    model = Fire
    extra = 0
    fields = readonly_fields = ("fire_at", "fired_at", "manual", "status", "run", "error")
    ordering = ("-fire_at",)


@admin.register(Schedule)
class ScheduleAdmin(AppWrittenAdmin, ActionsAdmin, admin.ModelAdmin):
    list_display = ["name", "tenant", "agent", "cron", "timezone", "active", "next_run_at",
                    "missed", "consecutive_failures"]
    list_filter = ["tenant", "active"]
    search_fields = ["name", "id"]
    readonly_fields = ["id", "tenant", "member", "name", "agent", "session", "cron", "timezone",
                       "content", "multitask", "webhook", "active", "paused_reason",
                       "next_run_at", "last_fired_at", "missed", "consecutive_failures",
                       "pause_after_failures", "created_at", "updated_at"]
    inlines = [FireInline]
    actions = ["pause", "resume"]

    @admin.action(description="Pause the selected schedules", permissions=["act"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            services.schedule_pause(schedule=schedule,
                                    actor=acting_member(request, schedule.tenant_id))
        messages.success(request, f"Paused {queryset.count()} schedule(s).")

    @admin.action(description="Resume the selected schedules (from now on)",
                  permissions=["act"])
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            services.schedule_resume(schedule=schedule,
                                     actor=acting_member(request, schedule.tenant_id))
        messages.success(request, f"Resumed {queryset.count()} schedule(s).")
