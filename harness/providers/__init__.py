"""Provider adapters (``anthropic``, ``openai_compat``, ``scripted``) behind one protocol
(:mod:`harness.providers.base`), and the registry that picks one for a model string."""

from harness.providers.registry import (
    PROVIDERS,
    ProviderFactory,
    ProviderRegistry,
    registry,
    resolve_provider,
    split_model,
)

__all__ = ["PROVIDERS", "ProviderFactory", "ProviderRegistry", "registry", "resolve_provider",
           "split_model"]
