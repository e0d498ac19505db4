"""The harness's override store over ``context_overrides``, bound to one run's agent and
session (:class:`harness.stores.OverrideStore`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from context.models import ContextOverride
from hango_project.sql import fetch, uuid_param
from harness.context import Override, OverrideSet


def overrides_of(rows: Iterable[tuple[Any, ...]]) -> list[Override]:
    """Overrides of (part, action, replacement) rows (the database checks the action)."""
    return [Override(part=part, action=action, replacement=replacement)
            for part, action, replacement in rows]


class DbOverrideStore:
    """The agent's overrides (system and tool parts) and the session's (message parts and the
    summary): what one run of that session applies. ``preloaded``: the rows of a run's
    preload (:mod:`runs.execution.preload`), the first load's answer."""

    def __init__(self, tenant_id: uuid.UUID, agent_id: uuid.UUID, session_id: uuid.UUID, *,
                 preloaded: list[tuple[str, str, str | None]] | None = None,
                 extra: Sequence[Override] = ()) -> None:
        self.tenant_id, self.agent_id, self.session_id = tenant_id, agent_id, session_id
        self._preloaded = preloaded
        # On top of the stored ones, never saved: an eval session's (runs.models.Session).
        self.extra = tuple(extra)

    def load(self) -> list[Override]:
        rows, self._preloaded = self._preloaded, None
        if rows is None:
            rows = fetch(_LOAD, [uuid_param(self.tenant_id), uuid_param(self.agent_id),
                                 uuid_param(self.session_id)])
        stored = overrides_of(rows)
        if not self.extra:
            return stored
        return list(OverrideSet(overrides=tuple(stored)).merged(self.extra).overrides)


def overrides_from_json(items: Iterable[dict[str, Any]]) -> list[Override]:
    """Overrides of their JSON form ({"part", "action", "replacement"?}), as validated where
    they were written."""
    return [Override(part=i["part"], action=i["action"], replacement=i.get("replacement"))
            for i in items]


# Every run reads its overrides before its first model call: one plain query.
_LOAD = (f"SELECT part, action, replacement FROM {ContextOverride._meta.db_table} "
         "WHERE tenant_id = %s AND (agent_id = %s OR session_id = %s) ORDER BY created_at, part")
