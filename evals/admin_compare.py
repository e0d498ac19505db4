"""The admin's comparison of two eval runs: an action on two eval runs selected in the list (the
older one is the baseline), and a page that shows the cases that regressed or were fixed and
the pass rate, token, cost and latency deltas.

The page computes nothing of its own: it asks :func:`evals.comparison.eval_runs_compare`, as the
API does, as the staff user's member of the baseline's tenant (the Context panel's way, so the
tenancy rules are the API's): a user who is none, or an eval run that member may not see (another
tenant's), is a 404.

:class:`CompareAdmin` is mixed into the eval run's ``ModelAdmin``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from accounts.admin import acting_member
from evals.comparison import eval_runs_compare
from evals.models import EvalRun
from hango_project.errors import NotFound

if TYPE_CHECKING:
    _AdminBase = admin.ModelAdmin[EvalRun]
else:
    _AdminBase = object


def compare_url(base: EvalRun, head: EvalRun) -> str:
    return reverse("admin:evals_evalrun_compare", args=[quote(base.pk), quote(head.pk)])


class CompareAdmin(_AdminBase):
    """Mix in before ``admin.ModelAdmin``."""

    actions = ["compare_selected"]

    def get_urls(self) -> list[URLPattern]:
        compare = path("<str:object_id>/compare/<str:other_id>/",
                       self.admin_site.admin_view(self.compare_view),
                       name="evals_evalrun_compare")
        return [compare, *super().get_urls()]

    @admin.action(description="Compare the two selected eval runs (the older is the baseline)")
    def compare_selected(self, request: HttpRequest,
                         queryset: QuerySet[EvalRun]) -> HttpResponse | None:
        chosen = list(queryset.order_by("created_at", "id")[:3])
        if len(chosen) != 2:
            self.message_user(request, "Select exactly two eval runs to compare.",
                              messages.WARNING)
            return None
        return HttpResponseRedirect(compare_url(*chosen))

    @admin.display(description="compare")
    def compare_link(self, eval_run: EvalRun) -> str:
        """With the eval run of the same suite and agent before it, when there is one."""
        before = (EvalRun.objects.filter(suite_id=eval_run.suite_id, agent_id=eval_run.agent_id,
                                         created_at__lt=eval_run.created_at)
                  .order_by("-created_at").first())
        if before is None:
            return "-"
        return format_html('<a href="{}">against the eval run before it</a> ({})',
                           compare_url(before, eval_run), before.pk)

    def compare_view(self, request: HttpRequest, object_id: str,
                     other_id: str) -> HttpResponse:
        if not self.has_view_permission(request):
            raise Http404
        tenant_id = (EvalRun.objects.filter(pk=object_id).values_list("tenant_id", flat=True)
                     .first() if _is_uuid(object_id) else None)
        member = acting_member(request, tenant_id) if tenant_id is not None else None
        if member is None:
            raise Http404("No eval run of a tenant you are a member of has this id.")
        try:
            compared = eval_runs_compare(member=member, base_id=object_id, head_id=other_id)
        except NotFound as exc:
            raise Http404(exc.message) from None
        context = {
            **self.admin_site.each_context(request),
            "title": f"{compared.head} against {compared.base}",
            "subtitle": None,
            "opts": self.opts,
            "original": compared.base,
            "has_view_permission": True,
            "base": compared.base, "head": compared.head, "delta": compared.delta,
            "costs": sorted(compared.delta["cost"].items()),
            "base_url": reverse("admin:evals_evalrun_change", args=[quote(compared.base.pk)]),
            "head_url": reverse("admin:evals_evalrun_change", args=[quote(compared.head.pk)]),
        }
        return TemplateResponse(request, "evals/admin/compare.html", context)


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
