"""harness.providers.served_count: which count endpoints a team's own server has (vLLM's,
the llama.cpp server's, llama-cpp-python's), found once a TTL per base URL, and each one asked
in its documented shape (tests/support/model_servers.py)."""

from __future__ import annotations

import pytest

from harness.model_settings import ModelSettingsOptions
from harness.providers import served_count as sc
from harness.providers.base import ProviderSettings
from tests.support.model_servers import ModelServer

CHAT = {"messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": "hello there"}],
        "tools": [{"type": "function", "function": {"name": "echo", "description": "says",
                                                    "parameters": {"type": "object"}}}]}


@pytest.fixture(autouse=True)
def _forgotten():
    sc.forget()
    yield
    sc.forget()


@pytest.fixture
def serve():
    servers: list[ModelServer] = []

    def start(dialect, **options) -> ModelServer:
        servers.append(ModelServer(dialect, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize(("dialect", "added"), [("vllm", 0), ("llama.cpp", 0),
                                                ("llama-cpp-python", 1)])
def test_each_servers_endpoints_are_found_once_a_ttl(serve, dialect, added):
    server = serve(dialect)
    now = [100.0]

    found = sc.detected(server.base_url, "served-model", clock=lambda: now[0])
    assert found is not None
    assert (found.root, found.dialect, found.added) == (server.url, dialect, added)
    asked = len(server.requests)
    assert sc.detected(server.base_url, "served-model", clock=lambda: now[0]) == found
    assert len(server.requests) == asked  # remembered: not asked again
    now[0] += sc.TTL + 1
    assert sc.detected(server.base_url, "served-model", clock=lambda: now[0]) == found
    assert len(server.requests) == 2 * asked


def test_a_server_without_any_is_asked_once_and_remembered(serve, closed_port_url):
    server = serve("none")
    assert sc.detected(server.base_url, "m") is None
    assert [path for path, _ in server.requests] == [
        "/apply-template", "/tokenize", "/extras/tokenize/count"]
    assert sc.detected(server.base_url, "m") is None
    assert len(server.requests) == 3
    assert sc.detected(closed_port_url, "m") is None  # nothing listening: none either


def test_vllm_templates_the_chat_messages_and_tools_then_detokenizes(serve):
    server = serve("vllm")
    counter = sc.detected(server.base_url, "served-model", api_key="k")
    assert counter is not None and counter.templates

    templated = counter.prompt(CHAT)
    tokenize = [b for b in server.to("/tokenize") if "messages" in b][-1]
    assert tokenize == {"model": "served-model", **CHAT, "add_generation_prompt": True}
    assert templated.tokens == server.count(CHAT["messages"], CHAT["tools"])
    assert "be brief" in templated.prompt and "echo" in templated.prompt
    assert counter.text("three small words") == 3
    assert server.to("/tokenize")[-1] == {"model": "served-model",
                                          "prompt": "three small words",
                                          "add_special_tokens": False}


def test_the_llama_cpp_server_applies_its_template_then_tokenizes_the_prompt(serve):
    server = serve("llama.cpp", template="gemma")
    counter = sc.detected(server.base_url, "served-model")
    assert counter is not None

    templated = counter.prompt(CHAT)
    assert server.to("/apply-template")[-1] == CHAT
    assert server.to("/tokenize")[-1] == {"content": templated.prompt}
    # The gemma template drops the system message and the tools.
    assert "be brief" not in templated.prompt and "echo" not in templated.prompt
    assert templated.tokens == server.count(CHAT["messages"], CHAT["tools"])


def test_llama_cpp_python_counts_texts_without_its_bos_and_templates_nothing(serve):
    server = serve("llama-cpp-python")
    counter = sc.detected(server.base_url, "served-model")
    assert counter is not None and not counter.templates
    assert counter.text("three small words") == 3
    assert server.to("/extras/tokenize/count")[-1] == {"input": "three small words",
                                                       "model": "served-model"}
    with pytest.raises(sc.ServerCountError, match="no chat template"):
        counter.prompt(CHAT)


def test_an_endpoint_that_fails_later_is_a_provider_error(serve):
    server = serve("llama.cpp")
    counter = sc.detected(server.base_url, "served-model")
    assert counter is not None
    server.close()
    with pytest.raises(sc.ServerCountError, match="could not be reached"):
        counter.text("hello")


def test_only_the_operators_server_of_an_unknown_openai_model_is_asked(serve):
    """The rule :func:`served_window.own_server` keeps for the window: the base URL is the
    operator's (``OPENAI_BASE_URL``), so a loopback or private address is asked, as a model
    server beside hango usually is; a tenant sets no URL at all (an agent's model settings
    refuse one), and a model the table knows, or OpenAI's own URL, is not asked."""
    server = serve("llama.cpp")
    own = ProviderSettings(openai_base_url=server.base_url)

    assert sc.server_counter("openai:gpt-4o", own) is None
    assert sc.server_counter("anthropic:mine", own) is None
    assert sc.server_counter("openai:mine", ProviderSettings()) is None
    assert sc.server_counter("openai:mine", ProviderSettings(
        openai_base_url="https://api.openai.com/v1")) is None
    assert server.requests == []
    found = sc.server_counter("openai:mine", own)
    assert isinstance(found, sc.ServerCounter) and found.dialect == "llama.cpp"
    with pytest.raises(ValueError, match="base_url"):
        ModelSettingsOptions.model_validate({"base_url": "http://10.0.0.1:8000/v1"})


def test_a_server_with_none_is_said_to_have_none(serve):
    server = serve("none")
    assert sc.server_counter("openai:mine",
                             ProviderSettings(openai_base_url=server.base_url)) == "none"


def test_the_root_is_the_base_url_without_its_v1():
    assert sc.server_root("http://h:8000/v1/") == "http://h:8000"
    assert sc.server_root("http://h:8000") == "http://h:8000"
