"""harness.providers.counting: a request counted by its provider where it can, else by the
tokenizer."""

from __future__ import annotations

from harness.errors import ProviderUnavailable
from harness.messages import Message, Request
from harness.providers.counting import count_request
from harness.tokens.base import ESTIMATE, Estimate
from harness.tokens.tokenizers import tokenizer_for
from tests.support.harness import Counting


def test_count_request_prefers_the_providers_counter_then_the_tokenizer():
    request = Request(model="claude-sonnet-4-5", messages=(Message.user("hello there"),))
    claude = tokenizer_for("anthropic:claude-sonnet-4-5")
    assert count_request(request, tokenizer=claude, provider=Counting(1234)) == (1234, "provider")
    assert count_request(request, tokenizer=claude) == (claude.request(request), "tokenizer")
    failing = Counting(ProviderUnavailable("down"))
    assert count_request(request, tokenizer=claude, provider=failing) == (
        claude.request(request), "tokenizer")
    assert count_request(request, tokenizer=Estimate()) == (ESTIMATE.request(request), "estimate")
