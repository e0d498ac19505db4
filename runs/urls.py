"""Routes under /v1 owned by the runs app."""

from django.urls import path

from runs.api.file_views import SessionFileDetailApi, SessionFilesApi
from runs.api.tool_result_views import RunToolResultsApi
from runs.api.views import (
    RunApproveApi,
    RunCancelApi,
    RunDetailApi,
    RunEventsApi,
    RunResumeApi,
    SessionDetailApi,
    SessionListApi,
    SessionMessagesApi,
    SessionRunsApi,
)

urlpatterns = [
    path("sessions", SessionListApi.as_view(), name="sessions"),
    path("sessions/<str:session_id>", SessionDetailApi.as_view(), name="session"),
    path("sessions/<str:session_id>/messages", SessionMessagesApi.as_view(), name="messages"),
    path("sessions/<str:session_id>/runs", SessionRunsApi.as_view(), name="session-runs"),
    path("sessions/<str:session_id>/files", SessionFilesApi.as_view(), name="session-files"),
    path("sessions/<str:session_id>/files/<path:path>", SessionFileDetailApi.as_view(),
         name="session-file"),
    path("runs/<str:run_id>", RunDetailApi.as_view(), name="run"),
    path("runs/<str:run_id>/cancel", RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<str:run_id>/resume", RunResumeApi.as_view(), name="run-resume"),
    path("runs/<str:run_id>/approve", RunApproveApi.as_view(), name="run-approve"),
    path("runs/<str:run_id>/tool-results", RunToolResultsApi.as_view(), name="run-tool-results"),
    path("runs/<str:run_id>/events", RunEventsApi.as_view(), name="run-events"),
]
