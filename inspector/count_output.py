"""The output shape of a snapshot's ``provider_count``: how ``?counted=provider`` was answered
(:class:`harness.served_snapshot.CountReport`)."""

from __future__ import annotations

from typing import Any, get_args

from rest_framework import serializers

from harness.served_snapshot import CountReport
from harness.tokens.base import Counted

COUNTERS = list(get_args(Counted))


class ProviderCountOutput(serializers.Serializer):
    counter = serializers.ChoiceField(choices=COUNTERS, allow_null=True, help_text=(
        "Who counted the totals: `vllm` (its `/tokenize` with the chat messages and tools, the "
        "model's chat template applied), `llama.cpp` (the llama.cpp server's `/apply-template` "
        "then `/tokenize`), `llama-cpp-python` (its `/extras/tokenize/count` per part, with the "
        "tokenizer's framing: it templates nothing on request), `provider` (Anthropic's "
        "count_tokens, OpenAI's input-token count); null: none of them could, the counts are "
        "the tokenizer's (`fallback` says why)."))
    endpoints = serializers.ListField(child=serializers.CharField(), help_text=(
        "The model server's endpoints asked (found once per server, kept 5 minutes)."))
    template_checked = serializers.BooleanField(help_text=(
        "The server's templated prompt was seen: each sent part says whether the template "
        "dropped it (`dropped_by_template`)."))
    fallback = serializers.CharField(allow_null=True, help_text=(
        "What was not counted as asked and what counted it instead (a server without a count "
        "endpoint, one that failed, one that applies no template on request); null when "
        "everything was."))


def provider_count_json(report: CountReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {"counter": report.counter, "endpoints": list(report.endpoints),
            "template_checked": report.template_checked, "fallback": report.fallback}
