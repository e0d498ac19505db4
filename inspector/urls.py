"""Routes under /v1 owned by the context inspector."""

from django.urls import path

from inspector.apis import ContextApi, ContextTryApi
from inspector.override_apis import AgentOverridesApi, BothOverridesApi, SessionOverridesApi

urlpatterns = [
    path("sessions/<str:session_id>/context", ContextApi.as_view(), name="session-context"),
    path("sessions/<str:session_id>/context/try", ContextTryApi.as_view(),
         name="session-context-try"),
    path("agents/<str:agent_id>/context-overrides", AgentOverridesApi.as_view(),
         name="agent-context-overrides"),
    path("sessions/<str:session_id>/context-overrides", SessionOverridesApi.as_view(),
         name="session-context-overrides"),
    path("sessions/<str:session_id>/context-overrides/both", BothOverridesApi.as_view(),
         name="session-context-overrides-both"),
]
