"""Explicit input and output shapes for webhook endpoints and their deliveries."""

from __future__ import annotations

from rest_framework import serializers

from hango_api import fields as strict
from hango_api.inputs import Input
from hango_project import outbound
from hango_project.config import hango
from webhooks.delivery import SWITCH
from webhooks.models import RUN_EVENTS, Delivery, Endpoint


class EndpointInput(Input):
    schema_extra = {"properties": {"url": {"pattern": outbound.URL_PATTERN},
                                   "events": {"minItems": 1}}}

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
            return outbound.check_url(value, allow_private=hango().webhook_allow_private,
                                      switch=SWITCH)
        except outbound.BadUrl as exc:
            raise serializers.ValidationError(str(exc)) from None

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
