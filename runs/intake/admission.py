"""Run admission: whether a tenant's quota lets one more run start spending.

A run does not spend tokens when it starts; it spends them turn by turn afterwards. So "is the
quota spent?" alone would let a hundred runs start on the last token. Instead every call that
would make a run spend (start, resume, approve; a context try too) is *admitted* under a row
lock on the tenant (``SELECT … FOR NO KEY UPDATE``, inside the caller's transaction):

    admitted  ⇔  used + (active runs + 1) × reservation  ≤  quota

where *used* is the period's spend and live holds (:func:`accounts.usage.quota_state`),
*active runs* are the tenant's queued and running runs (those that will spend) and
*reservation* is ``hango().quota_run_reservation_tokens``. Admissions of one tenant are thus
serialized; each sees the runs admitted before it (their rows are committed before the lock is
released), so the sum of spend and outstanding reservations never passes the quota. Tenants
without a quota are never locked. Each model call of a run is then held against the quota on
its own (:func:`accounts.usage.quota_hold`).

Here, not in ``accounts``: counting a tenant's active runs reads runs, and runs sit above
accounts.
"""

from __future__ import annotations

import uuid

from django.db import transaction

from accounts.models import Tenant
from accounts.usage import locked_tenant, quota_state
from hango_project import metrics
from hango_project.config import hango
from hango_project.errors import QuotaExceeded
from hango_project.sql import fetch, uuid_param
from runs.models import BUSY_RUN_STATUSES, Run


def run_reservation() -> int:
    return hango().quota_run_reservation_tokens


def quota_admit(tenant_id: uuid.UUID, *, known: Tenant | None = None) -> None:
    """Admit one more spending run of the tenant, or raise :class:`QuotaExceeded` (402).
    ``known``: the tenant's row as this request already read it (with its API key): whether it
    has a quota at all is taken from it instead of a read of its own.

    Must run inside the transaction that stores the posted message and its run: the tenant's
    row lock is held until that transaction commits, so concurrent admissions see each other's
    runs. A run that waits in its session's queue is admitted when posted, not again when it
    starts; if the quota is spent by then, its first model call fails it (resumably)."""
    assert transaction.get_connection().in_atomic_block, "quota_admit needs a transaction"
    if known is not None and known.pk == tenant_id:  # read a moment ago, as a read here would
        unlimited = known.token_quota is None
    else:  # plain SQL: read on every post, the ORM compiled it anew each time
        unlocked = fetch("SELECT token_quota FROM tenants WHERE id = %s",
                         [uuid_param(tenant_id)])
        unlimited = not unlocked or unlocked[0][0] is None
    if unlimited:  # no lock, no counting
        return
    tenant = locked_tenant(tenant_id)
    if tenant.token_quota is None:
        return
    state = quota_state(tenant)
    if state.used >= state.quota:
        metrics.quota_refused("admission")
        raise QuotaExceeded("The tenant's token quota for this period is spent.",
                            detail=state.detail())
    active = Run.objects.filter(session__tenant_id=tenant_id,
                                status__in=BUSY_RUN_STATUSES).count()
    if state.used + (active + 1) * run_reservation() > state.quota:
        metrics.quota_refused("admission")
        raise QuotaExceeded(_no_room(state.quota - state.used, active, run_reservation()),
                            detail=state.detail())


def _no_room(left: int, active: int, reservation: int) -> str:
    """Why a run cannot start though the quota is not spent, in the figures that decide it: a
    quota smaller than one reservation is refused with nothing used, and "nearly spent" then
    sent the reader looking for a spend that was not there."""
    needs = f"a run reserves {reservation} tokens of the quota to start"
    if active == 0:
        return (f"The tenant's token quota for this period has {left} tokens left, and {needs}: "
                "no run can start until the period resets or the quota is raised.")
    runs = "run reserves" if active == 1 else "runs reserve"
    return (f"The tenant's token quota for this period has {left} tokens left, its {active} "
            f"active {runs} {active * reservation} of them, and {needs}: try again when "
            f"{'it finishes' if active == 1 else 'they finish'}.")
