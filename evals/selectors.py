"""Reads of eval suites, their cases and eval runs, scoped to the caller (accounts.scoping)."""

from __future__ import annotations

import uuid

from django.db.models import Count, QuerySet

from accounts.models import Member
from accounts.scoping import get_visible, visible_to
from evals.models import EvalCase, EvalCaseResult, EvalRun, EvalSuite
from hango_project.errors import NotFound


def suite_list(*, member: Member) -> QuerySet[EvalSuite]:
    return visible_to(EvalSuite.objects.annotate(case_count=Count("cases")), member)


def suite_get(*, member: Member, suite_id: uuid.UUID | str) -> EvalSuite:
    return get_visible(EvalSuite.objects.annotate(case_count=Count("cases")), member, suite_id,
                       what="Eval suite")


def case_list(*, suite: EvalSuite) -> QuerySet[EvalCase]:
    """``suite`` comes from :func:`suite_get`: whoever sees the suite sees its cases."""
    return EvalCase.objects.filter(suite=suite)


def case_get(*, suite: EvalSuite, case_id: uuid.UUID | str) -> EvalCase:
    try:
        key = uuid.UUID(str(case_id))
    except ValueError:
        raise NotFound("Eval case not found.") from None
    case = EvalCase.objects.filter(suite=suite, pk=key).first()
    if case is None:
        raise NotFound("Eval case not found.")
    return case


def eval_run_list(*, member: Member, suite: str | None = None,
                  agent: str | None = None) -> QuerySet[EvalRun]:
    # Each run's summary reads its results: one query for the page, not one per run.
    runs = visible_to(EvalRun.objects.prefetch_related("results"), member)
    for field, value in (("suite_id", suite), ("agent_id", agent)):
        if value is not None:
            try:
                runs = runs.filter(**{field: uuid.UUID(value)})
            except ValueError:
                return runs.none()
    return runs


def eval_run_get(*, member: Member, eval_run_id: uuid.UUID | str) -> EvalRun:
    return get_visible(EvalRun.objects.all(), member, eval_run_id, what="Eval run")


def results_of(eval_run: EvalRun) -> list[EvalCaseResult]:
    return list(EvalCaseResult.objects.filter(eval_run=eval_run))
