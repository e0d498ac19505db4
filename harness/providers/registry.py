"""The one registry that turns a ``<provider>:<model>`` string into a provider adapter.

The built-in adapters are registered by provider name. A caller that needs another provider
for a model string — a test recording requests, a benchmark timing calls — adds an entry for
that exact model (or replaces a provider's) with :meth:`ProviderRegistry.serving`, instead of
patching whoever resolves models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache

from harness.errors import UnknownModel
from harness.providers.base import Provider, ProviderSettings

PROVIDERS = ("anthropic", "openai", "scripted")

# (model name without the provider, settings) -> the provider that serves it
ProviderFactory = Callable[[str, ProviderSettings], Provider]


def split_model(model: str) -> tuple[str, str]:
    provider, sep, name = model.partition(":")
    if not sep or not name or provider not in PROVIDERS:
        raise UnknownModel(
            f"model {model!r} is not '<provider>:<model>' with provider one of {PROVIDERS}")
    return provider, name


class ProviderRegistry:
    """Factories by provider name (``"anthropic"``) or by exact model (``"scripted:demo"``);
    an exact model's entry wins over its provider's."""

    def __init__(self) -> None:
        self._factories: dict[str, ProviderFactory] = {}

    def add(self, name: str, factory: ProviderFactory) -> None:
        if name in self._factories:
            raise ValueError(f"{name!r} is served already; use serving() to replace it")
        self._factories[name] = factory

    def factory(self, name: str) -> ProviderFactory | None:
        return self._factories.get(name)

    @contextmanager
    def serving(self, name: str, factory: ProviderFactory) -> Iterator[None]:
        """``factory`` serves ``name`` inside the block; whatever served it before, after."""
        previous = self._factories.get(name)
        self._factories[name] = factory
        try:
            yield
        finally:
            if previous is None:
                del self._factories[name]
            else:
                self._factories[name] = previous

    def resolve(self, model: str, settings: ProviderSettings) -> tuple[Provider, str]:
        """The provider for ``model`` and the model name to send it."""
        provider, name = split_model(model)
        factory = self._factories.get(model) or self._factories.get(provider)
        if factory is None:
            raise UnknownModel(f"no adapter for provider {provider!r}")
        return factory(name, settings), name


def _scripted(name: str, settings: ProviderSettings) -> Provider:
    from harness.providers.scripted import named_script

    return named_script(name, delay_ms=settings.scripted_delay_ms,
                        word_delay_ms=settings.scripted_word_delay_ms)


# The SDK adapters hold an HTTP client whose TLS setup takes tens of milliseconds; a client is
# thread-safe and depends on the settings alone, so one per distinct settings serves every run.
@lru_cache(maxsize=16)
def _anthropic_for(settings: ProviderSettings) -> Provider:
    from harness.providers.anthropic import AnthropicProvider  # its SDK only when used

    return AnthropicProvider(settings=settings)


@lru_cache(maxsize=16)
def _openai_for(settings: ProviderSettings) -> Provider:
    from harness.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(settings=settings)


def _anthropic(name: str, settings: ProviderSettings) -> Provider:
    return _anthropic_for(settings)


def _openai(name: str, settings: ProviderSettings) -> Provider:
    return _openai_for(settings)


registry = ProviderRegistry()
registry.add("scripted", _scripted)
registry.add("anthropic", _anthropic)
registry.add("openai", _openai)


def resolve_provider(model: str, settings: ProviderSettings) -> tuple[Provider, str]:
    """The provider for ``model`` from the process's registry, and the model name to send it."""
    return registry.resolve(model, settings)
