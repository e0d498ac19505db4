"""``GET /v1/usage``: the caller's visible usage rows, filtered, with their totals."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import prices
from accounts.authentication import caller
from accounts.models import UsageRecord
from accounts.usage import PURPOSES, cost_totals, money, usage_list, usage_totals
from hango_api.pagination import CursorPage
from hango_api.query import query_time
from hango_project.errors import BadQuery


# Amounts and rates are decimal text, exact (a JSON number would be read as a float).
def _amount(help_text: str) -> serializers.CharField:
    return serializers.CharField(help_text=help_text)


class RecordedPriceOutput(serializers.Serializer):
    currency = serializers.CharField()
    # A declared field, which DRF's metaclass takes off the class: ``.source`` stays the
    # serializer's own.
    source = serializers.CharField(help_text="`tenant` (the tenant's own price) or the price "
                                   "table's package and version, e.g. `genai-prices 0.2.5`.")  # type: ignore[assignment]
    input = _amount("Per million input tokens.")
    cache_write = _amount("Per million tokens written to the prompt cache.")
    cache_read = _amount("Per million tokens read from the prompt cache.")
    output = _amount("Per million output tokens.")


class CallCostOutput(serializers.Serializer):
    currency = serializers.CharField()
    input = _amount("The input tokens' cost.")
    cache_write = _amount("The cache writes' cost.")
    cache_read = _amount("The cache reads' cost.")
    output = _amount("The output tokens' cost.")
    total = _amount("The four together.")


class CurrencyCostOutput(CallCostOutput):
    calls = serializers.IntegerField(help_text="The priced calls these amounts sum.")


class CostOutput(serializers.Serializer):
    by_currency = CurrencyCostOutput(many=True, help_text="One entry per currency (a tenant's "
                                     "price may name another than the table's USD): amounts "
                                     "in different currencies are never added.")
    unpriced_calls = serializers.IntegerField(help_text="Calls of a model with no known price: "
                                              "their cost is unknown, not zero.")


class UsageRowOutput(serializers.ModelSerializer):
    price = serializers.SerializerMethodField()
    cost = serializers.SerializerMethodField()
    unpriced_reason = serializers.SerializerMethodField()

    class Meta:
        model = UsageRecord
        fields = ["id", "purpose", "provider", "model", "input_tokens", "output_tokens",
                  "cache_read_tokens", "cache_write_tokens", "usage_source", "price", "cost",
                  "unpriced_reason", "run", "session", "agent", "created_at"]

    @extend_schema_field(RecordedPriceOutput(allow_null=True, help_text="The rates the call was "
                                     "recorded with (null: no price was known)."))
    def get_price(self, row: UsageRecord) -> dict[str, Any] | None:
        price = prices.record_price(row)
        if price is None:
            return None
        return {"currency": price.currency, "source": price.source,
                **{name: money(getattr(price, name)) for name in prices.RATES}}

    @extend_schema_field(CallCostOutput(allow_null=True, help_text="What the call cost at its "
                                        "price (null: no price was known)."))
    def get_cost(self, row: UsageRecord) -> dict[str, Any] | None:
        price = prices.record_price(row)
        if price is None:
            return None
        cost = price.cost(row)
        return {"currency": cost.currency,
                **{name: money(getattr(cost, name)) for name in (*prices.RATES, "total")}}

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_unpriced_reason(self, row: UsageRecord) -> str | None:
        """Why the call has no price (null when it has one)."""
        return row.unpriced_reason or None


# The four token counters, of a run or summed over usage rows. No docstring: drf-spectacular
# would publish it as the schema's description of both serializers.
class UsageOutput(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cache_read_tokens = serializers.IntegerField()
    cache_write_tokens = serializers.IntegerField()


class UsageTotalsOutput(UsageOutput):
    calls = serializers.IntegerField()
    cost = CostOutput()


class UsagePageOutput(serializers.Serializer):
    totals = UsageTotalsOutput()
    results = UsageRowOutput(many=True)
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)


def _uuid(params: Any, name: str) -> uuid.UUID | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise BadQuery(f"'{name}' must be an id.", detail={name: raw}) from None


def _purpose(params: Any) -> str | None:
    raw = params.get("purpose")
    if raw is None or raw == "":
        return None
    if raw not in PURPOSES:
        raise BadQuery(f"'purpose' must be one of {', '.join(PURPOSES)}.",
                       detail={"purpose": raw})
    return raw


# The filters every usage page takes; the usage route adds agent, session and run.
TIME_PARAMETERS = [
    OpenApiParameter("since", datetime, description="Rows created at or after this time (ISO "
                     "8601; a date means its UTC midnight)."),
    OpenApiParameter("until", datetime, description="Rows created before this time (as "
                     "`since`)."),
    OpenApiParameter("purpose", str, enum=list(PURPOSES), description="Only rows of this "
                     "purpose."),
    OpenApiParameter("cursor", str, description="The pagination cursor."),
    OpenApiParameter("limit", {"type": "integer", "minimum": 1},
                     description="Rows per page (capped)."),
]


# What else a usage page's rows may be narrowed to.
ROW_PARAMETERS = [
    OpenApiParameter("agent", uuid.UUID, description="Only this agent's rows."),
    OpenApiParameter("session", uuid.UUID, description="Only this session's rows (a session "
                     "the caller cannot see matches no rows)."),
    OpenApiParameter("run", uuid.UUID, description="Only this run's rows: a trigger message's "
                     "answer names its run."),
]


def usage_page(view: APIView, request: Any, *, runs: QuerySet[Any] | None = None,
               runs_since: datetime | None = None) -> Response:
    """The usage rows the caller may see that the query's filters keep (and, given ``runs``, of
    those runs only), newest first, with the totals of every row they keep (not just this
    page)."""
    params = request.query_params
    since, until = query_time(params, "since"), query_time(params, "until")
    if since is not None and until is not None and since > until:
        raise BadQuery("'since' is after 'until'.",
                       detail={"since": params["since"], "until": params["until"]})
    rows = usage_list(member=caller(request), since=since, until=until,
                      agent=_uuid(params, "agent"), session=_uuid(params, "session"),
                      purpose=_purpose(params), run=_uuid(params, "run"), runs=runs,
                      runs_since=runs_since)
    paginator = CursorPage()
    page = paginator.paginate_queryset(rows, request, view=view)
    response = paginator.get_paginated_response(UsageRowOutput(page, many=True).data)
    totals = usage_totals(rows) | {"cost": cost_totals(rows)}
    response.data = {"totals": totals, **response.data}
    return response


class UsageApi(APIView):
    @extend_schema(
        operation_id="usage_list",
        parameters=[*TIME_PARAMETERS, *ROW_PARAMETERS],
        responses=UsagePageOutput,
    )
    def get(self, request):
        """One row per model call the caller may see (their own sessions'; the whole tenant's
        for owners and admins), newest first, with the totals of every row the filters match
        (not just this page)."""
        return usage_page(self, request)
