"""The output shape of a snapshot's ``diff`` (``?against=``): the next call against an earlier
one, part by part, and what the prompt cache did for that call (:mod:`inspector.diffs`)."""

from __future__ import annotations

from rest_framework import serializers

DIFF_STATUSES = ("added", "removed", "changed", "same")


class SentCallCacheOutput(serializers.Serializer):
    turn = serializers.IntegerField()
    input_tokens = serializers.IntegerField(help_text="Its input the cache did not serve, as "
                                                      "the provider reported it.")
    cache_read_tokens = serializers.IntegerField()
    cache_write_tokens = serializers.IntegerField()
    cache_read_ratio = serializers.FloatField(allow_null=True, help_text=(
        "cache_read_tokens over all its input tokens (uncached, read, written); null when the "
        "provider reported none."))
    predicted_cached_tokens = serializers.IntegerField(help_text=(
        "The cached prefix's tokens the inspector predicted when the call was sent."))


class DiffAgainstOutput(serializers.Serializer):
    ref = serializers.CharField(help_text="`<run id>:<turn>`: the earlier call, as `against` "
                                          "names it.")
    run = serializers.UUIDField()
    turn = serializers.IntegerField()
    call = SentCallCacheOutput(help_text=(
        "What the prompt cache did for that call: the provider's figures next to the "
        "inspector's prediction (the same as its answer's `message.created` event)."))


class PartDiffOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The part id, as in the snapshot's groups.")
    status = serializers.ChoiceField(choices=DIFF_STATUSES, help_text=(
        "`added`: not sent by the earlier call; `removed`: sent then, not now; `changed`: sent "
        "both times with other content; `same`: sent both times as it was."))
    tokens = serializers.IntegerField(help_text="Its tokens now (0 when removed).")
    tokens_before = serializers.IntegerField(help_text="Its tokens then (0 when added).")
    delta = serializers.IntegerField(help_text="tokens - tokens_before.")


class DiffTotalsOutput(serializers.Serializer):
    before = serializers.IntegerField(help_text="The earlier call's parts' tokens.")
    after = serializers.IntegerField(help_text="The next call's parts' tokens.")
    delta = serializers.IntegerField()


class CachedPrefixOutput(serializers.Serializer):
    before = serializers.IntegerField(help_text="The tokens of the earlier call's cached "
                                                "prefix, as predicted when it was sent.")
    after = serializers.IntegerField(help_text="The next call's.")


class CacheBreakOutput(serializers.Serializer):
    part = serializers.CharField(help_text="The first part of the earlier call's cached prefix "
                                           "that the next call does not send as it was, where "
                                           "it was: from it on, the cache is missed.")
    status = serializers.ChoiceField(choices=DIFF_STATUSES, help_text=(
        "How it differs: `changed`, `removed`, `added` (a new part in its place), or `same` "
        "(sent as it was, but no longer in the cached prefix, or not at its place)."))
    index = serializers.IntegerField(help_text="Its position in the earlier call's prefix "
                                               "(the tools, then the system parts).")


class DiffOutput(serializers.Serializer):
    against = DiffAgainstOutput()
    parts = PartDiffOutput(many=True, help_text="The next call's parts in order, then the "
                                                "earlier call's parts it does not send.")
    totals = DiffTotalsOutput()
    cached_prefix = CachedPrefixOutput()
    cache_break = CacheBreakOutput(allow_null=True, help_text=(
        "Null when the earlier call's cached prefix is sent whole, as it was (or it had none)."))
