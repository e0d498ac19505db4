"""Routes under /v1 owned by the webhooks app."""

from django.urls import path

from webhooks.apis import (
    DeliveryDetailApi,
    DeliveryListApi,
    EndpointDetailApi,
    EndpointListApi,
    EndpointPingApi,
    EndpointRotateApi,
)

urlpatterns = [
    path("webhooks", EndpointListApi.as_view(), name="webhooks"),
    path("webhooks/<str:webhook_id>", EndpointDetailApi.as_view(), name="webhook"),
    path("webhooks/<str:webhook_id>/rotate", EndpointRotateApi.as_view(), name="webhook-rotate"),
    path("webhooks/<str:webhook_id>/ping", EndpointPingApi.as_view(), name="webhook-ping"),
    path("webhooks/<str:webhook_id>/deliveries", DeliveryListApi.as_view(),
         name="webhook-deliveries"),
    path("webhooks/<str:webhook_id>/deliveries/<str:delivery_id>", DeliveryDetailApi.as_view(),
         name="webhook-delivery"),
]
