"""Routes under /v1 owned by the accounts app."""

from django.urls import path

from accounts.audit_apis import AuditListApi
from accounts.usage_apis import UsageApi

urlpatterns = [
    path("usage", UsageApi.as_view(), name="usage"),
    path("audit", AuditListApi.as_view(), name="audit"),
]
