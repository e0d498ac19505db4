"""The token count endpoints a team's own OpenAI-compatible server has, found once a while.

OpenAI's input-token count endpoint is OpenAI's; the servers teams run have their own, each in
its own shape, at the server's root (the base URL without its ``/v1``):

- **vLLM**: ``POST /tokenize`` with the chat ``messages`` and ``tools`` applies the model's
  chat template and answers ``{count, max_model_len, tokens}``; ``POST /detokenize``
  ``{model, tokens}`` gives the templated prompt back as text (``{prompt}``); ``/tokenize`` with
  a ``prompt`` counts a text.
- **The llama.cpp server**: ``POST /apply-template`` ``{messages, tools}`` answers the templated
  prompt (``{prompt}``), ``POST /tokenize`` ``{content}`` its tokens (``{tokens}``).
- **llama-cpp-python**: ``POST /extras/tokenize/count`` ``{input, model}`` counts a text
  (``{count}``; ``/extras/tokenize`` lists the tokens); it applies no template on request, so
  what its chat template drops cannot be seen.

Ollama and LiteLLM's proxy have none that counts with the served model's template (LiteLLM's
``/utils/token_counter`` counts with a tokenizer of its own choosing): they are asked nothing
and the caller falls back. Which of these a server has is asked once per base URL and kept
:data:`TTL` seconds (its absence too), each ask with a short timeout, as
:mod:`harness.providers.served_window` does with the window; only the operator's base URL is
asked (:func:`~harness.providers.served_window.own_server`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2

from harness.errors import ProviderError
from harness.providers import split_model
from harness.providers.base import ProviderSettings
from harness.providers.served_window import own_server

TTL = 300.0  # seconds a finding (or the absence of an endpoint) is kept
TIMEOUT = 2.0  # seconds the server is given to answer a probe
COUNT_TIMEOUT = 10.0  # seconds for one count (a long prompt takes a while to template)

Dialect = Literal["vllm", "llama.cpp", "llama-cpp-python"]
# The endpoints each dialect is counted with, as the snapshot names them.
ENDPOINTS: Mapping[Dialect, tuple[str, ...]] = {
    "vllm": ("/tokenize", "/detokenize"),
    "llama.cpp": ("/apply-template", "/tokenize"),
    "llama-cpp-python": ("/extras/tokenize/count",),
}
_PROBE = [{"role": "user", "content": "hi"}]


class ServerCountError(ProviderError):
    """The server's count endpoint did not answer as its dialect does."""


@dataclass(frozen=True, kw_only=True)
class Templated:
    """A request as the server templates it: its tokens, and the prompt as text."""

    tokens: int
    prompt: str


@dataclass(frozen=True, kw_only=True)
class ServerCounter:
    """A server's count endpoints for one model."""

    root: str  # the server's root URL, its endpoints below it
    dialect: Dialect
    model: str
    api_key: str | None = field(default=None, repr=False)
    # Tokens the text endpoint adds to any text (llama-cpp-python adds the BOS to each).
    added: int = 0

    @property
    def endpoints(self) -> tuple[str, ...]:
        return ENDPOINTS[self.dialect]

    @property
    def templates(self) -> bool:
        """It applies the chat template on request: what the template drops can be seen."""
        return self.dialect != "llama-cpp-python"

    def prompt(self, params: Mapping[str, Any]) -> Templated:
        """The chat request's ``messages`` and ``tools`` (as the adapter sends them:
        :func:`harness.providers.openai_chat.map_request`) templated by the server."""
        chat = {"messages": params["messages"]}
        if "tools" in params:
            chat["tools"] = params["tools"]
        if self.dialect == "vllm":
            answer = self._post("/tokenize", {"model": self.model, **chat,
                                              "add_generation_prompt": True})
            tokens = _field(answer, "tokens", list)
            text = _field(self._post("/detokenize", {"model": self.model, "tokens": tokens}),
                          "prompt", str)
            return Templated(tokens=_field(answer, "count", int), prompt=text)
        if self.dialect == "llama.cpp":
            text = _field(self._post("/apply-template", chat), "prompt", str)
            return Templated(tokens=len(_field(self._post("/tokenize", {"content": text}),
                                               "tokens", list)), prompt=text)
        raise ServerCountError(f"{self.dialect} applies no chat template on request",
                               provider="openai")

    def text(self, text: str) -> int:
        """``text``'s tokens by the server's tokenizer, with nothing added around it."""
        count: int
        match self.dialect:
            case "vllm":
                count = _field(self._post("/tokenize", {
                    "model": self.model, "prompt": text, "add_special_tokens": False}),
                    "count", int)
            case "llama.cpp":
                count = len(_field(self._post("/tokenize", {"content": text}), "tokens", list))
            case "llama-cpp-python":
                count = _field(self._post("/extras/tokenize/count",
                                          {"input": text, "model": self.model}), "count", int)
        return max(0, count - self.added)

    def _post(self, path: str, body: Mapping[str, Any], *,
              timeout: float = COUNT_TIMEOUT) -> Any:
        return _post(self.root + path, body, api_key=self.api_key, timeout=timeout)


