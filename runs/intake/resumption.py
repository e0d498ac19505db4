"""Runs that go on by themselves once what stopped them is fixed: a run that failed because a
credential an MCP server needs was not set (``credential_missing``) is resumed when that
credential is set — the tenant's, for every such run of the tenant; a member's own, for that
member's runs — as if its member had asked (``POST /v1/runs/{id}/resume``, audited as the
writer's resume). Only a session's latest run goes on (a session that moved on since does not
take an old turn back), at most :data:`AT_ONCE` of them, the most recent first: the setting's
request does their writes. A run whose session has another run active by then stays failed, as
does one whose resume fails for any other reason: resuming it is the member's call, and the
credential stays set whatever happened here."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db.models import Exists, OuterRef

from accounts.models import Member
from hango_project.errors import ApplicationError
from harness.mcp import CREDENTIAL_MISSING
from runs.intake.services import run_resume
from runs.models import Run, RunStatus

log = logging.getLogger(__name__)

AT_ONCE = 200


def waiting_for(tenant_id: uuid.UUID, member: Member | None, name: str) -> list[Run]:
    """The failed runs of the tenant (of ``member``'s sessions, for their own credential) that
    stopped for want of the credential ``name``."""
    later = Run.objects.filter(session_id=OuterRef("session_id"),
                               created_at__gt=OuterRef("created_at"))
    runs = Run.objects.filter(session__tenant_id=tenant_id, status=RunStatus.FAILED,
                              error__code=CREDENTIAL_MISSING,
                              error__message__icontains=f"the credential {name!r}").exclude(
        Exists(later))
    if member is not None:
        runs = runs.filter(session__member=member)
    return list(runs.order_by("-created_at")[:AT_ONCE])


def on_credential_set(sender: Any, *, tenant_id: uuid.UUID, member: Member | None, name: str,
                      actor: Member | None, **kwargs: Any) -> None:
    for run in waiting_for(tenant_id, member, name):
        try:
            run_resume(run=run, actor=actor)
        except ApplicationError as exc:  # another run of its session is active, say
            log.info("run %s waits for its credential %r but was not resumed: %s", run.pk,
                     name, exc)
        except Exception:  # the credential is set; a resume that fails is the member's to retry
            log.exception("run %s waits for its credential %r; resuming it failed", run.pk,
                          name)
