"""The shape of a diff between two versions of an agent (:mod:`agents.version_diff`)."""

from __future__ import annotations

from rest_framework import serializers


class JsonChangeOutput(serializers.Serializer):
    path = serializers.CharField(help_text='Where, e.g. "$.summarization.keep_messages", '
                                           '"$.subagents[0].tools"; "$" the whole value.')
    change = serializers.ChoiceField(["added", "removed", "changed", "reordered"])
    old = serializers.JSONField(allow_null=True, help_text="The value before; null if added.")
    new = serializers.JSONField(allow_null=True, help_text="The value after; null if removed.")


class TextDiffOutput(serializers.Serializer):
    changed = serializers.BooleanField()
    diff = serializers.CharField(help_text="A unified diff; empty when unchanged.")


class ValueDiffOutput(serializers.Serializer):
    changed = serializers.BooleanField()
    old = serializers.CharField()
    new = serializers.CharField()


class JsonDiffOutput(serializers.Serializer):
    changed = serializers.BooleanField()
    changes = JsonChangeOutput(many=True)


class VersionDiffOutput(serializers.Serializer):
    agent = serializers.UUIDField()
    from_version = serializers.IntegerField()
    to_version = serializers.IntegerField()
    same_content = serializers.BooleanField(help_text="The two content hashes are equal.")
    system_prompt = TextDiffOutput()
    model = ValueDiffOutput()
    allowed_tools = JsonDiffOutput()
    config = JsonDiffOutput()
