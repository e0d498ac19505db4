"""Explicit input and output shapes for sessions and messages."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.usage_apis import CostOutput, UsageOutput
from hango_api import fields as strict
from hango_api.inputs import Input
from hango_api.outputs import ModelOutput
from harness.approval_values import DECISIONS
from runs import client_results, selectors
from runs.content_fields import UserContentField
from runs.models import Message, Run, RunEvent, Session
from runs.queue import Multitask


def _pin(**kwargs: Any) -> strict.IntegerField:
    return strict.IntegerField(
        min_value=1, allow_null=True, required=False, **kwargs,
        help_text="The agent's version (its number) the session's runs execute; null or absent: "
                  "its latest, whichever it is when each run is made.")


class SessionInput(Input):
    agent = strict.UUIDField()
    title = strict.CharField(max_length=200, required=False, allow_blank=True)
    agent_version = _pin()


class SessionUpdateInput(Input):
    title = strict.CharField(max_length=200, required=False, allow_blank=True)
    agent_version = _pin()


class SessionOutput(serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    active_run = serializers.UUIDField(source="active_run_id", read_only=True, allow_null=True)

    class Meta:
        model = Session
        fields = ["id", "agent", "agent_version", "title", "active_run", "created_at",
                  "updated_at"]
        read_only_fields = fields


@extend_schema_field(
    {
        "type": "array",
        "description": "Content blocks: text, tool_use or tool_result.",
        "items": {"type": "object", "properties": {"type": {"type": "string"}},
                  "required": ["type"], "additionalProperties": True},
    }
)
class ContentField(serializers.JSONField):
    pass


class MessageOutput(ModelOutput):
    run = serializers.UUIDField(source="run_id", read_only=True, allow_null=True)
    content = ContentField(read_only=True)

    class Meta:
        model = Message
        fields = ["id", "seq", "role", "content", "run", "created_at"]
        read_only_fields = fields


class MessageInput(Input):
    content = UserContentField(
        help_text="The user's text, or a list of text / tool_result blocks."
    )
    multitask = strict.ChoiceField(
        choices=[m.value for m in Multitask], required=False, default=Multitask.REJECT.value,
        help_text="What happens while the session has an active run. `reject` (the default): "
                  "409 naming it. `enqueue`: the message waits, its run `pending`, until the "
                  "runs before it end (completed, failed or cancelled; a run awaiting approval "
                  "is still active, so it waits for the decision); then it joins the history "
                  "and its run starts. `interrupt`: the same, and the runs before it are "
                  "cancelled — the active one at its next boundary (its tool calls answered), "
                  "the pending ones as their turn comes (their messages still join the "
                  "history, in order).")


@extend_schema_field({"type": "array", "items": {
    "type": "object", "properties": {"content": {"type": "string"},
                                     "status": {"enum": ["pending", "in_progress", "completed"]}}}})
class TodosField(serializers.JSONField):
    pass


@extend_schema_field({"type": ["object", "null"], "properties": {
    "code": {"type": "string"}, "message": {"type": "string"}}})
class RunErrorField(serializers.JSONField):
    pass


@extend_schema_field({"type": ["object", "null"], "required": ["text", "stop_reason"],
                      "description": "The run's answer once it is `completed` (null before, and "
                      "for a run that failed or was cancelled): the text of its last assistant "
                      "message (its text blocks joined; tool calls left out) and why the model "
                      "stopped (`end_turn`; `max_tokens`: the text was cut off at the agent's "
                      "output limit; `refusal`; …).",
                      "properties": {"text": {"type": "string"},
                                     "stop_reason": {"type": ["string", "null"]}}})
class RunAnswerField(serializers.JSONField):
    pass


class RunListOutput(serializers.ListSerializer):
    """Runs, their costs and answers read for the whole page at once."""

    costs: dict[uuid.UUID, dict[str, Any]]
    answers: dict[uuid.UUID, dict[str, Any] | None]

    def to_representation(self, data: Any) -> list[Any]:
        runs = list(data.all() if isinstance(data, QuerySet) else data)
        self.costs = selectors.run_costs(runs)
        self.answers = selectors.run_answers(runs)
        return super().to_representation(runs)


def as_created(run: Run) -> dict[str, Any]:
    """A :class:`RunOutput` context that reads nothing: what a run just created has, no calls
    and no answer (the answer to its post when the database cannot be read after the commit)."""
    return {"costs": {run.pk: {"by_currency": [], "unpriced_calls": 0}},
            "answers": {run.pk: None}}


class RunOutput(ModelOutput):
    session = serializers.UUIDField(source="session_id", read_only=True)
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    todos = serializers.SerializerMethodField()
    pending_approvals = serializers.SerializerMethodField()
    required_action = serializers.SerializerMethodField()
    error = RunErrorField(read_only=True)
    usage = UsageOutput(source="*", read_only=True)
    cost = serializers.SerializerMethodField()
    output = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "session", "agent", "agent_version", "status", "turn", "todos",
                  "pending_approvals", "required_action", "error", "output", "usage", "cost",
                  "cancel_requested", "created_at", "started_at", "finished_at"]
        read_only_fields = fields
        list_serializer_class = RunListOutput

    @extend_schema_field(CostOutput(help_text="What the run's model calls cost, per currency "
                                    "(`GET /v1/usage?run=` lists them)."))
    def get_cost(self, run: Run) -> dict[str, Any]:
        costs = getattr(self.parent, "costs", None) or self.context.get("costs")
        return (costs if costs is not None else selectors.run_costs([run]))[run.pk]

    @extend_schema_field(RunAnswerField)
    def get_output(self, run: Run) -> dict[str, Any] | None:
        answers = getattr(self.parent, "answers", None) or self.context.get("answers")
        return (answers if answers is not None else selectors.run_answers([run]))[run.pk]

    @extend_schema_field(TodosField)
    def get_todos(self, run: Run) -> list:
        return (run.state_json or {}).get("todos", [])

    @extend_schema_field({"type": "array", "items": {"type": "object", "properties": {
        "tool_use_id": {"type": "string"}, "name": {"type": "string"}, "input": {"type": "object"},
        "allowed_decisions": {"type": "array", "items": {"enum": list(DECISIONS)}},
        "reason": {"enum": ["approval", "outcome_unknown"], "description":
                   "`outcome_unknown`: the call was sent before its worker died and whether it "
                   "ran is not known; approving sends it again."}}}})
    def get_pending_approvals(self, run: Run) -> list:
        """The held calls of the run's batch: a batch kept before its calls run (not held)
        shows none."""
        pending = ((run.state_json or {}).get("pending_batch") or {}).get("pending", [])
        return [p for p in pending if p.get("allowed_decisions")]


    @extend_schema_field(client_results.REQUIRED_ACTION_SCHEMA)
    def get_required_action(self, run: Run) -> dict[str, Any] | None:
        return client_results.required_action(run)


class PostedMessageOutput(MessageOutput):
    seq = serializers.IntegerField(
        read_only=True, allow_null=True,
        help_text="null while the message waits in the session's queue (multitask enqueue or "
                  "interrupt): it joins the history, with its seq, when its run starts.")


class PostMessageOutput(serializers.Serializer):
    message = PostedMessageOutput()
    run = RunOutput(help_text="The message's run: `queued` when it starts now, `pending` while "
                              "it waits for the session's runs before it.")


@extend_schema_field({
    "type": "object", "additionalProperties": True,
    "description": "By type: run.status `{status, turn, error?}`; message.created `{id, seq, "
                   "role, content}` (`content` as the messages route answers it), and for the "
                   "answer of a turn its `turn` and `call`: `{turn, input_tokens, "
                   "cache_read_tokens, cache_write_tokens, cache_read_ratio, "
                   "predicted_cached_tokens}`, the cache tokens the provider reported (the ratio "
                   "of cache reads to all input tokens) next to the cached prefix the inspector "
                   "predicted when the call was sent (null for calls sent before it was kept); "
                   "tool.result "
                   "`{tool_use_id, name, is_error}`; todos.updated `{todos}`; approval.requested "
                   "`{pending}`; tool_results.requested `{tool_calls: [{tool_use_id, name}], "
                   "expires_at}`; tool_results.submitted `{tool_use_ids, remaining}`; "
                   "tool_results.expired `{tool_use_ids}`; model.failed `{code, provider, "
                   "status, message}` (the provider's whole message)."})
class EventDataField(serializers.JSONField):
    pass


class RunEventOutput(serializers.ModelSerializer):
    # A declared field, which DRF's metaclass takes off the class: ``.data`` stays the property.
    data = EventDataField(read_only=True)  # type: ignore[assignment]

    class Meta:
        model = RunEvent
        fields = ["seq", "type", "data", "created_at"]
        read_only_fields = fields


_CREATED_AT = serializers.DateTimeField(read_only=True)


def event_output(event: RunEvent) -> dict[str, Any]:
    """What :class:`RunEventOutput` makes of ``event``, without a serializer per event (an
    event stream renders a few a second for each of its thousand streams)."""
    return {"seq": event.seq, "type": event.type, "data": event.data,
            "created_at": _CREATED_AT.to_representation(event.created_at)}


class RunEventPage(serializers.Serializer):
    results = RunEventOutput(many=True)
    next_after = serializers.IntegerField()


class FileOutput(serializers.Serializer):
    path = serializers.CharField()
    size = serializers.IntegerField(help_text="In UTF-8 bytes.")
    updated_at = serializers.DateTimeField()


class FileContentOutput(serializers.Serializer):
    path = serializers.CharField()
    content = serializers.CharField()