def server_counter(model: str, settings: ProviderSettings) -> ServerCounter | None | Literal[
        "none"]:
    """The count endpoints of the server ``model`` is served from: None when it is no team's
    own server (:func:`~harness.providers.served_window.own_server`: OpenAI's count endpoint is
    the provider's), ``"none"`` when it is one with none of them."""
    base = own_server(model, settings)
    if base is None:
        return None
    found = detected(base, split_model(model)[1], api_key=settings.openai_api_key
                     or os.environ.get("OPENAI_API_KEY"))
    return "none" if found is None else found


_lock = threading.Lock()
_known: dict[str, tuple[float, tuple[Dialect, int] | None]] = {}


def detected(base_url: str, model: str, *, api_key: str | None = None,
             clock: Callable[[], float] = time.monotonic) -> ServerCounter | None:
    """The count endpoints of the server at ``base_url`` for ``model`` (None: it has none the
    module knows, or did not answer in time), asked once a TTL."""
    root = server_root(base_url)
    now = clock()
    with _lock:
        kept = _known.get(base_url)
    if kept is None or now - kept[0] > TTL:
        kept = (now, _probe(root, model, api_key))
        with _lock:
            _known[base_url] = kept
    if kept[1] is None:
        return None
    dialect, added = kept[1]
    return ServerCounter(root=root, dialect=dialect, model=model, api_key=api_key, added=added)


def forget() -> None:
    """Drop every finding (tests, and a process told its servers changed)."""
    with _lock:
        _known.clear()


def server_root(base_url: str) -> str:
    """The server's root: its OpenAI-compatible routes are under ``/v1``, the rest are not."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


def _probe(root: str, model: str, api_key: str | None) -> tuple[Dialect, int] | None:
    """Which dialect's count endpoint answers as documented, asked in an order where no
    server's endpoint passes for another's (the llama.cpp server's ``/tokenize`` answers a chat
    body with no ``count``), and what the text endpoint adds to an empty text."""
    def ask(path: str, body: Mapping[str, Any]) -> Any:
        try:
            return _post(root + path, body, api_key=api_key, timeout=TIMEOUT)
        except ServerCountError:
            return None

    if isinstance(_get(ask("/apply-template", {"messages": _PROBE}), "prompt", str), str):
        return "llama.cpp", 0
    if isinstance(_get(ask("/tokenize", {"model": model, "messages": _PROBE}), "count", int),
                  int):
        return "vllm", 0
    empty = _get(ask("/extras/tokenize/count", {"input": "", "model": model}), "count", int)
    if isinstance(empty, int):
        return "llama-cpp-python", max(0, empty)
    return None


def _post(url: str, body: Mapping[str, Any], *, api_key: str | None, timeout: float) -> Any:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx2.post(url, json=dict(body), headers=headers, timeout=timeout)
    except httpx2.HTTPError as exc:
        raise ServerCountError(f"the count endpoint could not be reached: {exc!r}",
                               provider="openai") from exc
    if response.status_code != 200:
        raise ServerCountError(f"the count endpoint answered HTTP {response.status_code}",
                               status=response.status_code, provider="openai")
    try:
        return response.json()
    except ValueError as exc:
        raise ServerCountError("the count endpoint answered no JSON",
                               provider="openai") from exc


def _get(answer: Any, key: str, kind: type) -> Any:
    value = answer.get(key) if isinstance(answer, dict) else None
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def _field(answer: Any, key: str, kind: type) -> Any:
    value = _get(answer, key, kind)
    if value is None:
        raise ServerCountError(f"the count endpoint's answer has no {key}", provider="openai")
    return value
