"""``/v1/sessions``: thin views over the session services and selectors."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.selectors import agent_get
from hango_project.api import caller, paginated, validated
from hango_project.errors import NotFound, Unprocessable
from hango_project.pagination import SeqPage
from runs import selectors, services
from runs.serializers import MessageOutput, SessionInput, SessionOutput


class SessionListApi(APIView):
    @extend_schema(operation_id="sessions_list", responses=SessionOutput(many=True))
    def get(self, request):
        return paginated(self, selectors.session_list(member=caller(request)), SessionOutput)

    @extend_schema(
        operation_id="sessions_create", request=SessionInput, responses={201: SessionOutput}
    )
    def post(self, request):
        member = caller(request)
        data = validated(SessionInput, request)
        try:
            agent = agent_get(member=member, agent_id=data["agent"])
        except NotFound:
            raise Unprocessable("Agent not found.", detail={"agent": ["Agent not found."]}) from None
        session = services.session_create(member=member, agent=agent, title=data.get("title", ""))
        session = selectors.session_get(member=member, session_id=session.id)
        return Response(SessionOutput(session).data, status=status.HTTP_201_CREATED)


class SessionDetailApi(APIView):
    @extend_schema(operation_id="sessions_retrieve", responses=SessionOutput)
    def get(self, request, session_id):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        return Response(SessionOutput(session).data)


class SessionMessagesApi(APIView):
    @extend_schema(operation_id="sessions_messages_list", responses=MessageOutput(many=True))
    def get(self, request, session_id):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        return paginated(self, selectors.message_list(session=session), MessageOutput, SeqPage)
