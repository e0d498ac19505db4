"""harness.providers.served_window: the window an OpenAI-compatible server reports for its
model (vLLM's and the llama.cpp server's ``/v1/models``), asked once a TTL per base URL."""

from __future__ import annotations

import pytest

from harness.model_settings import resolve
from harness.providers import served_window as sw
from harness.providers.base import ProviderSettings


@pytest.fixture(autouse=True)
def _forgotten():
    sw.forget()
    yield
    sw.forget()


def test_vllms_max_model_len_is_the_window_and_asked_once(server):
    server.reply(200, {"object": "list", "data": [
        {"id": "google/gemma-3-270m", "object": "model", "max_model_len": 32_768}]})

    assert sw.served_window(server.url, "google/gemma-3-270m", api_key="k") == 32_768
    assert sw.served_window(server.url, "google/gemma-3-270m") == 32_768
    assert sw.served_window(server.url, "another") is None

    [asked] = server.requests
    assert (asked.method, asked.path) == ("GET", "/models")
    assert asked.headers["authorization"] == "Bearer k"


def test_the_llama_cpp_servers_meta_and_a_later_ask_after_the_ttl(server):
    server.reply(200, {"data": [{"id": "gemma", "meta": {"n_ctx_train": 32_768}}]})
    server.reply(200, {"data": [{"id": "gemma", "meta": {"n_ctx": 8_192,
                                                         "n_ctx_train": 32_768}}]})
    now = [1000.0]

    assert sw.served_window(server.url, "gemma", clock=lambda: now[0]) == 32_768
    now[0] += sw.TTL + 1
    assert sw.served_window(server.url, "gemma", clock=lambda: now[0]) == 8_192  # served first
    assert len(server.requests) == 2


@pytest.mark.parametrize("answer", [(404, {"detail": "Not Found"}), (200, {"data": "x"}),
                                    (200, b"not json")])
def test_a_server_that_reports_none_gives_none_and_is_not_asked_again(server, answer):
    server.reply(*answer)
    assert sw.served_window(server.url, "m") is None
    assert sw.served_window(server.url, "m") is None
    assert len(server.requests) == 1


def test_nothing_listening_gives_none(closed_port_url):
    assert sw.served_window(closed_port_url, "m") is None


def test_only_an_unknown_openai_model_on_a_teams_server_without_an_agent_window_asks(server):
    server.reply(200, {"data": [{"id": "mine", "max_model_len": 16_384}]})
    own = ProviderSettings(openai_base_url=server.url)
    assert sw.window_reported("openai:gpt-4o", own, agent_window=None) is None
    assert sw.window_reported("openai:mine", own, agent_window=8_192) is None
    assert sw.window_reported("anthropic:mine", own, agent_window=None) is None
    assert sw.window_reported("openai:mine", ProviderSettings(), agent_window=None) is None
    assert server.requests == []

    window = sw.window_reported("openai:mine", own, agent_window=None)
    settings = resolve("openai:mine", server_window=window)
    assert (settings.context_window, settings.context_window_source) == (16_384, "server")
