"""The admin's Context panel for a session: the context inspector's snapshot as three groups of
parts with a checkbox each, a picture of the budget, Save, Try and Evaluate.

The page itself is a shell: the panel's data and every change go through the public HTTP API
(``static/inspector/panel.js``) with the admin's login session — CSRF header, and the session's
tenant in ``X-Hango-Tenant`` — as the user's member of that tenant, so the API's scoping, rate
limit and audit apply exactly as to a key (:class:`accounts.authentication.
StaffSessionAuthentication`). What the page checks here is only whether the user can be that
member at all, to say so plainly instead of letting every call fail.

:class:`ContextPanelAdmin` is mixed into the session's ``ModelAdmin``: it adds the panel's URL,
a "Context" button on the session's page and a column on the session list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from accounts.models import Member
from hango_project.errors import NotFound
from runs.intake.selectors import session_get
from runs.models import Session

if TYPE_CHECKING:
    _AdminBase = admin.ModelAdmin[Session]
else:
    _AdminBase = object


def panel_url(session: Session) -> str:
    return reverse("admin:runs_session_context", args=[quote(session.pk)])


def _refusal(request: HttpRequest, session: Session) -> tuple[Member | None, str | None]:
    """The user's member of the session's tenant, or why the panel cannot work for them."""
    user = request.user
    assert not isinstance(user, AnonymousUser)  # admin_view lets only logged-in staff in
    member = (Member.objects.select_related("tenant", "user")
              .filter(user=user, tenant_id=session.tenant_id).first())
    if member is None:
        return None, (f"You are not a member of the tenant “{session.tenant}”, which this "
                      "session belongs to. The Context panel works through the API as a member "
                      "of the session's tenant: an owner of the tenant can add you as a member "
                      "(Members, in this admin), then this page works.")
    try:
        session_get(member=member, session_id=session.pk)
    except NotFound:
        return member, (f"As a member of “{session.tenant}” with the role “{member.role}”, "
                        "you may see only your own sessions, and this one is another "
                        "member's. Owners and admins of the tenant see every session.")
    return member, None


class ContextPanelAdmin(_AdminBase):
    """The Context panel on a session's admin. Mix in before ``admin.ModelAdmin``."""

    change_form_template = "inspector/session_change_form.html"

    def get_urls(self) -> list[URLPattern]:
        panel = path("<path:object_id>/context/", self.admin_site.admin_view(self.context_view),
                     name="runs_session_context")
        return [panel, *super().get_urls()]

    def get_list_display(self, request: HttpRequest) -> Any:
        return [*super().get_list_display(request), "context_link"]

    @admin.display(description="context")
    def context_link(self, session: Session) -> str:
        return format_html('<a href="{}" class="context-link">Context</a>', panel_url(session))

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra = {**(extra_context or {}),
                 "context_panel_url": reverse("admin:runs_session_context", args=[object_id])}
        return super().change_view(request, object_id, form_url, extra)

    def context_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        session = self.get_object(request, unquote(object_id))
        if session is None or not self.has_view_permission(request, session):
            messages.warning(request, f"There is no session with the id “{object_id}”.")
            return HttpResponseRedirect(reverse("admin:runs_session_changelist"))
        member, refusal = _refusal(request, session)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Context of {session}",
            "subtitle": None,
            "opts": self.opts,
            "original": session,
            "has_view_permission": True,
            "member": member,
            "refusal": refusal,
            # Where the API is mounted (hango_project/urls.py): the page calls nothing else.
            "api_root": reverse("schema").removesuffix("schema"),
            # A run's admin page, its id in place of RUN: where an eval's case links to its run.
            "run_page": reverse("admin:runs_run_change", args=["RUN"]),
        }
        return TemplateResponse(request, "inspector/panel.html", context)
