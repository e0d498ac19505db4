"""Webhook endpoints and their deliveries in the admin: read-only (the API makes, rotates and
deletes endpoints, each audited); an endpoint's secret is never shown. An endpoint's delivery
log: the deliveries list, searched by the endpoint's URL or id."""

from django.contrib import admin

from hango_project.admin import AppWrittenAdmin
from webhooks.models import Delivery, Endpoint


@admin.register(Endpoint)
class EndpointAdmin(AppWrittenAdmin, admin.ModelAdmin):
    list_display = ["url", "tenant", "agent", "active", "created_at"]
    list_filter = ["tenant", "active"]
    search_fields = ["url", "id", "description"]
    readonly_fields = ["id", "tenant", "member", "url", "description", "agent", "events",
                       "active", "previous_secret_expires_at", "created_at", "updated_at"]
    exclude = ("secret", "previous_secret")  # sealed, and never shown after it was made


@admin.register(Delivery)
class DeliveryAdmin(AppWrittenAdmin, admin.ModelAdmin):
    list_display = ["id", "endpoint", "event", "status", "attempts", "last_status_code",
                    "created_at"]
    list_filter = ["status", "event"]
    search_fields = ["id", "run_id", "endpoint__url", "endpoint__id"]
    readonly_fields = ["id", "tenant", "endpoint", "event", "run_id", "data", "status",
                       "attempts", "next_attempt_at", "last_status_code", "last_error",
                       "created_at", "delivered_at"]
