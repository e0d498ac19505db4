"""``POST /v1/runs/{id}/tool-results``: the caller answers the client tool calls its run is
parked on (:mod:`runs.intake.client_results`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from hango_api.views import validated
from harness.client_calls import ClientResult
from runs.api.answer_inputs import ToolResultsInput
from runs.api.serializers import RunOutput
from runs.intake import client_results, selectors


class RunToolResultsApi(APIView):
    @extend_schema(operation_id="runs_tool_results", request=ToolResultsInput, responses={
        200: RunOutput, 409: OpenApiResponse(description=(
            "The run is not parked, or a result names a call that is not one of its client "
            "tool calls still waiting (unknown, not a client tool's, already answered); "
            "`detail` names them and nothing is recorded."))})
    def post(self, request, run_id):
        """Send the results of the client tool calls a run is parked on (its
        `required_action`), some or all: the run stays `requires_action` until every one is
        answered, then it is queued and goes on."""
        member = caller(request)
        run = selectors.run_get(member=member, run_id=run_id)
        data = validated(ToolResultsInput, request)
        results = [ClientResult(tool_use_id=r["tool_use_id"], content=r["output"][0],
                                images=r["output"][1], is_error=r["is_error"])
                   for r in data["results"]]
        run = client_results.run_submit_tool_results(run=run, results=results, actor=member)
        run.refresh_from_db()
        return Response(RunOutput(run).data)
