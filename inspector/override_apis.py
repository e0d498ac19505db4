"""The context overrides' routes: an agent's set, a session's set, and both read and replaced
together. Thin views over the inspector's services and selectors.

Whoever may read a session's messages may see its overrides; whoever may change an agent may
change its overrides. Another tenant's or another member's object answers 404.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import ListSerializer
from rest_framework.views import APIView

from accounts.authentication import caller
from agents.models import Agent
from agents.selectors import agent_get
from hango_api.views import validated
from harness.context import Override
from inspector import selectors, services
from inspector.override_serializers import (
    MAX_OVERRIDES,
    BothOverridesInput,
    BothOverridesOutput,
    OverrideInput,
    OverridesOutput,
)
from runs.intake.selectors import session_get
from runs.models import Session


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


def _both(agent: services.Saved, session: services.Saved) -> Response:
    return Response(BothOverridesOutput({
        "agent": {"overrides": agent.overrides, "added": agent.added},
        "session": {"overrides": session.overrides, "added": session.added}}).data)


class BothOverridesApi(APIView):
    """The session's overrides and its agent's, read and replaced together: the Context panel's
    Save, one change that either happens whole or not at all."""

    @extend_schema(operation_id="sessions_context_overrides_both_list",
                   responses=BothOverridesOutput,
                   description="The agent's overrides and the session's, as their own GETs "
                               "answer them: every override that applies to the session.")
    def get(self, request, session_id):
        member = caller(request)
        session = session_get(member=member, session_id=session_id)
        agent = agent_get(member=member, agent_id=session.agent_id)
        return _both(services.Saved(overrides=selectors.overrides_list(target=agent), added=[]),
                     services.Saved(overrides=selectors.overrides_list(target=session),
                                    added=[]))

    @extend_schema(operation_id="sessions_context_overrides_both_replace",
                   request=BothOverridesInput, responses=BothOverridesOutput,
                   description="Replace the agent's overrides and the session's in one "
                               "transaction: each set is checked as its own PUT checks it "
                               "(`PUT /v1/agents/{id}/context-overrides`, `PUT "
                               "/v1/sessions/{id}/context-overrides`: the same 422s, the "
                               "session's pairs added and listed in its `added`), and either "
                               "both are saved, each with its `context.override` audit row, or "
                               "neither is. An empty list clears a set; a set left out is "
                               "left as it is.")
    def put(self, request, session_id):
        member = caller(request)
        session = session_get(member=member, session_id=session_id)
        data = validated(BothOverridesInput, request)
        if "agent" in data:
            agent_get(member=member, agent_id=session.agent_id)  # 404 unless theirs to change

        def given(name: str) -> list[Override] | None:
            return [Override(**item) for item in data[name]] if name in data else None

        return _both(*services.overrides_replace_both(
            session=session, agent_overrides=given("agent"), session_overrides=given("session"),
            actor=member))
