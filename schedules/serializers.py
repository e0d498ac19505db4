"""Explicit input and output shapes for schedules and their fires."""

from __future__ import annotations

from rest_framework import serializers

from accounts.usage_apis import UsageOutput
from hango_api import fields as strict
from hango_api.inputs import Input
from runs.api.serializers import ContentField, RunErrorField
from runs.execution.queue import Multitask
from runs.intake.content_fields import UserContentField
from schedules.models import Fire, Schedule


class ScheduleInput(Input):
    # validate(): exactly one of agent and session; neither changes once made.
    schema_extra = {"oneOf": [{"required": ["agent"]}, {"required": ["session"]}],
                    "patch": {"not": {"anyOf": [{"required": ["agent"]},
                                                {"required": ["session"]}]}},
                    "properties": {"cron": {"pattern": r"^\s*\S+(?:\s+\S+){4}\s*$"}}}

    name = strict.CharField(max_length=200)
    agent = strict.UUIDField(required=False, help_text="Each fire starts a new session of it.")
    session = strict.UUIDField(required=False, help_text="Each fire posts to this session.")
    cron = strict.CharField(max_length=200, help_text="5 fields: minute hour day-of-month "
                            "month day-of-week (as cron reads them, e.g. `0 9 * * MON-FRI`).")
    timezone = strict.CharField(max_length=64, required=False,
                                help_text="An IANA zone the cron expression reads in (UTC).")
    content = UserContentField(help_text="The message each fire posts.")
    multitask = strict.ChoiceField(choices=[m.value for m in Multitask], required=False,
                                   help_text="While the session is busy: enqueue (the "
                                             "default), interrupt, or reject (the fire is "
                                             "refused).")
    webhook = strict.UUIDField(required=False, allow_null=True,
                               help_text="A webhook endpoint told of each run's end.")
    pause_after_failures = strict.IntegerField(
        min_value=0, required=False,
        help_text="Pause after this many failed runs or refused fires in a row (0: never).")
    active = strict.BooleanField(required=False)

    def validate(self, attrs: dict) -> dict:
        partial = self.partial
        if not partial and ("agent" in attrs) == ("session" in attrs):
            raise serializers.ValidationError(
                {"session": ["Give exactly one of agent (a new session each fire) and "
                             "session."]})
        if partial and ("agent" in attrs or "session" in attrs):
            raise serializers.ValidationError(
                {"agent": ["A schedule's agent or session cannot change: make another."]})
        return attrs


class ScheduleOutput(serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    session = serializers.UUIDField(source="session_id", read_only=True, allow_null=True)
    webhook = serializers.UUIDField(source="webhook_id", read_only=True, allow_null=True)
    content = ContentField(read_only=True)

    class Meta:
        model = Schedule
        fields = ["id", "name", "agent", "session", "cron", "timezone", "content", "multitask",
                  "webhook", "active", "paused_reason", "next_run_at", "last_fired_at",
                  "missed", "consecutive_failures", "pause_after_failures", "created_at",
                  "updated_at"]
        read_only_fields = fields


class FireOutput(serializers.ModelSerializer):
    session = serializers.UUIDField(source="session_id", read_only=True, allow_null=True)
    run = serializers.UUIDField(source="run_id", read_only=True, allow_null=True)
    error = RunErrorField(read_only=True, help_text="Why it was refused, or why its run failed.")
    usage = UsageOutput(source="run", read_only=True, allow_null=True,
                        help_text="The tokens its run has spent so far (null: no run).")

    class Meta:
        model = Fire
        fields = ["id", "fire_at", "fired_at", "manual", "status", "session", "run", "error",
                  "usage"]
        read_only_fields = fields


class ScheduleDetailOutput(ScheduleOutput):
    usage = UsageOutput(read_only=True, help_text="The tokens all its runs have spent.")

    class Meta(ScheduleOutput.Meta):
        fields = [*ScheduleOutput.Meta.fields, "usage"]
        read_only_fields = fields
