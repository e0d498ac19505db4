"""Usage and quotas: the usage selectors behind ``GET /v1/usage`` and the quota's holds.

**Accounting.** One ``usage_records`` row per model call, written as the call ends, whether or
not its turn ever lands (:mod:`runs.execution.call_ledger`), keyed ``<run>/<claim's
epoch>:<turn>:<call index>``: each call once, and a turn redone by the next claim a call of its own.
A tenant's
*spend* in a period is the sum of all four token columns of its rows created in that period;
periods are calendar UTC days or months.

**Admission.** Whether one more run may start spending is decided under the tenant's row lock
by :mod:`runs.intake.admission`, over this module's :func:`locked_tenant` and :func:`quota_state`.

**Holds (no overspend).** Admission gates a run's start; each model call is gated too. Before a
call is sent, its worst case — the request's input as the model family's tokenizer counts it,
plus its ``max_tokens`` — is *held* (:func:`quota_hold`), under the same tenant lock:

    held  ⇔  used + live holds + worst case  ≤  quota

A call that does not fit is not sent: the run fails with ``quota_exceeded`` (resumable once the
quota allows). The call's usage row is written in the transaction that releases its hold, so
spend moves from held to used at once. A hold whose worker
died is released by the run's next claim or end, and counts for :func:`hold_lifetime` at most.
The spend can pass the quota only by what a provider reports beyond the worst case: input the
tokenizer undercounted.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Count, DecimalField, F, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts import prices
from accounts.models import (
    Member,
    QuotaHold,
    QuotaPeriod,
    Tenant,
    TokenCounts,
    UsagePurpose,
    UsageRecord,
)
from accounts.scoping import visible_to
from hango_project import metrics
from hango_project.config import hango
from hango_project.errors import QuotaExceeded
from hango_project.ids import made_at

# How far the clock of the process that made an id may be ahead of a worker's that writes rows.
CLOCK_SKEW = timedelta(minutes=5)
TOKEN_FIELDS = tuple(field.name for field in TokenCounts._meta.local_fields)
PURPOSES = tuple(UsagePurpose.values)


# -- periods ----------------------------------------------------------------------------------

def period_bounds(period: str, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The calendar UTC period containing ``now``: (start, the next period's start)."""
    now = (now or timezone.now()).astimezone(UTC)
    if period == QuotaPeriod.DAY:
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        return start, start + timedelta(days=1)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start.replace(year=start.year + 1, month=1) if start.month == 12
           else start.replace(month=start.month + 1))
    return start, end


def tenant_spend(tenant_id: uuid.UUID, since: datetime) -> int:
    """Tokens (all four columns) the tenant spent since ``since``."""
    total = sum(F(name) for name in TOKEN_FIELDS)
    spent = UsageRecord.objects.filter(tenant_id=tenant_id, created_at__gte=since).aggregate(
        t=Coalesce(Sum(total), Value(0)))["t"]
    return int(spent)


def committed_spend(tenant_id: uuid.UUID, since: datetime) -> int:
    """The tenant's spend since ``since`` plus the worst cases of its model calls in flight
    (its live holds), read in one statement: one snapshot, so a call's record, which releases
    its hold and writes its usage row, is seen whole or not at all."""
    total = sum(F(name) for name in TOKEN_FIELDS)
    spent = (UsageRecord.objects.filter(tenant_id=OuterRef("pk"), created_at__gte=since)
             .values("tenant_id").annotate(t=Sum(total)).values("t"))
    held = (QuotaHold.objects.filter(tenant_id=OuterRef("pk"), expires_at__gt=timezone.now())
            .values("tenant_id").annotate(t=Sum("tokens")).values("t"))
    row = Tenant.objects.filter(pk=tenant_id).values_list(
        Coalesce(Subquery(spent), Value(0)), Coalesce(Subquery(held), Value(0))).get()
    return int(row[0]) + int(row[1])


# -- the quota's state -----------------------------------------------------------------------------

@dataclass(frozen=True)
class QuotaState:
    quota: int
    used: int
    period: str
    resets_at: datetime

    def detail(self) -> dict[str, Any]:
        return {"quota": self.quota, "used": self.used, "period": self.period,
                "resets_at": self.resets_at.isoformat().replace("+00:00", "Z")}


def locked_tenant(tenant_id: uuid.UUID) -> Tenant:
    """The tenant's quota settings, its row locked until the caller's transaction ends."""
    # NO KEY UPDATE: admissions and holds serialize on it, while turn commits (whose usage rows
    # take a KEY SHARE lock on the tenant through the foreign key) never wait for them.
    return Tenant.objects.select_for_update(no_key=True).only(
        "token_quota", "quota_period").get(pk=tenant_id)


def quota_state(tenant: Tenant) -> QuotaState:
    """The tenant's quota for the current period and what is spent and held of it."""
    assert tenant.token_quota is not None
    start, end = period_bounds(tenant.quota_period)
    return QuotaState(quota=tenant.token_quota, used=committed_spend(tenant.pk, start),
                      period=tenant.quota_period, resets_at=end)


def hold_lifetime() -> timedelta:
    """How long a hold counts at most: a call's every attempt, plus a lease for its commit."""
    knobs = hango()
    return timedelta(seconds=knobs.provider_timeout_seconds * (knobs.provider_max_retries + 1)
                     + knobs.run_lease_seconds)


