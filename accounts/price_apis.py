"""``/v1/prices``: the tenant's negotiated prices per model. Every member reads them; owners and
admins set (``PUT``) and remove (``DELETE``) one (members: 403)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import tenant_prices
from accounts.authentication import caller
from accounts.models import TenantPrice
from accounts.usage import money
from hango_api import fields
from hango_api.inputs import Input
from hango_api.views import ListApi, paginated, validated
from harness.providers.registry import PROVIDERS


def _rate(help_text: str) -> fields.DecimalField:
    # As the column stores it: decimal text, up to 9 decimal places, never negative.
    return fields.DecimalField(max_digits=20, decimal_places=9, min_value=Decimal(0),
                               help_text=help_text)


class TenantPriceInput(Input):
    # drf-spectacular's decimal pattern takes "", "." and "-1": a rate is 0 or more.
    schema_extra = {"properties": {name: {"pattern": r"^(?:\d{1,11}(?:\.\d{0,9})?|\.\d{1,9})$"}
                                   for name in ("input", "cache_write", "cache_read", "output")}}

    currency = fields.RegexField(r"^[A-Z]{3}\Z", default="USD",
                                      help_text="ISO 4217 code, e.g. USD (the default), EUR.")
    input = _rate("Per million input tokens (not read from or written to the cache).")
    cache_write = _rate("Per million tokens written to the prompt cache.")
    cache_read = _rate("Per million tokens read from the prompt cache.")
    output = _rate("Per million output tokens.")


class RateOutput(serializers.DecimalField):
    """A rate as plain decimal text, as usage rows show theirs: ``"0.3"``, not
    ``"0.300000000"``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_digits=20, decimal_places=9, read_only=True, **kwargs)

    def to_representation(self, value: Decimal) -> str:
        return money(value)


class TenantPriceOutput(serializers.ModelSerializer):
    model = serializers.SerializerMethodField()
    input = RateOutput()
    cache_write = RateOutput()
    cache_read = RateOutput()
    output = RateOutput()

    class Meta:
        model = TenantPrice
        fields = ["model", "currency", "input", "cache_write", "cache_read", "output",
                  "created_at", "updated_at"]
        read_only_fields = fields

    def get_model(self, price: TenantPrice) -> str:
        """``<provider>:<model>``, as agents name it."""
        return f"{price.provider}:{price.model}"


MODEL = OpenApiParameter(
    "model", {"type": "string", "pattern": rf"^(?:{'|'.join(PROVIDERS)}):."},
    OpenApiParameter.PATH,
    description="`<provider>:<model>` exactly as a usage row names it, e.g. "
                "`anthropic:claude-sonnet-4-5` or `scripted:demo`.")
NOT_WRITABLE = OpenApiResponse(description="Only owners and admins set or remove prices.")


class PriceListApi(ListApi):
    @extend_schema(operation_id="prices_list", responses=TenantPriceOutput(many=True))
    def get(self, request):
        """The tenant's own prices, newest first. A model without one is priced from the
        genai-prices table (its usage rows name the package version)."""
        return paginated(self, tenant_prices.price_list(member=caller(request)), TenantPriceOutput)


class PriceDetailApi(APIView):
    @extend_schema(operation_id="prices_retrieve", parameters=[MODEL], responses=TenantPriceOutput)
    def get(self, request, model):
        price = tenant_prices.price_get(member=caller(request), model=model)
        return Response(TenantPriceOutput(price).data)

    @extend_schema(operation_id="prices_update", parameters=[MODEL], request=TenantPriceInput,
                   responses={200: TenantPriceOutput, 201: TenantPriceOutput, 403: NOT_WRITABLE})
    def put(self, request, model):
        """Set the tenant's price for the model (201 when new): calls recorded from now on are
        costed with it; rows recorded before keep their price."""
        member = caller(request)
        data = validated(TenantPriceInput, request)
        tenant_prices.check_writer(member)
        currency = data.pop("currency")
        price, created = tenant_prices.price_set(tenant_id=member.tenant_id, model=model,
                                                 currency=currency, rates=data, actor=member)
        return Response(TenantPriceOutput(price).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(operation_id="prices_destroy", parameters=[MODEL],
                   responses={204: None, 403: NOT_WRITABLE})
    def delete(self, request, model):
        """Remove the tenant's price: the table prices the model's next calls again."""
        member = caller(request)
        tenant_prices.check_writer(member)
        tenant_prices.price_delete(price=tenant_prices.price_get(member=member, model=model),
                                   actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)
