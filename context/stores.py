"""The harness's override store over ``context_overrides``, bound to one run's agent and
session (:class:`harness.stores.OverrideStore`)."""

from __future__ import annotations

import uuid

from django.db.models import Q

from context.models import ContextOverride
from harness.context import Override


def overrides_of(rows: list[ContextOverride]) -> list[Override]:
    return [Override(part=r.part, action=r.action,  # type: ignore[arg-type]  # the DB checks it
                     replacement=r.replacement) for r in rows]


class DbOverrideStore:
    """The agent's overrides (system and tool parts) and the session's (message parts and the
    summary): what one run of that session applies."""

    def __init__(self, tenant_id: uuid.UUID, agent_id: uuid.UUID, session_id: uuid.UUID) -> None:
        self.tenant_id, self.agent_id, self.session_id = tenant_id, agent_id, session_id

    def load(self) -> list[Override]:
        rows = ContextOverride.objects.filter(
            Q(agent_id=self.agent_id) | Q(session_id=self.session_id), tenant_id=self.tenant_id)
        return overrides_of(list(rows.order_by("created_at", "part")))
