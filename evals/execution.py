"""An eval run's lifecycle: start (a session and a first run per case), advance a case when its
run ends (its next turn, or its grading), cancel.

Advancing is idempotent and reads only stored rows, under the case result's row lock: the hook
at a run's end (:mod:`evals.tasks`) advances a case, and so does every read of its eval run
(:func:`eval_run_refresh`), so a worker killed between a run's end and its case's grading
loses nothing: the next read grades it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from agents.models import Agent
from evals import grading
from evals.models import (
    CaseStatus,
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
    EvalSuite,
)
from evals.versions import resolved_version
from hango_project.errors import ApplicationError, Conflict, Unprocessable
from runs.intake import services as run_services
from runs.intake.admission import quota_admit
from runs.models import (
    PARKED_RUN_STATUSES,
    UNFINISHED_RUN_STATUSES,
    Run,
    RunStatus,
    Session,
    SessionFile,
    SessionKind,
)


def eval_run_start(*, member: Member, suite: EvalSuite, agent: Agent, version: int | None,
                   overrides: list[dict[str, Any]]) -> EvalRun:
    """An eval run of every case of ``suite`` against ``agent``: one session per case, marked
    as an eval's and carrying ``overrides`` (applied on top of the stored ones, never saved).
    No turn is posted yet: :func:`evals.tasks.start_cases` has each case start (on a worker,
    concurrently), and a read of the eval run starts any case it finds not started. Refused
    (:class:`QuotaExceeded`, 402) when the tenant's quota cannot start one more run."""
    cases = list(suite.cases.all())
    if not cases:
        raise Unprocessable("The suite has no cases to run.", detail={"suite": ["no cases"]})
    number = resolved_version(agent, version)
    with transaction.atomic():
        # Refused at once (402) when the tenant's quota cannot start a run, as a try and a post
        # are: not an eval run whose every case ends as an error.
        quota_admit(member.tenant_id)
        eval_run = EvalRun.objects.create(tenant_id=member.tenant_id, member=member, suite=suite,
                                          agent=agent, version=number, overrides=overrides)
        for case in cases:
            session = Session.objects.create(
                tenant_id=member.tenant_id, agent=agent, agent_version=number, member=member,
                kind=SessionKind.EVAL,
                title=f"eval {suite.name}: {case.name}"[:200], overrides=overrides,
                memory=case.setup.get("memory"))
            SessionFile.objects.bulk_create(
                SessionFile(session=session, path=path, content=content)
                for path, content in (case.setup.get("files") or {}).items())
            EvalCaseResult.objects.create(eval_run=eval_run, case=case, case_name=case.name,
                                          session=session)
        audit_record(actor=member, tenant=member.tenant_id, action=AuditAction.EVAL_RUN_START,
                     obj_type="eval_run", obj_id=eval_run.pk,
                     detail={"suite": str(suite.pk), "agent": str(agent.pk), "version": number,
                             "cases": len(cases), "overrides": [o["part"] for o in overrides]})
    return eval_run


def case_advance(result_id: uuid.UUID | str) -> None:
    """Move one case on from what is stored: post its turn when none runs, post the next turn
    when its run completed and one is left, grade it when its last run ended. Safe to call at
    any time, any number of times, from any process."""
    with transaction.atomic():
        result = (EvalCaseResult.objects.select_for_update(of=("self",))
                  .select_related("case", "eval_run").filter(pk=result_id).first())
        if result is None or result.status != CaseStatus.RUNNING:
            return
        if result.run_id is None:
            _post_turn(result)
            return
        run = Run.objects.get(pk=result.run_id)
        if run.status in UNFINISHED_RUN_STATUSES and run.status not in PARKED_RUN_STATUSES:
            return
        turns = result.case.turns if result.case else []
        if run.status == RunStatus.COMPLETED and result.turn + 1 < len(turns):
            result.turn += 1
            _post_turn(result)
            return
        if run.status in PARKED_RUN_STATUSES:
            _stop(run)
            grading.finish_error(result, f"the run stopped {run.status}: an eval gives no "
                                         "approvals and no client tool results")
        elif run.status != RunStatus.COMPLETED:
            grading.finish_error(result, _ended_why(run))
        else:
            grading.grade_case(result)
        _close_if_done(result.eval_run_id)


