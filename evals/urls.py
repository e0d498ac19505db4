"""Routes under /v1 owned by the evals app."""

from django.urls import path

from evals.apis import (
    EvalCaseDetailApi,
    EvalCaseFromSessionApi,
    EvalCaseListApi,
    EvalRunCancelApi,
    EvalRunCompareApi,
    EvalRunDetailApi,
    EvalRunListApi,
    EvalSuiteDetailApi,
    EvalSuiteListApi,
)

urlpatterns = [
    path("eval-suites", EvalSuiteListApi.as_view(), name="eval-suites"),
    path("eval-suites/<str:suite_id>", EvalSuiteDetailApi.as_view(), name="eval-suite"),
    path("eval-suites/<str:suite_id>/cases", EvalCaseListApi.as_view(), name="eval-cases"),
    path("eval-suites/<str:suite_id>/cases/from-session", EvalCaseFromSessionApi.as_view(),
         name="eval-cases-from-session"),
    path("eval-suites/<str:suite_id>/cases/<str:case_id>", EvalCaseDetailApi.as_view(),
         name="eval-case"),
    path("eval-runs", EvalRunListApi.as_view(), name="eval-runs"),
    path("eval-runs/<str:eval_run_id>", EvalRunDetailApi.as_view(), name="eval-run"),
    path("eval-runs/<str:eval_run_id>/cancel", EvalRunCancelApi.as_view(),
         name="eval-run-cancel"),
    path("eval-runs/<str:eval_run_id>/compare/<str:other_id>", EvalRunCompareApi.as_view(),
         name="eval-runs-compare"),
]
