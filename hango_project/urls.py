from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from agents.apis import AgentDetailApi, AgentListApi
from hango_project.views import healthz
from runs.apis import (
    RunCancelApi,
    RunDetailApi,
    RunEventsApi,
    RunResumeApi,
    SessionDetailApi,
    SessionListApi,
    SessionMessagesApi,
    SessionRunsApi,
)

v1 = [
    path("agents", AgentListApi.as_view(), name="agents"),
    path("agents/<str:agent_id>", AgentDetailApi.as_view(), name="agent"),
    path("sessions", SessionListApi.as_view(), name="sessions"),
    path("sessions/<str:session_id>", SessionDetailApi.as_view(), name="session"),
    path("sessions/<str:session_id>/messages", SessionMessagesApi.as_view(), name="messages"),
    path("sessions/<str:session_id>/runs", SessionRunsApi.as_view(), name="session-runs"),
    path("runs/<str:run_id>", RunDetailApi.as_view(), name="run"),
    path("runs/<str:run_id>/cancel", RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<str:run_id>/resume", RunResumeApi.as_view(), name="run-resume"),
    path("runs/<str:run_id>/events", RunEventsApi.as_view(), name="run-events"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("v1/schema", SpectacularAPIView.as_view(), name="schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("v1/", include(v1)),
    path("admin/", admin.site.urls),
]

handler404 = "hango_project.views.not_found"
handler500 = "hango_project.views.server_error"
