"""Routes under /v1 owned by the accounts app."""

from django.urls import path

from accounts.audit_apis import AuditListApi
from accounts.me_apis import MeApi
from accounts.price_apis import PriceDetailApi, PriceListApi
from accounts.usage_apis import UsageApi

urlpatterns = [
    path("me", MeApi.as_view(), name="me"),
    path("usage", UsageApi.as_view(), name="usage"),
    path("audit", AuditListApi.as_view(), name="audit"),
    path("prices", PriceListApi.as_view(), name="prices"),
    # A model's name may hold a slash (an OpenAI-compatible server's "org/model").
    path("prices/<path:model>", PriceDetailApi.as_view(), name="price"),
]