def _ended_why(run: Run) -> str:
    error = run.error or {}
    detail = f": {error.get('code')}: {error.get('message')}" if error else ""
    return f"the run {run.status}{detail}"


def _post_turn(result: EvalCaseResult) -> None:
    """Post the case's turn ``result.turn`` into its session, in the caller's transaction;
    a refusal (the quota spent, the session gone) finishes the case as an error."""
    turns = result.case.turns if result.case else []
    if result.session_id is None or result.turn >= len(turns):
        grading.finish_error(result, "the case or its session was deleted")
        _close_if_done(result.eval_run_id)
        return
    session = Session.objects.get(pk=result.session_id)
    try:
        with transaction.atomic():
            _, run = run_services.message_post(session=session, content=turns[result.turn],
                                               actor=result.eval_run.member)
    except ApplicationError as exc:
        grading.finish_error(result, f"turn {result.turn + 1} was not posted: {exc.message}")
        _close_if_done(result.eval_run_id)
        return
    result.run = run
    result.save(update_fields=["run", "turn"])


def _stop(run: Run) -> None:
    try:
        run_services.run_cancel(run=run)
    except Conflict:  # it ended meanwhile
        pass


def _close_if_done(eval_run_id: uuid.UUID) -> None:
    """The eval run completed once no case is running, checked when the caller's transaction
    has committed: two cases ending at once, each in its own transaction, each see the other
    still running before either commits, and neither would close it; after its commit, the
    later of the two sees both ended."""
    transaction.on_commit(lambda: _close(eval_run_id))


def _close(eval_run_id: uuid.UUID) -> None:
    if not EvalCaseResult.objects.filter(eval_run_id=eval_run_id,
                                         status=CaseStatus.RUNNING).exists():
        EvalRun.objects.filter(pk=eval_run_id, status=EvalRunStatus.RUNNING).update(
            status=EvalRunStatus.COMPLETED, finished_at=timezone.now())


def eval_run_refresh(eval_run: EvalRun) -> EvalRun:
    """Advance every case still running whose run is not (a lost end hook's work), close the
    eval run if none is left running, then the eval run as stored."""
    stuck = (EvalCaseResult.objects.filter(eval_run=eval_run, status=CaseStatus.RUNNING)
             .exclude(run__status__in=[s for s in UNFINISHED_RUN_STATUSES
                                       if s not in PARKED_RUN_STATUSES])
             .values_list("id", flat=True))
    for result_id in stuck:
        case_advance(result_id)
    _close(eval_run.pk)  # and one whose close was lost with its worker
    eval_run.refresh_from_db()
    return eval_run


def eval_run_cancel(*, eval_run: EvalRun, actor: Member) -> EvalRun:
    """Cancel every case still running, and its run."""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().get(pk=eval_run.pk)
        if locked.status != EvalRunStatus.RUNNING:
            raise Conflict(f"The eval run is already {locked.status}.",
                           detail={"status": locked.status})
        running = list(EvalCaseResult.objects.select_for_update(of=("self",))
                       .select_related("run").filter(eval_run=locked,
                                                     status=CaseStatus.RUNNING))
        for result in running:
            if result.run is not None and result.run.status in UNFINISHED_RUN_STATUSES:
                _stop(result.run)
            grading.finish(result, CaseStatus.CANCELLED, [])
        locked.status, locked.finished_at = EvalRunStatus.CANCELLED, timezone.now()
        locked.save(update_fields=["status", "finished_at"])
        audit_record(actor=actor, tenant=locked.tenant_id, action=AuditAction.EVAL_RUN_CANCEL,
                     obj_type="eval_run", obj_id=locked.pk, detail={"cases": len(running)})
    return locked
