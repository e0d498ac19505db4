"""``/v1/webhooks``: thin views over the webhook services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from accounts.models import Member
from hango_api.views import ListApi, paginated, validated
from hango_project.errors import NotFound, Unprocessable
from webhooks import services
from webhooks.serializers import (
    DeliveryOutput,
    EndpointInput,
    EndpointOutput,
    EndpointWithSecretOutput,
)


def _with_agent(member: Member, data: dict[str, Any]) -> dict[str, Any]:
    """The input with its agent id made the agent the member may see (422 otherwise)."""
    if data.get("agent") is None:
        return data
    try:
        return {**data, "agent": services.agent_of(member, data["agent"])}
    except NotFound:
        reason = "Agent not found."
        raise Unprocessable(reason, detail={"agent": [reason]}) from None


class EndpointListApi(ListApi):
    @extend_schema(operation_id="webhooks_list", responses=EndpointOutput(many=True))
    def get(self, request):
        """The webhook endpoints the caller may see, newest first."""
        return paginated(self, services.endpoint_list(member=caller(request)), EndpointOutput)

    @extend_schema(operation_id="webhooks_create", request=EndpointInput,
                   responses={201: EndpointWithSecretOutput})
    def post(self, request):
        """A new endpoint; its signing secret is in this answer only."""
        member = caller(request)
        data = _with_agent(member, validated(EndpointInput, request))
        endpoint, secret = services.endpoint_create(member=member, data=data)
        body = EndpointWithSecretOutput(endpoint, context={"secret": secret}).data
        return Response(body, status=status.HTTP_201_CREATED)


class EndpointDetailApi(APIView):
    @extend_schema(operation_id="webhooks_retrieve", responses=EndpointOutput)
    def get(self, request, webhook_id):
        endpoint = services.endpoint_get(member=caller(request), endpoint_id=webhook_id)
        return Response(EndpointOutput(endpoint).data)

    @extend_schema(operation_id="webhooks_update", request=EndpointInput,
                   responses=EndpointOutput)
    def patch(self, request, webhook_id):
        member = caller(request)
        endpoint = services.endpoint_get(member=member, endpoint_id=webhook_id)
        data = _with_agent(member, validated(EndpointInput, request, partial=True))
        endpoint = services.endpoint_update(endpoint=endpoint, data=data, actor=member)
        return Response(EndpointOutput(endpoint).data)

    @extend_schema(operation_id="webhooks_destroy", responses={204: None})
    def delete(self, request, webhook_id):
        """Delete the endpoint and its delivery log."""
        member = caller(request)
        endpoint = services.endpoint_get(member=member, endpoint_id=webhook_id)
        services.endpoint_delete(endpoint=endpoint, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRotateApi(APIView):
    @extend_schema(operation_id="webhooks_rotate", request=None,
                   responses=EndpointWithSecretOutput)
    def post(self, request, webhook_id):
        """A new signing secret (in this answer only); the previous one signs too for
        ``HANGO_WEBHOOK_SECRET_OVERLAP_SECONDS``."""
        member = caller(request)
        endpoint = services.endpoint_get(member=member, endpoint_id=webhook_id)
        endpoint, secret = services.endpoint_rotate(endpoint=endpoint, actor=member)
        return Response(EndpointWithSecretOutput(endpoint, context={"secret": secret}).data)


class EndpointPingApi(APIView):
    @extend_schema(operation_id="webhooks_ping", request=None, responses={202: DeliveryOutput})
    def post(self, request, webhook_id):
        """Send a ``webhook.ping`` now; its outcome is in the endpoint's delivery log."""
        member = caller(request)
        endpoint = services.endpoint_get(member=member, endpoint_id=webhook_id)
        delivery = services.ping(endpoint=endpoint, actor=member)
        return Response(DeliveryOutput(delivery).data, status=status.HTTP_202_ACCEPTED)


class DeliveryListApi(ListApi):
    @extend_schema(operation_id="webhooks_deliveries_list",
                   responses=DeliveryOutput(many=True))
    def get(self, request, webhook_id):
        """The endpoint's deliveries, newest first: status, attempts, the last answer."""
        endpoint = services.endpoint_get(member=caller(request), endpoint_id=webhook_id)
        return paginated(self, services.delivery_list(endpoint=endpoint), DeliveryOutput)


class DeliveryDetailApi(APIView):
    @extend_schema(operation_id="webhooks_deliveries_retrieve", responses=DeliveryOutput)
    def get(self, request, webhook_id, delivery_id):
        member = caller(request)
        endpoint = services.endpoint_get(member=member, endpoint_id=webhook_id)
        delivery = services.delivery_get(member=member, endpoint=endpoint,
                                         delivery_id=delivery_id)
        return Response(DeliveryOutput(delivery).data)
