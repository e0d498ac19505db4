"""harness.providers.registry: built-in adapters by provider name, an exact model's entry over
its provider's, and entries a caller serves for a while and gives back."""

from __future__ import annotations

import pytest

from harness.errors import UnknownModel
from harness.providers import registry
from harness.providers.base import ProviderSettings
from harness.providers.registry import ProviderRegistry
from harness.providers.scripted import ConversationScript, ScriptedModel

SETTINGS = ProviderSettings()


def test_the_built_in_adapters_are_registered_by_provider_name():
    for name in ("scripted", "anthropic", "openai"):
        assert registry.factory(name) is not None
    provider, name = registry.resolve("scripted:demo", SETTINGS)
    assert isinstance(provider, ConversationScript) and name == "demo"


def test_an_exact_model_wins_over_its_provider_and_is_given_back_after():
    mine = ScriptedModel()
    with registry.serving("scripted:demo", lambda name, settings: mine):
        assert registry.resolve("scripted:demo", SETTINGS) == (mine, "demo")
        other, _ = registry.resolve("scripted:workload-2", SETTINGS)
        assert isinstance(other, ConversationScript)  # the provider's entry still serves the rest
    assert isinstance(registry.resolve("scripted:demo", SETTINGS)[0], ConversationScript)
    assert registry.factory("scripted:demo") is None


def test_serving_a_provider_replaces_it_for_the_block_only():
    builtin = registry.factory("scripted")
    mine = ScriptedModel()
    with registry.serving("scripted", lambda name, settings: mine):
        assert registry.resolve("scripted:anything", SETTINGS) == (mine, "anything")
    assert registry.factory("scripted") is builtin


def test_adding_twice_is_refused_and_an_unserved_provider_is_unknown():
    fresh = ProviderRegistry()
    fresh.add("scripted", lambda name, settings: ScriptedModel())
    with pytest.raises(ValueError, match="served already"):
        fresh.add("scripted", lambda name, settings: ScriptedModel())
    with pytest.raises(UnknownModel, match="no adapter for provider 'openai'"):
        fresh.resolve("openai:gpt-x", SETTINGS)
    with pytest.raises(UnknownModel):
        fresh.resolve("nope:x", SETTINGS)
