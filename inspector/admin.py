"""Context overrides in the admin: read here (the Context panel and the API's PUT routes write
them), and deleted only through those routes' service, as the staff user's member of the
tenant: an excluded message goes with its pair, a set that would leave an invalid request is
refused, and each target's new set is a ``context.override`` audit row. And the session's admin
with its Context panel (:mod:`inspector.panel`)."""

from collections.abc import Iterable, Iterator
from itertools import groupby
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from accounts.admin import acting_member
from agents.models import Agent
from context.models import ContextOverride
from hango_project.admin import AppWrittenAdmin, ServiceWrittenAdmin
from inspector import services
from inspector.panel import ContextPanelAdmin
from runs.admin import SessionAdmin
from runs.models import Session


def by_target(overrides: Iterable[ContextOverride]
              ) -> Iterator[tuple[Agent | Session, list[ContextOverride]]]:
    """``overrides`` grouped by the agent or session whose set they belong to."""
    def target_id(o: ContextOverride) -> str:
        return str(o.agent_id or o.session_id)

    for _, group in groupby(sorted(overrides, key=target_id), key=target_id):
        rows = list(group)
        target = rows[0].agent or rows[0].session
        assert target is not None  # a constraint: exactly one of the two
        yield target, rows


@admin.register(ContextOverride)
class ContextOverrideAdmin(ServiceWrittenAdmin, AppWrittenAdmin, admin.ModelAdmin):
    list_display = ["part", "action", "agent", "session", "tenant", "created_by", "created_at"]
    list_filter = ["action", "tenant"]
    search_fields = ["part"]
    may_delete = True

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # The confirmation lists the pairs that go too.
        chosen = list(objs)
        for target, rows in by_target(list(chosen)):
            paired = services.overrides_paired(target=target, parts=[r.part for r in rows])
            chosen += target.context_overrides.filter(part__in=paired)
        return super().get_deleted_objects(chosen, request)

    def _remove(self, request: HttpRequest, overrides: Iterable[ContextOverride]) -> None:
        for target, rows in by_target(overrides):
            asked = [o.part for o in rows]
            removed = services.overrides_remove(target=target, parts=asked,
                                                actor=acting_member(request, rows[0].tenant_id))
            if paired := [p for p in removed if p not in asked]:
                self.message_user(request, "Deleted with the messages they pair with: "
                                  f"{', '.join(paired)}.", messages.INFO)

    def delete_model(self, request: HttpRequest, obj: ContextOverride) -> None:
        self._remove(request, [obj])

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        self._remove(request, queryset.select_related("agent", "session"))


class SessionWithPanelAdmin(ContextPanelAdmin, SessionAdmin):
    """The runs app's session admin with the Context panel mixed in: registered here in its
    place, since the panel is the inspector's and the inspector sits above ``runs``."""


# runs.admin, imported above, has registered its own by now, whatever the order apps load in.
admin.site.unregister(Session)
admin.site.register(Session, SessionWithPanelAdmin)
