"""Routes under /v1 owned by the agents app."""

from django.urls import path

from agents.apis import AgentDetailApi, AgentListApi

urlpatterns = [
    path("agents", AgentListApi.as_view(), name="agents"),
    path("agents/<str:agent_id>", AgentDetailApi.as_view(), name="agent"),
]
