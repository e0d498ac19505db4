"""Read-only admin pages of eval suites and eval runs: the API and the CLI write them (their
services check graders, start runs and audit); here staff read what ran and how it scored, and
compare two eval runs (:mod:`evals.admin_compare`)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from evals.admin_compare import CompareAdmin
from evals.models import EvalCase, EvalCaseResult, EvalRun, EvalSuite
from evals.results import summary
from hango_project.admin import AppWrittenAdmin


class EvalCaseInline(AppWrittenAdmin, admin.StackedInline):
    model = EvalCase
    extra = 0
    fields = readonly_fields = ("name", "turns", "setup", "graders", "created_at")


@admin.register(EvalSuite)
class EvalSuiteAdmin(AppWrittenAdmin, admin.ModelAdmin):
    list_display = ["name", "tenant", "owner", "created_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "id"]
    fields = readonly_fields = ("id", "tenant", "owner", "name", "description", "created_at",
                                "updated_at")
    inlines = [EvalCaseInline]


class EvalCaseResultInline(AppWrittenAdmin, admin.TabularInline):
    model = EvalCaseResult
    extra = 0
    fields = readonly_fields = ("case_name", "status", "verdicts", "input_tokens",
                                "output_tokens", "cost", "latency_ms", "session", "run")


@admin.register(EvalRun)
class EvalRunAdmin(CompareAdmin, AppWrittenAdmin, admin.ModelAdmin):
    list_display = ["id", "suite", "agent", "version", "status", "pass_rate", "created_at"]
    list_filter = ["status", "tenant"]
    search_fields = ["id", "suite__name"]
    fields = readonly_fields = ("id", "tenant", "member", "suite", "agent", "version",
                                "overrides", "status", "totals", "compare_link", "created_at",
                                "finished_at")
    inlines = [EvalCaseResultInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[EvalRun]:
        return super().get_queryset(request).select_related("suite", "agent")

    @admin.display(description="pass rate")
    def pass_rate(self, eval_run: EvalRun) -> str:
        rate = summary(list(eval_run.results.all()))["pass_rate"]
        return "-" if rate is None else f"{rate:.0%}"

    @admin.display(description="totals")
    def totals(self, eval_run: EvalRun) -> str:
        s = summary(list(eval_run.results.all()))
        cost = " + ".join(f"{v} {c}" for c, v in s["cost"].items()) or "nothing priced"
        return (f"{s['passed']}/{s['cases']} passed, {s['failed']} failed, {s['error']} errors; "
                f"{s['input_tokens']}+{s['output_tokens']} tokens; {cost}; "
                f"{s['latency_ms']['total']} ms")
