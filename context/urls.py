"""Routes under /v1 owned by the context app (the context inspector)."""

from django.urls import path

from context.apis import AgentOverridesApi, SessionOverridesApi

urlpatterns = [
    path("agents/<str:agent_id>/context-overrides", AgentOverridesApi.as_view(),
         name="agent-context-overrides"),
    path("sessions/<str:session_id>/context-overrides", SessionOverridesApi.as_view(),
         name="session-context-overrides"),
]
