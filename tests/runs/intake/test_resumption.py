"""Runs stopped for want of a credential (runs.intake.resumption): which of them go on once it is
set."""

from __future__ import annotations

import pytest

from harness.mcp import CREDENTIAL_MISSING
from runs.intake.resumption import waiting_for
from runs.intake.services import message_post
from runs.models import Run, RunStatus, Session

STOPPED = {"code": CREDENTIAL_MISSING,
           "message": "The MCP server 'docs' needs the credential 'docs-token', which is not set."}


def stopped_run(session: Session) -> Run:
    _, run = message_post(session=session, content="look it up")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error=STOPPED)
    return Run.objects.get(pk=run.pk)


@pytest.fixture
def sessions(alice, make_session, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    return [Session.objects.get(pk=make_session(alice)["id"]) for _ in range(2)]


def test_only_a_session_s_latest_run_goes_on(alice, sessions):
    moved_on, waiting = sessions
    stopped_run(moved_on)
    later = stopped_run(moved_on)  # the session moved on: its first run stays as it ended
    Run.objects.filter(pk=later.pk).update(status=RunStatus.COMPLETED, error=None)
    latest = stopped_run(waiting)
    assert waiting_for(alice.member.tenant_id, None, "docs-token") == [latest]
    assert waiting_for(alice.member.tenant_id, None, "other-token") == []
