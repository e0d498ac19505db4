"""Provider adapters and the one place a ``<provider>:<model>`` string becomes a provider."""

from __future__ import annotations

from harness.errors import UnknownModel
from harness.providers.base import Provider, ProviderSettings

PROVIDERS = ("anthropic", "openai", "scripted")


def split_model(model: str) -> tuple[str, str]:
    provider, sep, name = model.partition(":")
    if not sep or not name or provider not in PROVIDERS:
        raise UnknownModel(
            f"model {model!r} is not '<provider>:<model>' with provider one of {PROVIDERS}")
    return provider, name


def resolve_provider(model: str, settings: ProviderSettings) -> tuple[Provider, str]:
    """The provider for ``model`` and the model name to send it."""
    provider, name = split_model(model)
    match provider:
        case "scripted":
            from harness.providers.scripted import named_script

            return named_script(name, delay_ms=settings.scripted_delay_ms), name
        case "anthropic":
            from harness.providers.anthropic import AnthropicProvider

            return AnthropicProvider(settings=settings), name
        case "openai":
            from harness.providers.openai_compat import OpenAICompatProvider

            return OpenAICompatProvider(settings=settings), name
    raise UnknownModel(f"no adapter for provider {provider!r}")
