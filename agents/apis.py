"""``/v1/agents``: thin views over the agent services and selectors."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from agents import selectors, services
from agents.serializers import AgentInput, AgentOutput
from hango_project.api import caller, paginated, validated


class AgentListApi(APIView):
    @extend_schema(operation_id="agents_list", responses=AgentOutput(many=True))
    def get(self, request):
        return paginated(self, selectors.agent_list(member=caller(request)), AgentOutput)

    @extend_schema(operation_id="agents_create", request=AgentInput, responses={201: AgentOutput})
    def post(self, request):
        data = validated(AgentInput, request)
        agent = services.agent_create(member=caller(request), data=data)
        return Response(AgentOutput(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailApi(APIView):
    @extend_schema(operation_id="agents_retrieve", responses=AgentOutput)
    def get(self, request, agent_id):
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        return Response(AgentOutput(agent).data)

    @extend_schema(operation_id="agents_update", request=AgentInput, responses=AgentOutput)
    def patch(self, request, agent_id):
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        data = validated(AgentInput, request, partial=True)
        agent = services.agent_update(agent=agent, data=data)
        return Response(AgentOutput(agent).data)

    @extend_schema(operation_id="agents_destroy", responses={204: None})
    def delete(self, request, agent_id):
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        services.agent_delete(agent=agent)
        return Response(status=status.HTTP_204_NO_CONTENT)
