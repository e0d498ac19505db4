"""Explicit input and output shapes for webhook endpoints and their deliveries."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from rest_framework import serializers

from hango_api import fields as strict
from hango_api.inputs import Input
from hango_project.config import hango
from webhooks.delivery import is_public
from webhooks.models import RUN_EVENTS, Delivery, Endpoint


class EndpointInput(Input):
    url = strict.CharField(max_length=2000, help_text="Where deliveries are POSTed: http(s).")
    description = strict.CharField(max_length=200, required=False, allow_blank=True)
    agent = strict.UUIDField(required=False, allow_null=True,
                             help_text="Told of every run of this agent; none: only of the "
                                       "runs whose trigger names this endpoint.")
    events = strict.ListField(child=strict.ChoiceField(choices=RUN_EVENTS), required=False,
                              allow_empty=False, help_text="Default: all four run events.")
    active = strict.BooleanField(required=False)

    def validate_url(self, value: str) -> str:
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 (read for the ValueError of a bad port)
            (parts.hostname or "").encode("idna")
        except (ValueError, UnicodeError):
            raise serializers.ValidationError("Not a URL hango can call.") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise serializers.ValidationError("An http:// or https:// URL with a host.")
        if parts.username or parts.password:
            raise serializers.ValidationError("Credentials do not belong in the URL.")
        try:
            address = ipaddress.ip_address(parts.hostname)
        except ValueError:  # a name: its addresses are checked at every delivery
            return value
        if not is_public(address) and not hango().webhook_allow_private:
            raise serializers.ValidationError(
                "A non-public address (HANGO_WEBHOOK_ALLOW_PRIVATE allows it).")
        return value

    def validate_events(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class EndpointOutput(serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True, allow_null=True)
    events = serializers.ListField(child=serializers.ChoiceField(choices=RUN_EVENTS),
                                   read_only=True)
    previous_secret_signs_until = serializers.DateTimeField(
        source="previous_secret_expires_at", read_only=True, allow_null=True,
        help_text="After a rotation: until when the previous secret signs too.")

    class Meta:
        model = Endpoint
        fields = ["id", "url", "description", "agent", "events", "active",
                  "previous_secret_signs_until", "created_at", "updated_at"]
        read_only_fields = fields


class EndpointWithSecretOutput(EndpointOutput):
    secret = serializers.SerializerMethodField(
        help_text="The signing secret (whsec_…): shown this once.")

    class Meta(EndpointOutput.Meta):
        fields = [*EndpointOutput.Meta.fields, "secret"]
        read_only_fields = fields

    def get_secret(self, endpoint: Endpoint) -> str:
        secret: str = self.context["secret"]
        return secret


class DeliveryOutput(serializers.ModelSerializer):
    run = serializers.UUIDField(source="run_id", read_only=True, allow_null=True)
    webhook_id = serializers.CharField(source="message_id", read_only=True,
                                       help_text="The webhook-id header of every attempt.")
    event_data = serializers.DictField(source="data", read_only=True,
                                       help_text="The event's data, as sent.")

    class Meta:
        model = Delivery
        fields = ["id", "webhook_id", "event", "run", "status", "attempts", "next_attempt_at",
                  "last_status_code", "last_error", "created_at", "delivered_at", "event_data"]
        read_only_fields = fields
