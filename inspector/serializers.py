"""Explicit input and output shapes for the context inspector's snapshot, preview and try routes
(the overrides' own routes: :mod:`inspector.override_serializers`)."""

from __future__ import annotations

from typing import get_args

from rest_framework import serializers

from context.models import OverrideAction
from hango_api import fields as strict
from hango_api.inputs import Input
from harness.approvals import CallOutlook
from harness.tokens.base import Counted
from inspector.cost import NextCallCostOutput
from inspector.count_output import ProviderCountOutput
from inspector.diff_output import DiffOutput
from inspector.override_serializers import MAX_OVERRIDES, OverrideInput
from inspector.settings_output import ModelSettingsOutput
from runs.intake.content_fields import UserContentField
from runs.models import ACTIVE_RUN_STATUSES

COUNTED = list(get_args(Counted))


class ImageOutput(serializers.Serializer):
    media_type = serializers.CharField()
    bytes = serializers.IntegerField(help_text="Its size decoded.")
    width = serializers.IntegerField(allow_null=True, help_text="In pixels, read from its "
                                                                "header; null when unreadable.")
    height = serializers.IntegerField(allow_null=True)
    tokens = serializers.IntegerField(help_text=(
        "Its share of the part's `tokens` (Anthropic's rule: about width × height / 750); 0 "
        "when it is sent as a line of text, which the part's text counts."))
    sent = serializers.BooleanField(help_text=(
        "Sent as an image; false: as a line of text saying it was not shown (OpenAI's chat "
        "wire takes no image in a tool result)."))
    line = serializers.CharField(help_text="The above in one line, as the panel shows it.")


class PartOutput(serializers.Serializer):
    id = serializers.CharField(help_text="`system:<contributor>`, `tool:<name>`, "
                                         "`message:<seq>`, `summary`, or `repair:<n>` for a "
                                         "message made up for this request (not overridable).")
    kind = serializers.ChoiceField(choices=["system", "tool", "message", "summary"])
    # A declared field: DRF takes it off the class, so Field.label (the attribute) is untouched.
    label = serializers.CharField()  # type: ignore[assignment]
    preview = serializers.CharField(help_text="The first 200 characters, whitespace folded.")
    tokens = serializers.IntegerField(help_text="The part's content; framing is counted apart.")
    included = serializers.BooleanField(help_text="False when an override excludes it.")
    override = serializers.ChoiceField(choices=OverrideAction.choices, allow_null=True)
    stale = serializers.BooleanField(help_text="An override for a part that is not in the "
                                               "request: kept, doing nothing until it returns.")
    paired_with = serializers.ListField(child=serializers.CharField(),
                                        help_text="Messages sent or left out with this one.")
    cached_prefix = serializers.BooleanField(
        help_text="Before the prompt cache's breakpoint: changing it misses the cache.")
    summarized = serializers.BooleanField(
        help_text="A message the compacted call's summary stands for: not sent itself.")
    counted = serializers.ChoiceField(
        choices=COUNTED, help_text="How `tokens` was counted: `tokenizer`, the model family's "
        "tokenizer over the exact text; `rule`, the provider's published rule for how it "
        "renders the part (OpenAI's tool definitions); `estimate`, the estimator, or a "
        "tokenizer over a form the provider renders differently (Claude's tool definitions); "
        "`vllm`, `llama.cpp`, `llama-cpp-python`: the model server's own tokenizer, by its "
        "text endpoint (`?counted=provider`).")
    images = ImageOutput(many=True, help_text=(
        "A message's tool results' images, one each (counted in `tokens`); empty for others."))
    dropped_by_template = serializers.BooleanField(allow_null=True, help_text=(
        "With `?counted=provider` on a model server that templates on request (vLLM, the "
        "llama.cpp server): true when its chat template left the part out of the prompt (a "
        "system block whose text, a tool whose name or description, a message whose text is "
        "not in it); not in the parts that sum to the total. Null when not known (no "
        "templated prompt seen, or the part is not sent)."))


class TotalsOutput(serializers.Serializer):
    before = serializers.IntegerField(help_text="The request without the overrides.")
    after = serializers.IntegerField(help_text="The request the next call sends.")


class OverrideSummaryOutput(serializers.Serializer):
    active = serializers.IntegerField()
    stale = serializers.ListField(child=serializers.CharField())


