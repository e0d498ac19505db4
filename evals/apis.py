"""``/v1/eval-suites`` (with their cases) and ``/v1/eval-runs``: thin views over the evals
app's services, execution and selectors."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from accounts.models import Member
from agents.selectors import agent_get
from evals import comparison, execution, selectors, services, tasks
from evals.serializers import (
    EvalCaseInput,
    EvalCaseOutput,
    EvalRunInput,
    EvalRunOutput,
    EvalSuiteInput,
    EvalSuiteOutput,
    FromSessionInput,
)
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated, validated
from hango_project.errors import NotFound, Unprocessable
from inspector.tries import try_overrides
from runs.intake.selectors import session_get

NAME_TAKEN = OpenApiResponse(description="The name is taken in the suite or the tenant.")


class NamePage(CursorPage):
    ordering = ("name",)


class EvalSuiteListApi(ListApi):
    pagination_class = NamePage

    @extend_schema(operation_id="eval_suites_list", responses=EvalSuiteOutput(many=True))
    def get(self, request):
        return paginated(self, selectors.suite_list(member=caller(request)), EvalSuiteOutput)

    @extend_schema(operation_id="eval_suites_create", request=EvalSuiteInput,
                   responses={201: EvalSuiteOutput, 409: NAME_TAKEN})
    def post(self, request):
        data = validated(EvalSuiteInput, request)
        suite = services.suite_create(member=caller(request), data=data)
        return Response(EvalSuiteOutput(suite).data, status=status.HTTP_201_CREATED)


class EvalSuiteDetailApi(APIView):
    @extend_schema(operation_id="eval_suites_retrieve", responses=EvalSuiteOutput)
    def get(self, request, suite_id):
        suite = selectors.suite_get(member=caller(request), suite_id=suite_id)
        return Response(EvalSuiteOutput(suite).data)

    @extend_schema(operation_id="eval_suites_update", request=EvalSuiteInput,
                   responses={200: EvalSuiteOutput, 409: NAME_TAKEN})
    def patch(self, request, suite_id):
        member = caller(request)
        suite = selectors.suite_get(member=member, suite_id=suite_id)
        data = validated(EvalSuiteInput, request, partial=True)
        suite = services.suite_update(suite=suite, data=data, actor=member)
        return Response(EvalSuiteOutput(suite).data)

    @extend_schema(operation_id="eval_suites_destroy", responses={204: None})
    def delete(self, request, suite_id):
        """Delete the suite, its cases and its eval runs (their sessions stay)."""
        member = caller(request)
        suite = selectors.suite_get(member=member, suite_id=suite_id)
        services.suite_delete(suite=suite, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CasePage(CursorPage):
    ordering = ("created_at", "id")


class EvalCaseListApi(ListApi):
    pagination_class = CasePage

    @extend_schema(operation_id="eval_suites_cases_list", responses=EvalCaseOutput(many=True))
    def get(self, request, suite_id):
        suite = selectors.suite_get(member=caller(request), suite_id=suite_id)
        return paginated(self, selectors.case_list(suite=suite), EvalCaseOutput)

    @extend_schema(operation_id="eval_suites_cases_create", request=EvalCaseInput,
                   responses={201: EvalCaseOutput, 409: NAME_TAKEN})
    def post(self, request, suite_id):
        member = caller(request)
        suite = selectors.suite_get(member=member, suite_id=suite_id)
        data = validated(EvalCaseInput, request)
        case = services.case_create(suite=suite, data=data, actor=member)
        return Response(EvalCaseOutput(case).data, status=status.HTTP_201_CREATED)


class EvalCaseFromSessionApi(APIView):
    @extend_schema(operation_id="eval_suites_cases_from_session", request=FromSessionInput,
                   responses={201: EvalCaseOutput, 409: NAME_TAKEN})
    def post(self, request, suite_id):
        """A case replaying one of your sessions ("this conversation should keep working"):
        its user messages become the turns, its final answer a suggested grader."""
        member = caller(request)
        suite = selectors.suite_get(member=member, suite_id=suite_id)
        data = validated(FromSessionInput, request)
        session = _referenced(lambda: session_get(member=member, session_id=data["session"]),
                              "session", "Session not found.")
        fields = services.case_from_session(session=session, name=data.get("name"),
                                            expect=data.get("expect", "contains"))
        case = services.case_create(suite=suite, data=fields, actor=member)
        return Response(EvalCaseOutput(case).data, status=status.HTTP_201_CREATED)


class EvalCaseDetailApi(APIView):
    @extend_schema(operation_id="eval_suites_cases_retrieve", responses=EvalCaseOutput)
    def get(self, request, suite_id, case_id):
        suite = selectors.suite_get(member=caller(request), suite_id=suite_id)
        return Response(EvalCaseOutput(selectors.case_get(suite=suite, case_id=case_id)).data)

    @extend_schema(operation_id="eval_suites_cases_update", request=EvalCaseInput,
                   responses={200: EvalCaseOutput, 409: NAME_TAKEN})
    def patch(self, request, suite_id, case_id):
        member = caller(request)
        suite = selectors.suite_get(member=member, suite_id=suite_id)
        case = selectors.case_get(suite=suite, case_id=case_id)
        data = validated(EvalCaseInput, request, partial=True)
        return Response(EvalCaseOutput(
            services.case_update(case=case, data=data, actor=member)).data)

    @extend_schema(operation_id="eval_suites_cases_destroy", responses={204: None})
    def delete(self, request, suite_id, case_id):
        member = caller(request)
        suite = selectors.suite_get(member=member, suite_id=suite_id)
        services.case_delete(case=selectors.case_get(suite=suite, case_id=case_id),
                             actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _referenced(get: Any, field: str, reason: str) -> Any:
    """An object a body names: one the caller cannot see is a 422 on that field."""
    try:
        return get()
    except NotFound:
        raise Unprocessable(reason, detail={field: [reason]}) from None


FILTERS = [OpenApiParameter("suite", str, description="Only this suite's eval runs."),
           OpenApiParameter("agent", str, description="Only this agent's eval runs.")]


class EvalRunListApi(ListApi):
    @extend_schema(operation_id="eval_runs_list", parameters=FILTERS,
                   responses=EvalRunOutput(many=True))
    def get(self, request):
        """Eval runs, newest first, each with its summary (not its cases' results)."""
        runs = selectors.eval_run_list(member=caller(request),
                                       suite=request.query_params.get("suite"),
                                       agent=request.query_params.get("agent"))
        return paginated(self, runs, EvalRunOutput)

    @extend_schema(operation_id="eval_runs_create", request=EvalRunInput,
                   responses={201: EvalRunOutput, 402: OpenApiResponse(
                       description="The tenant's token quota is spent.")})
    def post(self, request):
        """Start an eval run: one ordinary run per case (through the workers, concurrently),
        each in a session of its own marked as an eval's, graded when it ends."""
        member = caller(request)
        data = validated(EvalRunInput, request)
        eval_run = execution.eval_run_start(member=member, **_run_args(member, data))
        tasks.start_cases(eval_run)
        return Response(_run_output(eval_run), status=status.HTTP_201_CREATED)


def _run_args(member: Member, data: dict[str, Any]) -> dict[str, Any]:
    suite = _referenced(lambda: selectors.suite_get(member=member, suite_id=data["suite"]),
                        "suite", "Eval suite not found.")
    agent = _referenced(lambda: agent_get(member=member, agent_id=data["agent"]),
                        "agent", "Agent not found.")
    given = data.get("overrides") or {}
    overrides = try_overrides(exclude=given.get("exclude", []), replace=given.get("replace", {}))
    return {"suite": suite, "agent": agent, "version": data.get("version"),
            "overrides": [{"part": o.part, "action": o.action, "replacement": o.replacement}
                          for o in overrides]}


def _run_output(eval_run: Any) -> dict[str, Any]:
    return EvalRunOutput(eval_run, context={"with_results": True}).data


class EvalRunDetailApi(APIView):
    @extend_schema(operation_id="eval_runs_retrieve", responses=EvalRunOutput)
    def get(self, request, eval_run_id):
        """The eval run with each case's result; reading it also moves on any case whose run
        ended unnoticed (a worker lost between a run's end and its grading)."""
        eval_run = selectors.eval_run_get(member=caller(request), eval_run_id=eval_run_id)
        return Response(_run_output(execution.eval_run_refresh(eval_run)))


class EvalRunCancelApi(APIView):
    @extend_schema(operation_id="eval_runs_cancel", request=None,
                   responses={200: EvalRunOutput, 409: OpenApiResponse(
                       description="The eval run has already ended.")})
    def post(self, request, eval_run_id):
        """Cancel the eval run: its cases still running are cancelled with their runs."""
        member = caller(request)
        eval_run = selectors.eval_run_get(member=member, eval_run_id=eval_run_id)
        return Response(_run_output(execution.eval_run_cancel(eval_run=eval_run, actor=member)))


class EvalRunCompareApi(APIView):
    @extend_schema(operation_id="eval_runs_compare", responses={200: OpenApiResponse(
        description="Regressed and fixed cases, and the pass rate, token, cost and latency "
                    "deltas of the second eval run against the first (the baseline).")})
    def get(self, request, eval_run_id, other_id):
        compared = comparison.eval_runs_compare(member=caller(request), base_id=eval_run_id,
                                                head_id=other_id)
        return Response(compared.to_json())
