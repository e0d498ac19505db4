"""The context length an OpenAI-compatible server reports for a model it serves, remembered a while.

A team's own server (vLLM, the llama.cpp server) serves a model hango's table does not know, and
often a shorter window than the model has. Its ``GET <base>/models`` says: vLLM's
``max_model_len``, the llama.cpp server's ``meta.n_ctx`` (its ``n_ctx_train`` is the model's
trained window, taken only when no served one is given); llama-cpp-python and Ollama report
none. The answer is kept per base URL for :data:`TTL` seconds (a failure too), so a server is
asked at most once a TTL per process, with a short timeout: a slow or absent answer costs one
short wait, and the window falls back to the table's guess.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from harness.providers import split_model
from harness.providers.base import OPENAI_API_URL, ProviderSettings
from harness.providers.models import known_window

TTL = 300.0  # seconds an answer (or its absence) is kept
TIMEOUT = 2.0  # seconds the server is given to answer
# The keys a model's entry may state its window under, the served one first.
_KEYS: tuple[tuple[str, ...], ...] = (("max_model_len",), ("context_length",),
                                      ("meta", "n_ctx"), ("meta", "n_ctx_train"))

_lock = threading.Lock()
_known: dict[str, tuple[float, Mapping[str, int]]] = {}


def window_reported(model: str, settings: ProviderSettings, *,
                    agent_window: int | None) -> int | None:
    """The window ``model``'s server reports, when it is asked: an ``openai:`` model the table
    does not know, on a server of the team's own (a base URL is set), whose agent sets none."""
    base = own_server(model, settings)
    if base is None or agent_window is not None:
        return None
    return served_window(base, split_model(model)[1], api_key=settings.openai_api_key
                         or os.environ.get("OPENAI_API_KEY"))


def own_server(model: str, settings: ProviderSettings) -> str | None:
    """The base URL of the team's own server that serves ``model``, if it is one: an
    ``openai:`` model the table does not know, at the base URL the operator set (not OpenAI's).
    Only the operator sets it (``OPENAI_BASE_URL``), never a tenant, so it may be a private
    address, as a model server beside hango usually is; anything else is not asked."""
    provider = split_model(model)[0]
    base = settings.openai_base_url or os.environ.get("OPENAI_BASE_URL")
    if provider != "openai" or not base or base.rstrip("/") == OPENAI_API_URL \
            or known_window(model)[1]:
        return None
    return base


def served_window(base_url: str, model: str, *, api_key: str | None = None,
                  clock: Callable[[], float] = time.monotonic) -> int | None:
    """The window the server at ``base_url`` reports for ``model`` (None: it reports none, or
    did not answer in time)."""
    now = clock()
    with _lock:
        kept = _known.get(base_url)
    if kept is None or now - kept[0] > TTL:
        kept = (now, _ask(base_url, api_key))
        with _lock:
            _known[base_url] = kept
    return kept[1].get(model)


def forget() -> None:
    """Drop every remembered answer (tests, and a process told its servers changed)."""
    with _lock:
        _known.clear()


def _ask(base_url: str, api_key: str | None) -> Mapping[str, int]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx2.get(base_url.rstrip("/") + "/models", headers=headers,
                              timeout=TIMEOUT)
        entries = response.json().get("data") if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError, AttributeError):
        return {}
    if not isinstance(entries, list):
        return {}
    return {entry["id"]: window for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("id"), str)
            and (window := _window(entry)) is not None}


def _window(entry: dict[str, Any]) -> int | None:
    for path in _KEYS:
        value: Any = entry
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
