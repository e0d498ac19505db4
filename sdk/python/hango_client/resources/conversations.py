"""Agents, their sessions, messages and runs: what a conversation is made of."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from hango_client._endpoint import (
    OMIT,
    C,
    Omit,
    Ref,
    Resource,
    endpoint,
    events,
    items,
)
from hango_client.types import (
    Agent,
    AgentVersion,
    Decision,
    Message,
    Page,
    PostedMessage,
    Run,
    Session,
    ToolResult,
)

JSON = dict[str, Any]
# Module-level names: inside a resource class, ``list`` is its list route.
Names = list[str]
Blocks = list[Mapping[str, Any]]
Multitask = Literal["reject", "enqueue", "interrupt"]


def _wait_timeout(values: Mapping[str, Any]) -> float | None:
    """A waiting GET's read timeout: the wait, and time for the answer after it."""
    wait = values.get("wait")
    return float(wait) + 30 if isinstance(wait, int | float) else None


class Agents(Resource[C]):
    @endpoint("GET", "/v1/agents", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[Agent]: ...
    iter = items(list)

    @endpoint("POST", "/v1/agents")
    def create(self, *, name: str, model: str, system_prompt: str | Omit = OMIT,
               description: str | Omit = OMIT, allowed_tools: Names | None | Omit = OMIT,
               config: Mapping[str, Any] | Omit = OMIT) -> Agent:
        """A new agent; ``config``: its middleware options, ``interrupt_on``, ``client_tools``…"""

    @endpoint("GET", "/v1/agents/{agent_id}")
    def get(self, agent_id: Ref, /) -> Agent: ...

    @endpoint("PATCH", "/v1/agents/{agent_id}")
    def update(self, agent_id: Ref, /, *, name: str | Omit = OMIT, model: str | Omit = OMIT,
               system_prompt: str | Omit = OMIT, description: str | Omit = OMIT,
               allowed_tools: Names | None | Omit = OMIT,
               config: Mapping[str, Any] | Omit = OMIT) -> Agent: ...

    @endpoint("DELETE", "/v1/agents/{agent_id}")
    def delete(self, agent_id: Ref, /) -> None: ...

    @endpoint("GET", "/v1/agents/{agent_id}/versions", query=("limit",))
    def versions(self, agent_id: Ref, /, *, limit: int | None = None) -> Page[AgentVersion]:
        """The agent's versions, newest first; going back to one is :meth:`update` with its
        content (a new version)."""
    iter_versions = items(versions)

    @endpoint("GET", "/v1/agents/{agent_id}/versions/{number}")
    def version(self, agent_id: Ref, number: int, /) -> AgentVersion: ...

    @endpoint("GET", "/v1/agents/{agent_id}/versions/{number}/diff/{other}")
    def diff(self, agent_id: Ref, number: int, other: int, /) -> JSON:
        """What changed from version ``number`` to ``other``, field by field."""

    @endpoint("GET", "/v1/agents/{agent_id}/memory", query=("limit",))
    def memory(self, agent_id: Ref, /, *, limit: int | None = None) -> Page[JSON]: ...

    @endpoint("POST", "/v1/agents/{agent_id}/memory")
    def memory_create(self, agent_id: Ref, /, *, path: str, content: str) -> JSON: ...

    @endpoint("GET", "/v1/agents/{agent_id}/memory/{path}")
    def memory_get(self, agent_id: Ref, path: str, /) -> JSON: ...

    @endpoint("PUT", "/v1/agents/{agent_id}/memory/{path}")
    def memory_put(self, agent_id: Ref, path: str, /, *, content: str) -> JSON: ...

    @endpoint("DELETE", "/v1/agents/{agent_id}/memory/{path}")
    def memory_delete(self, agent_id: Ref, path: str, /) -> None: ...


class Sessions(Resource[C]):
    @endpoint("GET", "/v1/sessions", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[Session]: ...
    iter = items(list)

    @endpoint("POST", "/v1/sessions")
    def create(self, *, agent: Ref, title: str | Omit = OMIT,
               agent_version: int | None | Omit = OMIT) -> Session:
        """A session; ``agent_version`` pins its runs to that version of the agent."""

    @endpoint("GET", "/v1/sessions/{session_id}")
    def get(self, session_id: Ref, /) -> Session: ...

    @endpoint("PATCH", "/v1/sessions/{session_id}")
    def update(self, session_id: Ref, /, *, title: str | Omit = OMIT,
               agent_version: int | None | Omit = OMIT) -> Session:
        """Retitle the session, or pin it to a version of its agent (None: the latest)."""

    @endpoint("POST", "/v1/sessions/{session_id}/messages")
    def send(self, session_id: Ref, content: str | Blocks, /, *,
             multitask: Multitask | Omit = OMIT) -> PostedMessage:
        """Post a user message: the answer holds it and the run it started (``queued``), or
        queued (``pending``) behind an active run with ``multitask="enqueue"``."""

    @endpoint("GET", "/v1/sessions/{session_id}/messages", query=("limit",))
    def messages(self, session_id: Ref, /, *, limit: int | None = None) -> Page[Message]: ...
    iter_messages = items(messages)

    @endpoint("GET", "/v1/sessions/{session_id}/runs", query=("limit",))
    def runs(self, session_id: Ref, /, *, limit: int | None = None) -> Page[Run]: ...

    @endpoint("GET", "/v1/sessions/{session_id}/files", query=("limit",))
    def files(self, session_id: Ref, /, *, limit: int | None = None) -> Page[JSON]: ...

    @endpoint("GET", "/v1/sessions/{session_id}/files/{path}")
    def file(self, session_id: Ref, path: str, /) -> JSON: ...


class Runs(Resource[C]):
    @endpoint("GET", "/v1/runs/{run_id}", query=("wait",), timeout=_wait_timeout)
    def get(self, run_id: Ref, /, *, wait: int | None = None) -> Run:
        """The run; with ``wait`` (0–60 s), once it has ended or parks for its caller
        (``awaiting_approval``, ``requires_action``), or as it is when the wait is up."""

    @endpoint("POST", "/v1/runs/{run_id}/cancel")
    def cancel(self, run_id: Ref, /) -> Run: ...

    @endpoint("POST", "/v1/runs/{run_id}/resume")
    def resume(self, run_id: Ref, /) -> Run: ...

    @endpoint("POST", "/v1/runs/{run_id}/approve")
    def approve(self, run_id: Ref, /, *, decisions: list[Decision]) -> Run: ...

    @endpoint("POST", "/v1/runs/{run_id}/tool-results")
    def submit_tool_results(self, run_id: Ref, /, *, results: list[ToolResult]) -> Run:
        """Answer the client tools' calls a ``requires_action`` run waits on (some or all)."""

    @endpoint("GET", "/v1/runs/{run_id}/events", query=("after",))
    def events_page(self, run_id: Ref, /, *, after: int = 0) -> JSON:
        """Up to 500 stored events after seq ``after``: ``{"results", "next_after"}``."""

    @events("/v1/runs/{run_id}/events", query=("after",))
    def events(self, run_id: Ref, /, *, after: int = 0) -> None:
        """The run's events after seq ``after`` as they happen (live ``message.delta`` too),
        until it has finished; a broken stream is reopened with ``Last-Event-ID``."""