class SummarizedOutput(serializers.Serializer):
    # Two ends, `from` a keyword: declared as fields by name.
    through = serializers.CharField(help_text="The last message part the summary stands for.")


SummarizedOutput._declared_fields["from"] = serializers.CharField(
    help_text="The first message part the summary stands for.")


class CompactionOutput(serializers.Serializer):
    tokens = serializers.IntegerField(help_text=(
        "The request as summarization measured it: the tokenizer's count, the provider's "
        "counter between 90 and 125% of the budget (as a run measures it)."))
    budget = serializers.IntegerField(help_text="Over it, the call is compacted first.")
    summarized = SummarizedOutput(allow_null=True, help_text=(
        "The messages the summary stands for (their parts say `summarized`); null when the "
        "call is not compacted."))
    summary = serializers.ChoiceField(choices=["reused", "extended", "created"], allow_null=True,
                                      help_text="How the summary comes about: the stored one "
                                                "reused, or a summarizer call first.")
    summary_pending = serializers.BooleanField(help_text=(
        "The summary is made when the call is sent: the `summary` part shows it empty, and it "
        "may take up to `summary_max_tokens` more."))
    summary_max_tokens = serializers.IntegerField()
    would_fail = serializers.CharField(allow_null=True, help_text=(
        "Why a run would stop here with `context_overflow` instead of calling the model (too "
        "long for the window even compacted); null when it calls it."))


class RunBasisOutput(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=[s.value for s in ACTIVE_RUN_STATUSES])
    turn = serializers.IntegerField(help_text="The turns it has checkpointed.")


class ForeseenCallOutput(serializers.Serializer):
    tool_use_id = serializers.CharField()
    name = serializers.CharField()
    outlook = serializers.ChoiceField(choices=list(get_args(CallOutlook)), help_text=(
        "`ran` before the pause, `answered` by its decision (reject, respond) or the caller's "
        "result: its result is in the part. Not known until the batch finishes: `will_run` "
        "(approved or edited), `awaiting_decision`, `awaiting_result` (the caller's), "
        "`offloaded` (a respond text too long for the context, sent as a pointer to a file)."))


class McpServerOutput(serializers.Serializer):
    server = serializers.CharField(help_text="The server's name (its tools' prefix).")
    listing = serializers.ChoiceField(choices=["run", "cache"], help_text=(
        "Where its tools come from: `run`, the run's own listing, kept in its checkpoint; "
        "`cache`, the tenant's last listing (a run not started lists anew at its start)."))
    status = serializers.ChoiceField(
        choices=["listed", "unreachable", "never_listed"], help_text=(
            "`unreachable`: the last attempt failed (`error` says why; the tools shown are "
            "the last listing's, if any); `never_listed`: no listing yet (no tools shown)."))
    listed_at = serializers.DateTimeField(allow_null=True)
    age_seconds = serializers.IntegerField(allow_null=True, help_text="The listing's age.")
    error = serializers.CharField(help_text="Why the server could not be used, or empty.")
    tools = serializers.IntegerField(help_text="Its tools in this request (filters applied).")


