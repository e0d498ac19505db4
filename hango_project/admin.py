"""What the apps' admins share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.admin.options import BaseModelAdmin

    # What the mixin's super() calls reach: ModelAdmin or an inline, whichever it is mixed into.
    _AdminBase = BaseModelAdmin[Any]
else:
    _AdminBase = object


class AppWrittenAdmin(_AdminBase):
    """For rows the application alone writes (its services, the run worker): the admin adds
    none, and changes or deletes one only where a subclass sets ``may_change`` or
    ``may_delete`` (then the user's own permissions decide). Mix in before ``admin.ModelAdmin``
    or an inline."""

    may_change = False
    may_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_change and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_delete and super().has_delete_permission(request, obj)
