"""What the apps' admins share.

The admin writes nothing the API's services do not: a row the API writes is written here
through the same service (its checks, its audit row), a row the application alone writes is
read-only (:class:`AppWrittenAdmin`). Tenants and members, which no API route writes, are the
operator's and are edited here as plain models (Django's own admin history records who).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.contrib.auth import get_permission_codename
from django.db import transaction
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from hango_project.errors import ApplicationError

if TYPE_CHECKING:
    from django.contrib.admin.options import BaseModelAdmin, ModelAdmin

    # What the mixin's super() calls reach: ModelAdmin or an inline, whichever it is mixed into.
    _AdminBase = BaseModelAdmin[Any]
    _ModelAdminBase = ModelAdmin[Any]
else:
    _AdminBase = _ModelAdminBase = object


def refusal(exc: ApplicationError) -> str:
    """A service's refusal as one line: its message, then the problems its detail lists (a
    field's list of reasons; a figure such as ``max_files`` is in the message already)."""
    problems = [p for value in exc.detail.values() if isinstance(value, list)
                for p in value if isinstance(p, str)]
    return " ".join([exc.message, *problems])


def adopt(obj: Model, saved: Model) -> None:
    """The form's unsaved instance becomes the row a service saved, for what the admin does
    with it next (its inlines, its history, the message naming it)."""
    for field in saved._meta.concrete_fields:
        setattr(obj, field.attname, getattr(saved, field.attname))
    obj._state.adding = False


def written(form: forms.ModelForm, names: tuple[str, ...], change: bool) -> dict[str, Any]:
    """The fields a service takes from the form: every one given on an add, the changed ones
    on a change."""
    return {k: form.cleaned_data[k] for k in names
            if k in (form.changed_data if change else form.cleaned_data)}


class AppWrittenAdmin(_AdminBase):
    """For rows the application alone writes (its services, the run worker): the admin adds
    none, and changes or deletes one only where a subclass sets ``may_change`` or
    ``may_delete`` (then the user's own permissions decide). Mix in before ``admin.ModelAdmin``
    or an inline.

    Such rows go with whatever owns them (a session's runs with their agent): the deletion
    of an owner here does not count them as rows the user may not delete
    (:class:`OwnerAdmin`), unless a subclass says ``deleted_with_owner = False``."""

    may_change = False
    may_delete = False
    deleted_with_owner = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_change and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_delete and super().has_delete_permission(request, obj)


class OwnerAdmin(_ModelAdminBase):
    """For a model whose deletion takes app-written rows with it, as the API's own deletion
    does (an agent's sessions, runs and schedules): those rows refuse a deletion of their own,
    which Django would otherwise count against deleting their owner. An admin marks its rows
    so with ``deleted_with_owner``."""

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        owned = {str(model._meta.verbose_name)
                 for model, model_admin in self.admin_site._registry.items()
                 if getattr(model_admin, "deleted_with_owner", False)}
        return deleted, counts, perms_needed - owned, protected


class ServiceWrittenAdmin(_ModelAdminBase):
    """For a model written here through its services: a refusal the form could not foresee
    (the path taken meanwhile, a set the pair rule refuses) rolls the whole request back and is
    shown as the service words it, instead of a 500. Mix in before ``admin.ModelAdmin``."""

    def _refused(self, request: HttpRequest, exc: ApplicationError) -> HttpResponse:
        self.message_user(request, refusal(exc), messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())

    def changeform_view(self, request: HttpRequest, object_id: str | None = None,
                        form_url: str = "", extra_context: dict[str, Any] | None = None
                        ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApplicationError as exc:
            return self._refused(request, exc)

    def delete_view(self, request: HttpRequest, object_id: str,
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)
        except ApplicationError as exc:
            return self._refused(request, exc)

    # The relations a row's deletion reads (its service's audit row names them), fetched with
    # the rows a bulk deletion takes.
    delete_related: tuple[str, ...] = ()

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        """Each row through :meth:`delete_model` (its service, its audit row), never Django's
        one bulk DELETE."""
        for obj in queryset.select_related(*self.delete_related):
            self.delete_model(request, obj)

    def changelist_view(self, request: HttpRequest,
                        extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method != "POST":
            return super().changelist_view(request, extra_context)
        try:  # an action on many rows: all of it or none
            with transaction.atomic():
                return super().changelist_view(request, extra_context)
        except ApplicationError as exc:
            return self._refused(request, exc)


class ActionsAdmin(_ModelAdminBase):
    """For an admin whose actions write (cancel, resume, pause, revoke) where its change form
    does not: an action declared ``@admin.action(permissions=["act"])`` is offered to, and
    taken from, only a user with the model's change permission. Django filters only actions
    that declare a permission; a view-only user was offered these. Mix in before
    ``admin.ModelAdmin``."""

    def has_act_permission(self, request: HttpRequest) -> bool:
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.{get_permission_codename('change', opts)}")
