"""``/v1/sessions`` and ``/v1/runs``: thin views over the run services and selectors."""

from __future__ import annotations

import logging
import math
from typing import Any

from django.db import InterfaceError, OperationalError
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from agents.selectors import agent_get
from hango_api.pagination import SeqPage
from hango_api.views import ListApi, paginated, validated
from hango_project.errors import BadQuery, NotFound, Unprocessable
from runs.api.answer_inputs import ApproveInput
from runs.api.serializers import (
    MessageInput,
    MessageOutput,
    PostedMessageOutput,
    PostMessageOutput,
    RunEventPage,
    RunOutput,
    SessionInput,
    SessionOutput,
    SessionUpdateInput,
    as_created,
)
from runs.api.streaming import EventStreamRenderer, event_stream_response
from runs.intake import decisions, selectors, services
from runs.live.waiting import MAX_WAIT_SECONDS, run_settled
from runs.models import MOVING_RUN_STATUSES, Message, Run

log = logging.getLogger(__name__)


class SessionListApi(ListApi):
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
            reason = "Agent not found."
            raise Unprocessable(reason, detail={"agent": [reason]}) from None
        session = services.session_create(member=member, agent=agent, title=data.get("title", ""),
                                          agent_version=data.get("agent_version"))
        try:
            session = selectors.session_get(member=member, session_id=session.id)
        except (InterfaceError, OperationalError):  # it is stored: answer it as created
            session.active_run_id = None  # type: ignore[attr-defined]  # annotated on reads
        return Response(SessionOutput(session).data, status=status.HTTP_201_CREATED)


class SessionDetailApi(APIView):
    @extend_schema(operation_id="sessions_retrieve", responses=SessionOutput)
    def get(self, request, session_id):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        return Response(SessionOutput(session).data)

    @extend_schema(operation_id="sessions_update", request=SessionUpdateInput,
                   responses=SessionOutput)
    def patch(self, request, session_id):
        """Retitle the session or pin its runs to a version of its agent (null: the latest)."""
        member = caller(request)
        session = selectors.session_get(member=member, session_id=session_id)
        data = validated(SessionUpdateInput, request, partial=True)
        session = services.session_update(session=session, data=data, actor=member)
        return Response(SessionOutput(session).data)


class SessionMessagesApi(ListApi):
    pagination_class = SeqPage

    @extend_schema(operation_id="sessions_messages_list", responses=MessageOutput(many=True))
    def get(self, request, session_id):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        return paginated(self, selectors.message_list(session=session), MessageOutput)

    @extend_schema(operation_id="sessions_messages_create", request=MessageInput,
                   responses={202: PostMessageOutput, 409: OpenApiResponse(
                       description="The session has an active run (`detail.active_run`) and "
                                   "`multitask` is `reject`.")})
    def post(self, request, session_id):
        """Append a user message and start a run for it. While a run is active, `multitask`
        decides: 409 (`reject`, the default), wait for it (`enqueue`), or cancel it and then
        run (`interrupt`)."""
        member = caller(request)
        session = selectors.session_to_post(member=member, session_id=session_id)
        data = validated(MessageInput, request)
        message, run = services.message_post(session=session, content=data["content"],
                                             multitask=data["multitask"], actor=member)
        return Response(_posted(message, run), status=status.HTTP_202_ACCEPTED)


def _posted(message: Message, run: Run) -> dict[str, Any]:
    """The answer to a post: its message and run as they are now (a worker may have moved the
    run on, a queued message joined the history). When the database cannot be read once the
    post has committed, as they were created instead of a 503: they are stored, and a 503 says
    "try again", which would post the message twice."""
    try:
        run = selectors.run_posted(run)
        if message.seq is None:  # it waited: it may have joined the history meanwhile
            message = selectors.message_posted(message)
        return {"message": PostedMessageOutput(message).data, "run": RunOutput(run).data}
    except (InterfaceError, OperationalError) as exc:
        log.warning("run %s answered as created: the database went away after its post "
                    "committed (%s)", run.pk, type(exc).__name__)
        return {"message": PostedMessageOutput(message).data,
                "run": RunOutput(run, context=as_created(run)).data}


