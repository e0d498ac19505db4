"""Writes of eval suites and their cases (an eval run's are :mod:`evals.execution`'s)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from evals.models import EvalCase, EvalSuite
from hango_project.errors import Conflict, Unprocessable
from runs.models import Message, Role, Session

SUITE_FIELDS = ("name", "description")
CASE_FIELDS = ("name", "turns", "setup", "graders")
MAX_TURNS = 20


def _audit(actor: Member | None, action: AuditAction, suite: EvalSuite, **detail: Any) -> None:
    audit_record(actor=actor, tenant=suite.tenant_id, action=action, obj_type="eval_suite",
                 obj_id=suite.pk, detail={"name": suite.name, **detail})


def _taken(what: str, name: str) -> Conflict:
    return Conflict(f"{what} with this name already exists.", detail={"name": name})


@transaction.atomic
def suite_create(*, member: Member, data: dict[str, Any]) -> EvalSuite:
    fields = {k: v for k, v in data.items() if k in SUITE_FIELDS}
    try:
        with transaction.atomic():
            suite = EvalSuite.objects.create(tenant_id=member.tenant_id, owner=member, **fields)
    except IntegrityError:
        raise _taken("An eval suite", fields["name"]) from None
    _audit(member, AuditAction.EVAL_SUITE_CREATE, suite)
    suite.case_count = 0  # type: ignore[attr-defined]
    return suite


@transaction.atomic
def suite_update(*, suite: EvalSuite, data: dict[str, Any], actor: Member) -> EvalSuite:
    changed = [k for k in SUITE_FIELDS if k in data]
    for name in changed:
        setattr(suite, name, data[name])
    try:
        with transaction.atomic():
            suite.save(update_fields=[*changed, "updated_at"])
    except IntegrityError:
        raise _taken("An eval suite", suite.name) from None
    _audit(actor, AuditAction.EVAL_SUITE_UPDATE, suite, changed=changed)
    return suite


@transaction.atomic
def suite_delete(*, suite: EvalSuite, actor: Member) -> None:
    """Delete the suite with its cases and its eval runs' results (their sessions stay)."""
    _audit(actor, AuditAction.EVAL_SUITE_DELETE, suite)
    suite.delete()


@transaction.atomic
def case_create(*, suite: EvalSuite, data: dict[str, Any], actor: Member) -> EvalCase:
    fields = {k: v for k, v in data.items() if k in CASE_FIELDS}
    try:
        with transaction.atomic():
            case = EvalCase.objects.create(suite=suite, **fields)
    except IntegrityError:
        raise _taken("A case of this suite", fields["name"]) from None
    _audit(actor, AuditAction.EVAL_SUITE_UPDATE, suite, case=str(case.pk), case_action="add")
    return case


@transaction.atomic
def case_update(*, case: EvalCase, data: dict[str, Any], actor: Member) -> EvalCase:
    changed = [k for k in CASE_FIELDS if k in data]
    for name in changed:
        setattr(case, name, data[name])
    try:
        with transaction.atomic():
            case.save(update_fields=changed)
    except IntegrityError:
        raise _taken("A case of this suite", case.name) from None
    _audit(actor, AuditAction.EVAL_SUITE_UPDATE, case.suite, case=str(case.pk),
           case_action="change", changed=changed)
    return case


@transaction.atomic
def case_delete(*, case: EvalCase, actor: Member) -> None:
    _audit(actor, AuditAction.EVAL_SUITE_UPDATE, case.suite, case=str(case.pk),
           case_action="remove")
    case.delete()


def case_from_session(*, session: Session, name: str | None, expect: str) -> dict[str, Any]:
    """A case's fields from a conversation: its user messages' text as the turns, and a grader
    suggested from its final answer (``expect``: ``contains`` its first line, ``exact`` the
    whole answer, ``none``)."""
    messages = list(Message.objects.filter(session=session).only("role", "content")
                    .order_by("seq"))
    turns = [text for m in messages if m.role == Role.USER
             and (text := _text(m.content)).strip()]
    if not turns:
        raise Unprocessable("The session has no user message with text to replay.",
                            detail={"session": ["no user text"]})
    if len(turns) > MAX_TURNS:
        raise Unprocessable(f"The session has {len(turns)} user messages; a case has at most "
                            f"{MAX_TURNS} turns.", detail={"session": ["too many turns"]})
    answers = [text for m in messages if m.role == Role.ASSISTANT
               and (text := _text(m.content)).strip()]
    graders: list[dict[str, Any]] = []
    if answers and expect == "exact":
        graders.append({"type": "exact", "value": answers[-1]})
    elif answers and expect == "contains":
        graders.append({"type": "contains", "value": answers[-1].strip().splitlines()[0]})
    return {"name": (name or session.title or f"session {session.pk}")[:200],
            "turns": turns, "setup": {}, "graders": graders}


def _text(content: Any) -> str:
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
