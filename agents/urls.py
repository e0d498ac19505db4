"""Routes under /v1 owned by the agents app."""

from django.urls import path

from agents.apis import (
    AgentDetailApi,
    AgentListApi,
    MemoryDetailApi,
    MemoryListApi,
    SkillDetailApi,
    SkillListApi,
)
from agents.version_apis import VersionDetailApi, VersionDiffApi, VersionListApi

urlpatterns = [
    path("agents", AgentListApi.as_view(), name="agents"),
    path("agents/<str:agent_id>", AgentDetailApi.as_view(), name="agent"),
    path("agents/<str:agent_id>/memory", MemoryListApi.as_view(), name="agent-memory"),
    # The file's path follows without its leading "/" (see agents.apis).
    path("agents/<str:agent_id>/memory/<path:path>", MemoryDetailApi.as_view(),
         name="agent-memory-file"),
    path("agents/<str:agent_id>/versions", VersionListApi.as_view(), name="agent-versions"),
    path("agents/<str:agent_id>/versions/<str:number>", VersionDetailApi.as_view(),
         name="agent-version"),
    path("agents/<str:agent_id>/versions/<str:number>/diff/<str:other>",
         VersionDiffApi.as_view(), name="agent-version-diff"),
    path("skills", SkillListApi.as_view(), name="skills"),
    path("skills/<str:skill_id>", SkillDetailApi.as_view(), name="skill"),
]
