"""harness.providers.models: context windows by model, longest prefix first."""

from __future__ import annotations

import pytest

from harness.errors import UnknownModel
from harness.providers.models import DEFAULT_WINDOWS, context_window


@pytest.mark.parametrize(("model", "window"), [
    ("anthropic:claude-sonnet-4-5-20250929", 200_000),
    ("anthropic:some-future-model", DEFAULT_WINDOWS["anthropic"]),
    ("openai:gpt-4o-2024-08-06", 128_000),
    ("openai:gpt-4.1-mini", 1_047_576),
    ("openai:gpt-4-turbo", 128_000),
    ("openai:gpt-4", 8_192),
    ("openai:llama3:8b", DEFAULT_WINDOWS["openai"]),
    ("scripted:demo", 32_000),
])
def test_known_models_and_provider_defaults(model, window):
    assert context_window(model) == window


def test_a_model_without_a_provider_is_refused():
    with pytest.raises(UnknownModel):
        context_window("claude-sonnet-4-5")