def quota_hold(tenant_id: uuid.UUID, tokens: int, *, run_id: uuid.UUID | None = None) -> int:
    """Hold ``tokens`` of the tenant's quota for one model call about to be sent (its worst
    case), or raise :class:`QuotaExceeded` when the period's spend and the calls already in
    flight leave less. Returns the hold's id; the caller releases it in the transaction that
    records the call's usage. Holds of one tenant are taken under its row lock, one at a time,
    each seeing the ones before it: what is spent and held never passes the quota."""
    with transaction.atomic():
        tenant = locked_tenant(tenant_id)
        if tenant.token_quota is None:
            raise ValueError("a tenant without a quota holds nothing")
        state = quota_state(tenant)
        if state.used + tokens > state.quota:
            left = max(0, state.quota - state.used)
            metrics.quota_refused("model_call")
            raise QuotaExceeded(
                f"The tenant's token quota ({state.quota} tokens per {state.period}) cannot "
                f"cover the next model call: it may use up to {tokens} tokens and {left} are "
                "left (spent or held by calls in flight).", detail=state.detail())
        hold = QuotaHold.objects.create(tenant_id=tenant_id, run_id=run_id, tokens=tokens,
                                        expires_at=timezone.now() + hold_lifetime())
        return hold.pk


def quota_release(*, run_id: uuid.UUID | None = None, holds: Sequence[int] = ()) -> None:
    """Release a run's holds, or the given ones (in the caller's transaction)."""
    if run_id is not None:
        QuotaHold.objects.filter(run_id=run_id).delete()
    if holds:
        QuotaHold.objects.filter(pk__in=holds).delete()


# -- the usage route --------------------------------------------------------------------------

def usage_list(*, member: Member, since: datetime | None = None, until: datetime | None = None,
               agent: uuid.UUID | None = None, session: uuid.UUID | None = None,
               purpose: str | None = None, run: uuid.UUID | None = None,
               runs: QuerySet[Any] | None = None,
               runs_since: datetime | None = None) -> QuerySet[UsageRecord]:
    """The usage rows the member may see (their own sessions', or the tenant's for owners and
    admins), filtered. ``since`` is inclusive, ``until`` exclusive. An agent, session or run the
    member cannot see simply matches no rows. ``runs`` (a query of run ids) keeps the rows of
    those runs: how an app above this one (a schedule's fires) names the runs it started;
    ``runs_since``, when they can have begun at the earliest (what the index reads from)."""
    rows = visible_to(UsageRecord.objects.all(), member)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    if agent is not None:
        rows = rows.filter(agent_id=agent)
    if session is not None:
        rows = rows.filter(session_id=session)
    if purpose is not None:
        rows = rows.filter(purpose=purpose)
    if run is not None:
        rows = rows.filter(run_id=run)
        # A run's calls come after the run was made, which its id tells: the (tenant,
        # created_at) index then reads the rows since, not the tenant's every row.
        if (made := made_at(run)) is not None:
            rows = rows.filter(created_at__gte=made - CLOCK_SKEW)
    if runs is not None:
        rows = rows.filter(run_id__in=runs)
    if runs_since is not None:
        rows = rows.filter(created_at__gte=runs_since - CLOCK_SKEW)
    return rows


def usage_totals(rows: QuerySet[UsageRecord]) -> dict[str, int]:
    sums = rows.aggregate(
        calls=Count("id"),
        **{name: Coalesce(Sum(name), Value(0)) for name in TOKEN_FIELDS})
    return {**{name: int(sums[name]) for name in TOKEN_FIELDS}, "calls": int(sums["calls"])}


# -- cost -------------------------------------------------------------------------------------

def _amounts(row: dict[str, Any]) -> dict[str, Any]:
    """A group's sums of tokens times rates as amounts (decimal text): each rate is per million
    tokens, so each sum moves six places."""
    amounts = {name: row[name] / prices.PER for name in prices.RATES}
    return {"currency": row["price_currency"],
            **{name: money(amount) for name, amount in amounts.items()},
            "total": money(sum(amounts.values(), Decimal(0))), "calls": row["calls"]}


def money(amount: Decimal) -> str:
    """An exact amount as plain decimal text: no exponent, no trailing zeros."""
    return format(amount.normalize(), "f") if amount else "0"


def cost_groups(rows: QuerySet[UsageRecord], *by: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The cost of ``rows`` grouped by the fields ``by`` (none: one group, key ``()``), each
    group ``{"by_currency": [{currency, input, cache_write, cache_read, output, total, calls}],
    "unpriced_calls": n}``: amounts in different currencies are never added. One query."""
    sums = {name: Sum(F(f"{name}_tokens") * F(f"price_{name}"),
                      output_field=DecimalField(max_digits=40, decimal_places=15))
            for name in prices.RATES}
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in (rows.order_by().values(*by, "price_currency")
                .annotate(calls=Count("id"), priced=Count("price_input"), **sums)
                .order_by(*by, "price_currency")):
        group = groups.setdefault(tuple(row[name] for name in by),
                                  {"by_currency": [], "unpriced_calls": 0})
        group["unpriced_calls"] += row["calls"] - row["priced"]
        if row["priced"]:
            group["by_currency"].append(_amounts(row | {"calls": row["priced"]}))
    return groups


def cost_totals(rows: QuerySet[UsageRecord]) -> dict[str, Any]:
    """The cost of every row of ``rows``, per currency, and how many calls had no price."""
    return cost_groups(rows).get((), {"by_currency": [], "unpriced_calls": 0})


def cost_line(rows: QuerySet[UsageRecord]) -> str:
    """The cost of ``rows`` in one line for a page: a sum per currency, and how many calls had
    no price (their cost is unknown, not zero)."""
    cost = cost_totals(rows)
    amounts = " + ".join(f"{line['total']} {line['currency']}"
                         for line in cost["by_currency"]) or "nothing priced"
    unpriced = cost["unpriced_calls"]
    return amounts + (f" · {unpriced:,} calls unpriced" if unpriced else "")