class SessionRunsApi(ListApi):
    @extend_schema(operation_id="sessions_runs_list", responses=RunOutput(many=True))
    def get(self, request, session_id):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        return paginated(self, selectors.run_list(session=session), RunOutput)


class RunDetailApi(APIView):
    @extend_schema(operation_id="runs_retrieve", responses=RunOutput, parameters=[
        OpenApiParameter("wait", {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS},
                         description=(
            f"Seconds (0 to {MAX_WAIT_SECONDS}) to wait for the run to end or park: the answer "
            "comes as soon as it is no longer `pending`, `queued` or `running` (so "
            "`completed`, with its `output`, `failed`, `cancelled`, `awaiting_approval` or "
            "`requires_action`, with its `required_action`), "
            "else when the wait is up, with the run as it is then. Without it, at once."))])
    def get(self, request, run_id):
        member = caller(request)
        run = selectors.run_get(member=member, run_id=run_id)
        wait = _wait(request)
        if wait and run.status in MOVING_RUN_STATUSES:
            run_settled(run.pk, wait)
            run = selectors.run_get(member=member, run_id=run_id)
        return Response(RunOutput(run).data)


def _wait(request) -> float:
    raw = request.query_params.get("wait")
    if raw is None:
        return 0.0
    try:
        wait = float(raw)
    except ValueError:
        wait = math.nan
    if not 0 <= wait <= MAX_WAIT_SECONDS:  # a NaN or an infinity too
        raise BadQuery(f"'wait' must be a number of seconds from 0 to {MAX_WAIT_SECONDS}.",
                       detail={"wait": raw})
    return wait


class RunCancelApi(APIView):
    @extend_schema(operation_id="runs_cancel", request=None, responses={
        202: RunOutput, 409: OpenApiResponse(description="The run has already finished.")})
    def post(self, request, run_id):
        """Stop the run at its next turn boundary or tool call (409 when it already ended). A
        `pending` run (queued behind the session's active one) is skipped when its turn comes;
        its message still joins the history."""
        member = caller(request)
        run = services.run_cancel(run=selectors.run_get(member=member, run_id=run_id),
                                  actor=member)
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class RunResumeApi(APIView):
    @extend_schema(operation_id="runs_resume", request=None, responses={
        202: RunOutput, 409: OpenApiResponse(
            description="The run is not cancelled (nor failed by a crash), or its session has "
                        "another active run.")})
    def post(self, request, run_id):
        """Continue a cancelled (or crash-failed) run from its last checkpoint, todos included."""
        member = caller(request)
        run = services.run_resume(run=selectors.run_get(member=member, run_id=run_id),
                                  actor=member)
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class RunApproveApi(APIView):
    @extend_schema(operation_id="runs_approve", request=ApproveInput, responses={
        202: RunOutput, 409: OpenApiResponse(description="The run is not awaiting approval.")})
    def post(self, request, run_id):
        """Decide every pending tool call of a run awaiting approval (approve, edit, reject,
        respond); the run resumes its batch. 409 when it is not awaiting approval."""
        member = caller(request)
        run = selectors.run_get(member=member, run_id=run_id)
        data = validated(ApproveInput, request)
        run = decisions.run_approve(run=run, decisions=data["decisions"], actor=member)
        run.refresh_from_db()
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


# An event's seq is a bigint: a position past it names no event and cannot be asked for.
MAX_SEQ = 2**63 - 1


def _after(request) -> int:
    # A reconnecting EventSource repeats its URL (with any ?after=) and adds Last-Event-ID,
    # which is the newer position.
    raw = request.headers.get("Last-Event-ID") or request.query_params.get("after") or "0"
    try:
        after = int(raw)
    except ValueError:
        raise BadQuery("'after' must be a whole number.", detail={"after": raw}) from None
    if not 0 <= after <= MAX_SEQ:
        raise BadQuery(f"'after' must be from 0 to {MAX_SEQ}.", detail={"after": raw})
    return after


