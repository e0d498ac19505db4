"""``/v1/schedules``: thin views over the schedule services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from accounts.models import Member
from accounts.usage_apis import ROW_PARAMETERS, TIME_PARAMETERS, UsagePageOutput, usage_page
from agents.selectors import agent_get
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated, validated
from hango_project.errors import NotFound, Unprocessable
from inspector.apis import snapshot_response
from inspector.serializers import SnapshotOutput
from runs.intake.selectors import session_get
from schedules import services
from schedules.serializers import (
    FireOutput,
    ScheduleDetailOutput,
    ScheduleInput,
    ScheduleOutput,
)
from webhooks.services import endpoint_get


def _resolved(member: Member, data: dict[str, Any]) -> dict[str, Any]:
    """The input's ids made the objects the member may see (422 naming the field otherwise)."""
    lookups = {"agent": lambda pk: agent_get(member=member, agent_id=pk),
               "session": lambda pk: session_get(member=member, session_id=pk),
               "webhook": lambda pk: endpoint_get(member=member, endpoint_id=pk)}
    out = dict(data)
    for field, get in lookups.items():
        if out.get(field) is None:
            continue
        try:
            out[field] = get(out[field])
        except NotFound:
            reason = f"{field.capitalize()} not found."
            raise Unprocessable(reason, detail={field: [reason]}) from None
    return out


class ScheduleListApi(ListApi):
    @extend_schema(operation_id="schedules_list", responses=ScheduleOutput(many=True))
    def get(self, request):
        """The schedules the caller may see, newest first."""
        return paginated(self, services.schedule_list(member=caller(request)), ScheduleOutput)

    @extend_schema(operation_id="schedules_create", request=ScheduleInput,
                   responses={201: ScheduleOutput})
    def post(self, request):
        member = caller(request)
        data = _resolved(member, validated(ScheduleInput, request))
        schedule = services.schedule_create(member=member, data=data)
        return Response(ScheduleOutput(schedule).data, status=status.HTTP_201_CREATED)


class ScheduleDetailApi(APIView):
    @extend_schema(operation_id="schedules_retrieve", responses=ScheduleDetailOutput)
    def get(self, request, schedule_id):
        """The schedule, with the tokens all its runs have spent."""
        schedule = services.schedule_get(member=caller(request), schedule_id=schedule_id)
        return Response({**ScheduleOutput(schedule).data,
                         "usage": services.schedule_usage(schedule)})

    @extend_schema(operation_id="schedules_update", request=ScheduleInput,
                   responses=ScheduleOutput)
    def patch(self, request, schedule_id):
        """Change it; `active: false` pauses it, `active: true` resumes it from now on (the
        fire times that passed meanwhile are not fired)."""
        member = caller(request)
        schedule = services.schedule_get(member=member, schedule_id=schedule_id)
        data = _resolved(member, validated(ScheduleInput, request, partial=True))
        schedule = services.schedule_update(schedule=schedule, data=data, actor=member)
        return Response(ScheduleOutput(schedule).data)

    @extend_schema(operation_id="schedules_destroy", responses={204: None})
    def delete(self, request, schedule_id):
        """Delete it and its fires (the sessions and runs it started stay)."""
        member = caller(request)
        schedule = services.schedule_get(member=member, schedule_id=schedule_id)
        services.schedule_delete(schedule=schedule, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ScheduleRunApi(APIView):
    @extend_schema(operation_id="schedules_run", request=None, responses={202: FireOutput})
    def post(self, request, schedule_id):
        """Fire it now, outside its cron expression; 409 while it is paused."""
        member = caller(request)
        schedule = services.schedule_get(member=member, schedule_id=schedule_id)
        fired = services.schedule_run_now(schedule=schedule, actor=member)
        return Response(FireOutput(fired).data, status=status.HTTP_202_ACCEPTED)


class ScheduleContextApi(APIView):
    @extend_schema(operation_id="schedules_context", responses={200: SnapshotOutput},
                   description="What the schedule's next fire would send to the model first, "
                               "part by part with token counts: the context inspector's "
                               "snapshot of its session (or of a new session of its agent, as "
                               "each fire makes) with its message posted. 409 while its "
                               "session has a run active (the fire's message would wait behind "
                               "it). Nothing is written and no model is called.")
    def get(self, request, schedule_id):
        schedule = services.schedule_get(member=caller(request), schedule_id=schedule_id)
        return snapshot_response(services.next_session(schedule), message=schedule.content)


class FirePage(CursorPage):
    ordering = ("-fired_at", "-id")


class FireListApi(ListApi):
    pagination_class = FirePage

    @extend_schema(operation_id="schedules_fires_list", responses=FireOutput(many=True))
    def get(self, request, schedule_id):
        """Its fires, newest first: when, started or refused (why), its run and outcome."""
        schedule = services.schedule_get(member=caller(request), schedule_id=schedule_id)
        return paginated(self, services.fire_list(schedule=schedule), FireOutput)


class ScheduleUsageApi(APIView):
    @extend_schema(operation_id="schedules_usage", parameters=[*TIME_PARAMETERS, *ROW_PARAMETERS],
                   responses=UsagePageOutput)
    def get(self, request, schedule_id):
        """The usage rows of the schedule's runs (one per model call, as `GET /v1/usage`
        answers them), newest first, with their totals."""
        schedule = services.schedule_get(member=caller(request), schedule_id=schedule_id)
        return usage_page(self, request, runs=services.schedule_runs(schedule),
                          runs_since=schedule.created_at)
