"""runs.execution.fairness: a run's tenant is past its fair share when it has more runs queued or
running than the share, counted across all the tenant's agents and sessions, nobody else's."""

from __future__ import annotations

import pytest

from runs.execution.fairness import over_fair_share
from runs.models import Run, RunStatus, Session


@pytest.fixture
def share(hango_settings) -> int:
    hango_settings(tenant_fair_share=3)
    return 3


def runs_of(caller, agent: dict, *statuses: str) -> list[Run]:
    """A run of each status, each in a session of its own (one active run a session)."""
    return [Run.objects.create(session=Session.objects.create(
        tenant_id=caller.member.tenant_id, agent_id=agent["id"], member=caller.member),
        agent_id=agent["id"], status=status) for status in statuses]


def test_only_the_tenants_queued_and_running_runs_count(alice, outsider, make_agent, share):
    first, second = make_agent(alice), make_agent(alice, name="second")
    # Neither finished runs nor one paused for approval hold a worker; another tenant's
    # busy runs are its own.
    runs_of(alice, first, RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.AWAITING_APPROVAL)
    runs_of(outsider, make_agent(outsider), *[RunStatus.RUNNING] * 5)
    mine = runs_of(alice, first, RunStatus.RUNNING, RunStatus.QUEUED)
    assert not over_fair_share(mine[-1].pk)
    mine += runs_of(alice, second, RunStatus.QUEUED)  # 3: the share, this one included
    assert not over_fair_share(mine[-1].pk)
    mine += runs_of(alice, second, RunStatus.QUEUED)  # past it, whichever agent
    assert over_fair_share(mine[-1].pk) and over_fair_share(mine[0].pk)
    Run.objects.filter(pk=mine[0].pk).update(status=RunStatus.COMPLETED)
    assert not over_fair_share(mine[-1].pk)