# One server-sent event, as OpenAPI describes a text/event-stream before 3.2's itemSchema: the
# schema of each event (its fields as strings), the data a JSON document of its own. Two kinds:
# a run event (durable, with its seq as id) and a live text delta (no id).
_EVENT_FRAME = {
    "type": "object",
    "title": "Run event frame",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The event's seq."},
        "event": {"type": "string", "description": "The event's type: run.status, "
                  "message.created, tool.result, todos.updated, approval.requested, "
                  "tool_results.requested, …"},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "contentSchema": {"$ref": "#/components/schemas/RunEventOutput"}},
    },
}
_DELTA_FRAME = {
    "type": "object",
    "title": "Live delta frame",
    "required": ["event", "data"],
    "properties": {
        "id": {"not": {}, "description": "None: a reconnect's Last-Event-ID stays the last run "
               "event's seq."},
        "event": {"const": "message.delta"},
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {
            "type": "object", "required": ["run", "turn", "index", "text"],
            "properties": {
                "run": {"type": "string", "format": "uuid"},
                "turn": {"type": "integer", "minimum": 1,
                         "description": "The turn whose model call writes the text."},
                "index": {"type": "integer", "minimum": 0,
                          "description": "The delta's place in its model call, from 0. A turn "
                          "executed again (its worker died) starts again at 0, as does a call "
                          "under way sent again to a stream that reconnected: replace what "
                          "you had of that turn."},
                "text": {"type": "string", "description": "The next piece of the text."}}}},
    },
}
EVENT_STREAM = OpenApiResponse(
    response={
        "oneOf": [_EVENT_FRAME, _DELTA_FRAME],
        "description": "A server-sent-event stream (`Accept: text/event-stream` or "
                       "`?format=sse`): one event per run event, `id: <seq>`, `event: <type>`, "
                       "`data: <the run event as JSON>`, each ended by a blank line; between "
                       "them, while a model writes, live `message.delta` events "
                       "`{run, turn, index, text}` with no `id:` (never stored, not replayed: "
                       "a turn's deltas join to the text of its assistant message, whose "
                       "`message.created` follows them with the whole content); `: keep-alive` "
                       "comment lines while nothing happens. It ends when the run has finished "
                       "and its last events are sent (or after HANGO_EVENT_STREAM_MAX_SECONDS); "
                       "a reconnecting client sends `Last-Event-ID` and receives the run events "
                       "after it, then live deltas again.",
    },
    description="Events after `after` as JSON (at most 500), or their live stream.")


class RunEventsApi(APIView):
    renderer_classes = [*APIView.renderer_classes, EventStreamRenderer]

    @extend_schema(
        operation_id="runs_events",
        parameters=[OpenApiParameter("after", {"type": "integer", "minimum": 0,
                                               "maximum": MAX_SEQ},
                                     description="Return events after this seq "
                                     "(0 or more; `Last-Event-ID` wins when both are sent).")],
        responses={(200, "application/json"): OpenApiResponse(
                       response=RunEventPage, description=EVENT_STREAM.description),
                   (200, "text/event-stream"): EVENT_STREAM},
    )
    def get(self, request, run_id):
        """Events after a cursor as JSON, or a live server-sent-event stream with
        ``Accept: text/event-stream`` (ends when the run finishes)."""
        run = selectors.run_get(member=caller(request), run_id=run_id)
        after = _after(request)
        if isinstance(request.accepted_renderer, EventStreamRenderer):
            return event_stream_response(run.pk, after)
        events = selectors.run_events_after(run_id=run.pk, after=after, limit=500)
        next_after = events[-1].seq if events else after
        return Response(RunEventPage({"results": events, "next_after": next_after}).data)
