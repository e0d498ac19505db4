"""The context inspector (what a session's next model call sends, and changing it), what the
calls cost (usage, prices), and schedules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hango_client._endpoint import OMIT, C, Omit, Ref, Resource, endpoint, items
from hango_client.types import Override, Page

JSON = dict[str, Any]
Overrides = list[Override]  # module-level: inside a resource class, ``list`` is its route
Parts = list[str]
USAGE_FILTERS = ("since", "until", "agent", "session", "run", "purpose", "limit")


class Context(Resource[C]):
    @endpoint("GET", "/v1/sessions/{session_id}/context", query=("full", "counted", "against"))
    def inspect(self, session_id: Ref, /, *, full: str | None = None,
                counted: str | None = None, against: str | None = None) -> JSON:
        """The snapshot of the session's next model request, part by part with tokens;
        ``full``: one part's whole content; ``against="last"`` or ``"<run id>:<turn>"``: with
        the ``diff`` from that call."""

    @endpoint("GET", "/v1/sessions/{session_id}/context", query=("against", "counted"))
    def diff(self, session_id: Ref, /, *, against: str = "last",
             counted: str | None = None) -> JSON:
        """The snapshot with ``diff``: what changed since the last call (or a given one) and
        which change misses the prompt cache."""

    @endpoint("POST", "/v1/sessions/{session_id}/context")
    def preview(self, session_id: Ref, /, *, overrides: Overrides | Omit = OMIT,
                message: str | Omit = OMIT) -> JSON:
        """The snapshot with ``overrides`` in place of the stored ones, and ``message`` as if
        posted now; nothing is written."""

    @endpoint("POST", "/v1/sessions/{session_id}/context/try")
    def try_(self, session_id: Ref, /, *, exclude: Parts | Omit = OMIT,
             replace: Mapping[str, str] | Omit = OMIT, message: str | Omit = OMIT) -> JSON:
        """One real model call with parts left out or replaced: ``{"message", "stop_reason",
        "usage"}``; nothing is added to the session."""

    @endpoint("GET", "/v1/agents/{agent_id}/context-overrides")
    def agent_overrides(self, agent_id: Ref, /) -> JSON: ...

    @endpoint("PUT", "/v1/agents/{agent_id}/context-overrides", body="overrides")
    def set_agent_overrides(self, agent_id: Ref, /, *, overrides: Overrides) -> JSON: ...

    @endpoint("GET", "/v1/sessions/{session_id}/context-overrides")
    def session_overrides(self, session_id: Ref, /) -> JSON: ...

    @endpoint("PUT", "/v1/sessions/{session_id}/context-overrides", body="overrides")
    def set_session_overrides(self, session_id: Ref, /, *, overrides: Overrides) -> JSON: ...

    @endpoint("GET", "/v1/sessions/{session_id}/context-overrides/both")
    def both_overrides(self, session_id: Ref, /) -> JSON: ...

    @endpoint("PUT", "/v1/sessions/{session_id}/context-overrides/both")
    def set_both_overrides(self, session_id: Ref, /, *, agent: Overrides | Omit = OMIT,
                           session: Overrides | Omit = OMIT) -> JSON: ...


class Usage(Resource[C]):
    @endpoint("GET", "/v1/usage", query=USAGE_FILTERS)
    def list(self, *, since: str | None = None, until: str | None = None,
             agent: Ref | None = None, session: Ref | None = None, run: Ref | None = None,
             purpose: str | None = None, limit: int | None = None) -> Page[JSON]:
        """``{"totals", "results", "next", "previous"}``: one row per model call, its tokens and
        cost, and the totals of every row the filters select."""
    iter = items(list)


class Prices(Resource[C]):
    @endpoint("GET", "/v1/prices", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[JSON]: ...
    iter = items(list)

    @endpoint("GET", "/v1/prices/{model}")
    def get(self, model: str, /) -> JSON: ...

    @endpoint("PUT", "/v1/prices/{model}")
    def set(self, model: str, /, *, input: str, cache_write: str, cache_read: str, output: str,
            currency: str | Omit = OMIT) -> JSON:
        """The tenant's own price for ``model`` (``provider:model``), per million tokens, as
        decimal strings."""

    @endpoint("DELETE", "/v1/prices/{model}")
    def delete(self, model: str, /) -> None: ...


class Schedules(Resource[C]):
    @endpoint("GET", "/v1/schedules", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[JSON]: ...
    iter = items(list)

    @endpoint("POST", "/v1/schedules")
    def create(self, *, name: str, cron: str, content: str, agent: Ref | Omit = OMIT,
               session: Ref | Omit = OMIT, timezone: str | Omit = OMIT,
               multitask: str | Omit = OMIT, webhook: str | Omit = OMIT,
               pause_after_failures: int | Omit = OMIT, active: bool | Omit = OMIT) -> JSON: ...

    @endpoint("GET", "/v1/schedules/{schedule_id}")
    def get(self, schedule_id: Ref, /) -> JSON: ...

    @endpoint("PATCH", "/v1/schedules/{schedule_id}")
    def update(self, schedule_id: Ref, /, *, name: str | Omit = OMIT, cron: str | Omit = OMIT,
               content: str | Omit = OMIT, agent: Ref | Omit = OMIT,
               session: Ref | Omit = OMIT, timezone: str | Omit = OMIT,
               multitask: str | Omit = OMIT, webhook: str | None | Omit = OMIT,
               pause_after_failures: int | Omit = OMIT, active: bool | Omit = OMIT) -> JSON:
        """``active=False`` pauses it; ``True`` resumes it from now on."""

    @endpoint("DELETE", "/v1/schedules/{schedule_id}")
    def delete(self, schedule_id: Ref, /) -> None: ...

    @endpoint("POST", "/v1/schedules/{schedule_id}/run")
    def run_now(self, schedule_id: Ref, /) -> JSON: ...

    @endpoint("GET", "/v1/schedules/{schedule_id}/fires", query=("limit",))
    def fires(self, schedule_id: Ref, /, *, limit: int | None = None) -> Page[JSON]: ...

    @endpoint("GET", "/v1/schedules/{schedule_id}/usage", query=USAGE_FILTERS)
    def usage(self, schedule_id: Ref, /, *, since: str | None = None,
              until: str | None = None, agent: Ref | None = None, session: Ref | None = None,
              run: Ref | None = None, purpose: str | None = None,
              limit: int | None = None) -> JSON: ...

    @endpoint("GET", "/v1/schedules/{schedule_id}/context")
    def context(self, schedule_id: Ref, /) -> JSON: ...