class SnapshotOutput(serializers.Serializer):
    system = PartOutput(many=True)
    tools = PartOutput(many=True)
    messages = PartOutput(many=True)
    totals = TotalsOutput(source="*")
    counted = serializers.ChoiceField(choices=COUNTED, help_text=(
        "How the totals were counted (`provider_count` says how `?counted=provider` was "
        "answered)."))
    tokenizer = serializers.CharField(help_text="The tokenizer the parts were counted with.")
    framing = serializers.IntegerField(help_text="Tokens the provider adds around the parts: "
                                                 "included parts + framing = totals.after.")
    framing_counted = serializers.ChoiceField(
        choices=COUNTED, help_text="How the framing was counted: `rule` (OpenAI's published "
        "message and function framing), `estimate`, or `provider` (what the provider's total "
        "leaves over the parts).")
    would_compact = serializers.BooleanField(
        help_text="The next call is compacted first: the messages shown start with the "
                  "`summary` part, the ones it stands for marked `summarized` (see `compaction`).")
    cache_breakpoint = serializers.IntegerField(
        allow_null=True, help_text="The index of the last system part of the prompt cache's "
                                   "prefix; null when nothing is marked.")
    cache_prefix_tokens = serializers.IntegerField(
        allow_null=True, help_text="That prefix's tokens (the tools and the system parts up to "
                                   "the breakpoint), where the model has a known minimum.")
    cache_minimum = serializers.IntegerField(
        allow_null=True, help_text="The fewest tokens the model's prompt cache keeps: a "
                                   "shorter prefix is not marked, as the provider would cache "
                                   "none of it. Null when not known.")
    overrides = OverrideSummaryOutput(source="*")
    context_window = serializers.IntegerField(help_text="As `model_settings` has it.")
    model_settings = ModelSettingsOutput(help_text="What the agent's calls ask of the model.")
    cost = NextCallCostOutput(allow_null=True, help_text="What the request's input would cost, "
                              "none to all of its cache prefix read (inspector/cost.py); null "
                              "for a model with no known price.")
    run = RunBasisOutput(allow_null=True, help_text=(
        "The session's active run whose next call this is, assembled from its last checkpoint "
        "(its todos and state; a batch paused for approval finished first, as far as it is "
        "known); null: the first call of a new run."))
    pending_calls = ForeseenCallOutput(many=True, help_text=(
        "The calls of the batch the run paused in, in call order: what each one's result in "
        "`batch_part` will be. Empty when nothing is paused."))
    batch_part = serializers.CharField(allow_null=True, help_text=(
        "The message part holding the paused batch's results, not stored until the batch "
        "finishes; a result not known yet (see `pending_calls`) is empty in it."))
    compaction = CompactionOutput(allow_null=True, help_text=(
        "Summarization's measure of the next call; null when the agent does not summarize."))
    queued = PartOutput(many=True, help_text=(
        "Messages queued behind the active run (`multitask: enqueue`): each joins the history "
        "when the runs before it end; not in this request, not in the totals."))
    would_fail = serializers.CharField(allow_null=True, help_text=(
        "Why a run would stop here instead of making this call, in the run's own words: a "
        "batch paused for approval that no longer matches the history (`invalid_state`), or a "
        "request too long for the window even compacted (`context_overflow`, as in "
        "`compaction.would_fail`). Null when the run makes the call."))
    mcp_servers = McpServerOutput(many=True, help_text=(
        "The agent's MCP servers: where the tools shown come from and how old that listing "
        "is. The inspector never calls a server."))
    provider_count = ProviderCountOutput(allow_null=True, help_text=(
        "With `?counted=provider`: who counted, with which endpoints, and any fallback; null "
        "when not asked."))
    diff = DiffOutput(required=False, help_text=(
        "With `?against=`: the next call compared with the earlier one, part by part. Absent "
        "otherwise."))


class PreviewInput(Input):
    overrides = strict.ListField(child=OverrideInput(), max_length=MAX_OVERRIDES,
                                 required=False,
                                 help_text="The agent's and the session's overrides together, "
                                           "as the two PUTs would take them; absent, the "
                                           "stored ones apply.")
    message = UserContentField(required=False, help_text=(
        "A user message the next call would carry as if it were posted now (not posted): what "
        "compaction and a repaired call would make of it shows. 409 while a run is active "
        "(a message posted then waits behind it)."))


class PartContentOutput(serializers.Serializer):
    id = serializers.CharField()
    content = serializers.CharField(help_text="Exactly as the next call sends it (a message's "
                                              "content blocks and a tool's definition as JSON).")
    original = serializers.CharField(required=False,
                                     help_text="Its content before the replace override.")
    included = serializers.BooleanField()


class TryInput(Input):
    exclude = strict.ListField(child=strict.CharField(max_length=1_100), required=False,
                               max_length=MAX_OVERRIDES)
    replace = strict.DictField(child=strict.CharField(allow_blank=True, trim_whitespace=False),
                               required=False)
    message = strict.CharField(required=False, trim_whitespace=False, max_length=200_000,
                               help_text="Extra user text after the history.")


class TryOutput(serializers.Serializer):
    message = serializers.JSONField(help_text='{"role": "assistant", "content": [blocks]}; '
                                              "tool calls are returned, never run.")
    stop_reason = serializers.CharField()
    usage = serializers.JSONField()
