"""A case graded from its stored rows: its trajectory read from the session's messages, runs and
usage rows, each grader's verdict, and the totals written on its result."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import F, Sum
from django.utils import timezone

from accounts.models import UsageRecord
from accounts.usage import cost_totals
from evals import judge
from evals.grader_specs import GraderProblems, JudgeGrader, parse_graders
from evals.graders import ToolCall, Trajectory, Verdict, grade
from evals.models import CaseStatus, EvalCaseResult
from harness.messages import Message as HMessage
from harness.serde import content_from_json
from runs.models import Message, Role, Run


def _runs_usage(result: EvalCaseResult) -> Any:
    """The usage rows of the case's runs (a judge's call has no run)."""
    return UsageRecord.objects.filter(tenant_id=result.eval_run.tenant_id,
                                      session=result.session, run__isnull=False)


def trajectory(result: EvalCaseResult) -> Trajectory:
    """What the case's runs did, from the stored session."""
    messages = [HMessage(role="assistant" if m.role == Role.ASSISTANT else "user",
                         content=content_from_json(m.content))
                for m in Message.objects.filter(session=result.session)
                .only("role", "content").order_by("seq")]
    answers = [m for m in messages if m.role == "assistant" and m.text]
    runs = Run.objects.filter(session=result.session)
    sums = runs.aggregate(turns=Sum("turn"), tokens=Sum(F("input_tokens") + F("output_tokens")
                                                        + F("cache_read_tokens")
                                                        + F("cache_write_tokens")))
    cost = cost_totals(_runs_usage(result))
    return Trajectory(
        answer=answers[-1].text if answers else "",
        calls=tuple(ToolCall(name=u.name, args=u.input) for m in messages for u in m.tool_uses),
        turns=int(sums["turns"] or 0), tokens=int(sums["tokens"] or 0),
        cost={line["currency"]: Decimal(line["total"]) for line in cost["by_currency"]})


def grade_case(result: EvalCaseResult) -> None:
    """Every grader's verdict on the case's completed runs; passed when all pass (a case with
    no grader passes when its runs completed). Under the caller's lock on ``result``."""
    try:
        graders = parse_graders(result.case.graders if result.case else [])
    except GraderProblems as exc:  # validated when written: only a hand-edited row gets here
        finish_error(result, f"the case's graders are invalid: {exc}")
        return
    seen = trajectory(result)
    verdicts: list[Verdict] = []
    for index, grader in enumerate(graders):
        if isinstance(grader, JudgeGrader):
            verdicts.append(judge.judge(grader, result=result, answer=seen.answer, index=index))
        else:
            verdicts.append(grade(grader, seen))
    status = CaseStatus.PASSED if all(v.passed for v in verdicts) else CaseStatus.FAILED
    finish(result, status, [v.to_json() for v in verdicts])


def finish_error(result: EvalCaseResult, reason: str) -> None:
    finish(result, CaseStatus.ERROR, [{"grader": "run", "passed": False, "reason": reason}])


def finish(result: EvalCaseResult, status: CaseStatus, verdicts: list[dict[str, Any]]) -> None:
    """The case's end, its totals taken from its runs and their usage rows."""
    runs = list(Run.objects.filter(session=result.session).only(
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
        "created_at", "finished_at")) if result.session_id else []
    result.status, result.verdicts, result.finished_at = status, verdicts, timezone.now()
    result.input_tokens = sum(r.input_tokens + r.cache_read_tokens + r.cache_write_tokens
                              for r in runs)
    result.output_tokens = sum(r.output_tokens for r in runs)
    result.latency_ms = sum(int((r.finished_at - r.created_at).total_seconds() * 1000)
                            for r in runs if r.finished_at) if runs else None
    result.cost = cost_totals(_runs_usage(result)) if result.session_id else {}
    result.save(update_fields=["status", "verdicts", "finished_at", "input_tokens",
                               "output_tokens", "latency_ms", "cost"])

