"""What the session's next model call would cost, from the inspector's own count of it: a
range, since the prompt cache decides part of the price.

* **none cached**: the cache misses, so the marked prefix (``cache_prefix_tokens``, the tools
  and system parts up to the breakpoint) is written to it at the cache-write rate and the
  rest is plain input;
* **all cached**: the whole prefix is read from the cache at its read rate, the rest is input;
* **likely**: as much of the prefix read as the session's calls so far read of their input
  (its usage rows: cache reads over all input), the rest of the prefix written; within the
  range. With no calls yet it is the none-cached figure.

Input only: the answer's output tokens are unknown until it is written (``output_rate`` per
million prices them). The price is the tenant's for the agent's model, else the table's
(:mod:`accounts.prices`); an unpriced model has no range (null).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import Sum
from django.db.models.functions import Coalesce
from rest_framework import serializers

from accounts import prices
from accounts.models import UsageRecord
from accounts.usage import CLOCK_SKEW, money
from harness.inspect import Snapshot
from harness.messages import Usage
from harness.providers.registry import split_model
from runs.models import Session

LIKELY_PLACES = Decimal("1e-9")


def read_share(session: Session) -> Decimal | None:
    """The share of the session's input its calls read from the prompt cache (None: no calls
    yet). Read on the (tenant, created_at) index from the session's creation on."""
    if session.created_at is None:  # a session not yet made: a schedule's preview
        return None
    sums = UsageRecord.objects.filter(
        tenant_id=session.tenant_id, session_id=session.pk,
        created_at__gte=session.created_at - CLOCK_SKEW,
    ).aggregate(read=Coalesce(Sum("cache_read_tokens"), 0),
                whole=Coalesce(Sum("input_tokens"), 0) + Coalesce(Sum("cache_read_tokens"), 0)
                + Coalesce(Sum("cache_write_tokens"), 0))
    if not sums["whole"]:
        return None
    return Decimal(sums["read"]) / Decimal(sums["whole"])


def _prefix(snapshot: Snapshot) -> int:
    """The tokens of the marked prefix: the snapshot's count of it, or where the model's cache
    minimum is not known (and so that count), its parts' (0: nothing marked)."""
    if snapshot.cache_breakpoint is None:
        return 0
    if snapshot.cache_prefix_tokens is not None:
        return snapshot.cache_prefix_tokens
    return sum(part.tokens for part in (*snapshot.system, *snapshot.tools)
               if part.cached_prefix and part.included)


def next_call_cost(session: Session, snapshot: Snapshot) -> dict[str, Any] | None:
    """The range of what the snapshot's request would cost (see the module), or None for a
    model with no known price."""
    provider, model = split_model(session.agent.model)
    whole = snapshot.total_after
    price = prices.price_for(session.tenant_id, provider, model, whole_input=whole)
    if not isinstance(price, prices.Price):
        return None
    prefix = min(whole, _prefix(snapshot))
    rest = whole - prefix
    none_cached = price.cost(Usage(input_tokens=rest, cache_write_tokens=prefix)).total
    all_cached = price.cost(Usage(input_tokens=rest, cache_read_tokens=prefix)).total
    share = read_share(session)
    # The prefix's share read: the session's reads of its input, all landing in the prefix.
    hits = Decimal(0) if share is None or not prefix else min(Decimal(1), share * whole / prefix)
    # An estimate: to a billionth of the currency, where the share's division stops being exact.
    likely = (none_cached - hits * (none_cached - all_cached)).quantize(LIKELY_PLACES)
    return {"currency": price.currency, "source": price.source, "input_tokens": whole,
            "cached_prefix_tokens": prefix, "none_cached": money(none_cached),
            "all_cached": money(all_cached), "likely": money(likely),
            "read_share": None if share is None else float(round(share, 4)),
            "output_rate": money(price.output)}


class NextCallCostOutput(serializers.Serializer):
    currency = serializers.CharField()
    # A declared field, taken off the class by DRF's metaclass: ``.source`` stays the field's.
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="`tenant` or the price table's package version.")
    input_tokens = serializers.IntegerField(help_text="The request's input: `totals.after`.")
    cached_prefix_tokens = serializers.IntegerField(
        help_text="Of it, the marked prefix the prompt cache may hold (0: nothing marked).")
    none_cached = serializers.CharField(help_text="The input's cost if the cache misses (the "
                                        "prefix written to it), decimal text.")
    all_cached = serializers.CharField(help_text="The input's cost if the whole prefix is read "
                                       "from the cache.")
    likely = serializers.CharField(help_text="The input's cost at the session's observed "
                                   "cache reads (`read_share`), within the range.")
    read_share = serializers.FloatField(allow_null=True, help_text="The share of the "
                                        "session's input its calls read from the cache so far; "
                                        "null before its first call.")
    output_rate = serializers.CharField(help_text="Per million output tokens: the answer's "
                                        "part of the cost, unknown until it is written.")
