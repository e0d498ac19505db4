"""The context inspector's routes: thin views over its services and selectors.

Authorization follows the routes it mirrors: whoever may read a session's messages may see its
context and its overrides; whoever may change an agent may change its overrides. Another
tenant's or another member's object answers 404.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import ListSerializer
from rest_framework.views import APIView

from agents.models import Agent
from agents.selectors import agent_get
from context import selectors, services
from context.serializers import MAX_OVERRIDES, OverrideInput, OverridesOutput
from hango_project.api import caller
from harness.context import Override
from runs.models import Session
from runs.selectors import session_get


def _saved(overrides: list[Override], added: list[str]) -> Response:
    return Response(OverridesOutput({"overrides": overrides, "added": added}).data)


def _put(request: Request, target: Agent | Session) -> Response:
    body: ListSerializer[Any] = ListSerializer(child=OverrideInput(), data=request.data,
                                               max_length=MAX_OVERRIDES)
    body.is_valid(raise_exception=True)
    overrides = [Override(**item) for item in body.validated_data]
    saved = services.overrides_replace(target=target, overrides=overrides,
                                       actor=caller(request))
    return _saved(saved.overrides, saved.added)


class AgentOverridesApi(APIView):
    @extend_schema(operation_id="agents_context_overrides_list",
                   responses=OverridesOutput)
    def get(self, request, agent_id):
        agent = agent_get(member=caller(request), agent_id=agent_id)
        return _saved(selectors.overrides_list(target=agent), [])

    @extend_schema(operation_id="agents_context_overrides_replace",
                   request=OverrideInput(many=True), responses=OverridesOutput,
                   description="Replace the agent's overrides of `system:*` and `tool:*` parts "
                               "(every session of the agent). An empty list clears them. A "
                               "tool part can only be excluded.")
    def put(self, request, agent_id):
        return _put(request, agent_get(member=caller(request), agent_id=agent_id))


class SessionOverridesApi(APIView):
    @extend_schema(operation_id="sessions_context_overrides_list",
                   responses=OverridesOutput)
    def get(self, request, session_id):
        session = session_get(member=caller(request), session_id=session_id)
        return _saved(selectors.overrides_list(target=session), [])

    @extend_schema(operation_id="sessions_context_overrides_replace",
                   request=OverrideInput(many=True), responses=OverridesOutput,
                   description="Replace the session's overrides of `message:*` and `summary` "
                               "parts. Excluding a message with a batch's calls excludes the "
                               "one with their results (and the other way round): `added` "
                               "lists those. 422 when no user message would be left or the "
                               "history would start with an assistant message.")
    def put(self, request, session_id):
        return _put(request, session_get(member=caller(request), session_id=session_id))
