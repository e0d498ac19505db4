"""``/v1/agents/{id}/versions``: an agent's versions, newest first, one of them, and a diff
between two. Read-only: a version is made by changing the agent (``PATCH /v1/agents/{id}``),
and going back to one is a PATCH with its content, which makes a new version."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from agents import selectors
from agents.serializers import AgentVersionOutput
from agents.version_diff import version_diff
from agents.version_serializers import VersionDiffOutput
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated


def _number(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, int, OpenApiParameter.PATH, description=description)


NUMBER = _number("number", "The version's number (1, 2, …).")


class NewestFirst(CursorPage):
    ordering = ("-number",)


class VersionListApi(ListApi):
    pagination_class = NewestFirst

    @extend_schema(operation_id="agents_versions_list", responses=AgentVersionOutput(many=True))
    def get(self, request, agent_id):
        """The agent's versions, newest first: one per change of its system prompt, model,
        allowed tools or config."""
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        return paginated(self, selectors.version_list(agent=agent), AgentVersionOutput)


class VersionDetailApi(APIView):
    @extend_schema(operation_id="agents_versions_retrieve", parameters=[NUMBER],
                   responses=AgentVersionOutput)
    def get(self, request, agent_id, number):
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        return Response(AgentVersionOutput(selectors.version_get(agent=agent,
                                                                 number=number)).data)


class VersionDiffApi(APIView):
    @extend_schema(operation_id="agents_versions_diff",
                   parameters=[_number("number", "The version compared from."),
                               _number("other", "The version compared to.")],
                   responses=VersionDiffOutput)
    def get(self, request, agent_id, number, other):
        """What changed from version ``number`` to version ``other``, field by field."""
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        old = selectors.version_get(agent=agent, number=number)
        new = selectors.version_get(agent=agent, number=other)
        return Response(VersionDiffOutput(version_diff(old, new)).data)
