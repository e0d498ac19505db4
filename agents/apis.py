"""``/v1/agents`` (with each agent's memory) and ``/v1/skills``: thin views over the agents
app's services and selectors."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from agents import selectors, services
from agents.serializers import (
    AgentInput,
    AgentOutput,
    MemoryContentInput,
    MemoryFileInput,
    MemoryFileOutput,
    SkillInput,
    SkillOutput,
)
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated, validated
from hango_project.errors import Unprocessable
from harness.middleware.memory import path_problem


class AgentListApi(ListApi):
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
        member = caller(request)
        agent = selectors.agent_get(member=member, agent_id=agent_id)
        data = validated(AgentInput, request, partial=True)
        agent = services.agent_update(agent=agent, data=data, actor=member)
        return Response(AgentOutput(agent).data)

    @extend_schema(operation_id="agents_destroy", responses={204: None})
    def delete(self, request, agent_id):
        member = caller(request)
        agent = selectors.agent_get(member=member, agent_id=agent_id)
        services.agent_delete(agent=agent, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- memory: /v1/agents/{id}/memory -------------------------------------------------------------
# A file's path travels in the URL without its leading slash: "/memories/AGENTS.md" is
# /v1/agents/{id}/memory/memories/AGENTS.md (percent-encode what a URL cannot carry). A path sent
# with its slash (…/memory//memories/AGENTS.md) names the same file.

MEMORY_PATH = OpenApiParameter(
    "path", str, OpenApiParameter.PATH,
    description='The file\'s path without its leading "/", e.g. `memories/AGENTS.md` for '
                '"/memories/AGENTS.md"; percent-encode characters a URL cannot carry.')


class PathPage(CursorPage):
    ordering = ("path",)


def memory_path(raw: str) -> str:
    return raw if raw.startswith("/") else "/" + raw


class MemoryListApi(ListApi):
    pagination_class = PathPage

    @extend_schema(operation_id="agents_memory_list", responses=MemoryFileOutput(many=True))
    def get(self, request, agent_id):
        """The agent's memory files, by path. Whoever may see the agent may see its memory."""
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        return paginated(self, selectors.memory_file_list(agent=agent), MemoryFileOutput)

    @extend_schema(
        operation_id="agents_memory_create", request=MemoryFileInput,
        responses={201: MemoryFileOutput, 409: OpenApiResponse(
            description="The path is taken, or the agent has its maximum of memory files.")})
    def post(self, request, agent_id):
        """Create a memory file; the agent reads it from its next run on."""
        member = caller(request)
        agent = selectors.agent_get(member=member, agent_id=agent_id)
        data = validated(MemoryFileInput, request)
        memory_file = services.memory_file_create(agent=agent, **data, actor=member)
        return Response(MemoryFileOutput(memory_file).data, status=status.HTTP_201_CREATED)


class MemoryDetailApi(APIView):
    @extend_schema(operation_id="agents_memory_retrieve", parameters=[MEMORY_PATH],
                   responses=MemoryFileOutput)
    def get(self, request, agent_id, path):
        agent = selectors.agent_get(member=caller(request), agent_id=agent_id)
        memory_file = selectors.memory_file_get(agent=agent, path=memory_path(path))
        return Response(MemoryFileOutput(memory_file).data)

    @extend_schema(
        operation_id="agents_memory_update", parameters=[MEMORY_PATH],
        request=MemoryContentInput,
        responses={200: MemoryFileOutput, 201: MemoryFileOutput, 409: OpenApiResponse(
            description="A new file would pass the agent's maximum of memory files.")})
    def put(self, request, agent_id, path):
        """Create the file (201) or replace its content (200)."""
        member = caller(request)
        agent = selectors.agent_get(member=member, agent_id=agent_id)
        path = memory_path(path)
        problem = path_problem(path)
        if problem:
            raise Unprocessable(detail={"path": [problem]})
        data = validated(MemoryContentInput, request)
        memory_file, created = services.memory_file_put(agent=agent, path=path,
                                                        content=data["content"], actor=member)
        return Response(MemoryFileOutput(memory_file).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(operation_id="agents_memory_destroy", parameters=[MEMORY_PATH],
                   responses={204: None})
    def delete(self, request, agent_id, path):
        member = caller(request)
        agent = selectors.agent_get(member=member, agent_id=agent_id)
        memory_file = selectors.memory_file_get(agent=agent, path=memory_path(path))
        services.memory_file_delete(memory_file=memory_file, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- skills: /v1/skills -------------------------------------------------------------------------
# Tenant-wide: every member reads them and may create one; the skill's owner and the tenant's
# owners and admins may change or delete it (anyone else: 403, since they can see it).

SKILL_NOT_EDITABLE = OpenApiResponse(
    description="Only the skill's owner or an owner or admin of the tenant may change it.")
NAME_TAKEN = OpenApiResponse(description="A skill with this name exists in the tenant.")


class NamePage(CursorPage):
    ordering = ("name",)


class SkillListApi(ListApi):
    pagination_class = NamePage

    @extend_schema(operation_id="skills_list", responses=SkillOutput(many=True))
    def get(self, request):
        """The tenant's skills, by name."""
        return paginated(self, selectors.skill_list(member=caller(request)), SkillOutput)

    @extend_schema(operation_id="skills_create", request=SkillInput,
                   responses={201: SkillOutput, 409: NAME_TAKEN})
    def post(self, request):
        data = validated(SkillInput, request)
        skill = services.skill_create(member=caller(request), data=data)
        return Response(SkillOutput(skill).data, status=status.HTTP_201_CREATED)


class SkillDetailApi(APIView):
    @extend_schema(operation_id="skills_retrieve", responses=SkillOutput)
    def get(self, request, skill_id):
        skill = selectors.skill_get(member=caller(request), skill_id=skill_id)
        return Response(SkillOutput(skill).data)

    @extend_schema(operation_id="skills_update", request=SkillInput,
                   responses={200: SkillOutput, 403: SKILL_NOT_EDITABLE, 409: NAME_TAKEN})
    def patch(self, request, skill_id):
        member = caller(request)
        skill = selectors.skill_get(member=member, skill_id=skill_id, to_change=True)
        data = validated(SkillInput, request, partial=True)
        skill = services.skill_update(skill=skill, data=data, actor=member)
        return Response(SkillOutput(skill).data)

    @extend_schema(operation_id="skills_destroy",
                   responses={204: None, 403: SKILL_NOT_EDITABLE})
    def delete(self, request, skill_id):
        """Delete the skill and detach it from every agent of the tenant."""
        member = caller(request)
        skill = selectors.skill_get(member=member, skill_id=skill_id, to_change=True)
        services.skill_delete(skill=skill, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)
