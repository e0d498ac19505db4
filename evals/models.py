"""Eval suites (cases to send an agent and graders for its answers) and eval runs (one ordinary
run per case, graded when it ends)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from accounts.scoping import Tenancy
from agents.models import Agent
from hango_project.ids import time_ordered_uuid
from runs.models import Run, Session


class EvalSuite(models.Model):
    tenancy = Tenancy(tenant="tenant", owner="owner")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="eval_suites")
    owner = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="eval_suites")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "eval_suites"
        indexes = [models.Index(fields=["tenant", "owner", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="eval_suite_name_not_empty"),
            models.UniqueConstraint(fields=["tenant", "name"], name="eval_suite_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class EvalCase(models.Model):
    """The user turns to send (one run each, the next posted when the previous one ended), the
    session's setup, and the graders of the last run's answer and of the runs' trajectory
    (:mod:`evals.grader_specs` validates them)."""

    tenancy = Tenancy(tenant="suite__tenant", owner="suite__owner")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=200)
    turns = models.JSONField(help_text="The user messages, in order: a list of strings.")
    setup = models.JSONField(default=dict, blank=True,
                             help_text='{"files": {"/path": "content"}, "memory": {"/path": '
                                       '"content"}}: the session\'s files and its own memory.')
    graders = models.JSONField(default=list, help_text="A list of grader objects.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "eval_cases"
        ordering = ["suite", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "name"], name="eval_case_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class EvalRunStatus(models.TextChoices):
    RUNNING = "running"
    COMPLETED = "completed"  # every case graded (passed or not)
    CANCELLED = "cancelled"


class EvalRun(models.Model):
    """A suite sent to an agent (as one of its versions, with unsaved context overrides)."""

    tenancy = Tenancy(tenant="tenant", owner="member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="eval_runs")
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="eval_runs")
    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="runs")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="eval_runs")
    version = models.PositiveIntegerField(null=True, blank=True,
                                          help_text="The agent's version run; null: its current.")
    overrides = models.JSONField(default=list, blank=True,
                                 help_text="Context overrides applied and never saved.")
    status = models.CharField(max_length=16, choices=EvalRunStatus.choices,
                              default=EvalRunStatus.RUNNING)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "eval_runs"
        indexes = [models.Index(fields=["tenant", "member", "-created_at"])]
        constraints = [models.CheckConstraint(condition=Q(status__in=EvalRunStatus.values),
                                              name="eval_run_status_valid")]

    def __str__(self) -> str:
        return f"eval run {self.id} ({self.status})"


class CaseStatus(models.TextChoices):
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the case could not be run or graded (its run failed, a quota, …)
    CANCELLED = "cancelled"


class EvalCaseResult(models.Model):
    """One case of an eval run: its session, the run under way (``turn`` its index among the
    case's turns), and once graded each grader's verdict and the runs' totals."""

    tenancy = Tenancy(tenant="eval_run__tenant", owner="eval_run__member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    # Kept when the case is deleted from its suite: the result stays the eval run's.
    case = models.ForeignKey(EvalCase, null=True, on_delete=models.SET_NULL, related_name="+")
    case_name = models.CharField(max_length=200)
    session = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL, related_name="+")
    run = models.ForeignKey(Run, null=True, on_delete=models.SET_NULL, related_name="+")
    turn = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=CaseStatus.choices,
                              default=CaseStatus.RUNNING)
    verdicts = models.JSONField(default=list, blank=True,
                                help_text='[{"grader", "passed", "reason"}] in the case\'s order.')
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.JSONField(default=dict, blank=True,
                            help_text="The runs' cost as accounts.usage.cost_totals gives it.")
    latency_ms = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "eval_case_results"
        ordering = ["eval_run", "created_at", "id"]
        indexes = [models.Index(fields=["run"], name="eval_result_by_run")]
        constraints = [models.CheckConstraint(condition=Q(status__in=CaseStatus.values),
                                              name="eval_case_result_status_valid")]

    def __str__(self) -> str:
        return f"{self.case_name}: {self.status}"

    @property
    def passed(self) -> bool:
        return self.status == CaseStatus.PASSED
