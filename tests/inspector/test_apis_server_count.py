"""GET /v1/sessions/{id}/context?counted=provider for a model on a team's own server: its own
count endpoints (vLLM's, the llama.cpp server's, llama-cpp-python's), the parts its chat
template drops, and a server with none said so in the snapshot (tests/support/model_servers.py
speaks each dialect on loopback)."""

from __future__ import annotations

import pytest

from harness import served_snapshot
from harness.providers import served_count
from runs.models import Message
from tests.support.model_servers import ModelServer, words

MODEL = "openai:served-model"  # a model hango's table does not know: a team's own


@pytest.fixture(autouse=True)
def _forgotten():
    served_count.forget()
    served_snapshot.forget()
    yield
    served_count.forget()
    served_snapshot.forget()


@pytest.fixture
def own_server(alice, make_agent, make_session, hango_settings):
    """``start(dialect, template)``: a model server of that dialect as the operator's
    ``OPENAI_BASE_URL``, and a session of an agent on it whose history is one user message."""
    servers: list[ModelServer] = []

    def start(dialect, template="chatml") -> tuple[ModelServer, dict]:
        server = ModelServer(dialect, template=template)
        servers.append(server)
        hango_settings(provider_max_retries=0, run_inline=False, broker_url="",
                       openai_api_key="test-key", openai_base_url=server.base_url)
        agent = make_agent(alice, model=MODEL)
        session = make_session(alice, agent_id=agent["id"])
        Message.objects.create(session_id=session["id"], seq=1, role="user",
                               content=[{"type": "text", "text": "hello there, count me"}])
        return server, session

    yield start
    for server in servers:
        server.close()


def snapshot(caller, session, query: str = "?counted=provider") -> dict:
    response = caller.client.get(f"/v1/sessions/{session['id']}/context{query}")
    assert response.status_code == 200, response.content
    return response.json()


def parts_of(body: dict) -> list[dict]:
    return body["system"] + body["tools"] + body["messages"]


def sent_sum(body: dict) -> int:
    return sum(p["tokens"] for p in parts_of(body)
               if p["included"] and not p["dropped_by_template"]) + body["framing"]


def test_the_llama_cpp_servers_gemma_template_drops_the_system_and_the_tools(alice, own_server):
    server, session = own_server("llama.cpp", template="gemma")
    body = snapshot(alice, session)

    assert body["provider_count"] == {"counter": "llama.cpp",
                                      "endpoints": ["/apply-template", "/tokenize"],
                                      "template_checked": True, "fallback": None}
    [chat] = server.to("/apply-template")[-1:]
    assert body["counted"] == body["framing_counted"] == "llama.cpp"
    assert body["totals"]["after"] == server.count(chat["messages"], chat.get("tools"))
    assert all(p["dropped_by_template"] for p in body["system"] + body["tools"])
    assert [p["dropped_by_template"] for p in body["messages"]] == [False]
    assert all(p["counted"] == "llama.cpp" for p in parts_of(body))
    assert body["messages"][0]["tokens"] == len(words("hello there, count me"))
    assert sent_sum(body) == body["totals"]["after"]  # the dropped parts are not in the sum
    # Far more is shown than is sent: the inspector says so instead of summing it.
    assert sum(p["tokens"] for p in parts_of(body)) > body["totals"]["after"]


def test_vllm_templates_the_same_chat_the_call_sends(alice, own_server):
    """What the server templated is what the call sends: the try (one real call) posts the
    same messages and tools to ``/v1/chat/completions`` as the inspection sent to
    ``/tokenize``."""
    server, session = own_server("vllm")
    body = snapshot(alice, session)

    assert body["provider_count"]["counter"] == "vllm"
    assert body["provider_count"]["endpoints"] == ["/tokenize", "/detokenize"]
    [chat] = [b for b in server.to("/tokenize") if "messages" in b][-1:]
    assert chat["add_generation_prompt"] is True and chat["model"] == "served-model"
    assert body["totals"]["after"] == server.count(chat["messages"], chat["tools"])
    assert not any(p["dropped_by_template"] for p in parts_of(body))  # chatml keeps them all
    assert sent_sum(body) == body["totals"]["after"]

    response = alice.client.post(f"/v1/sessions/{session['id']}/context/try", {},
                                 format="json")
    assert response.status_code == 200, response.content
    [call] = server.to("/v1/chat/completions")
    assert (call["messages"], call["tools"]) == (chat["messages"], chat["tools"])


def test_llama_cpp_python_counts_each_part_and_says_it_sees_no_template(alice, own_server):
    server, session = own_server("llama-cpp-python")
    body = snapshot(alice, session)

    report = body["provider_count"]
    assert (report["counter"], report["endpoints"], report["template_checked"]) == (
        "llama-cpp-python", ["/extras/tokenize/count"], False)
    assert "applies no chat template on request" in report["fallback"]
    assert body["counted"] == "llama-cpp-python" and body["framing_counted"] == "estimate"
    assert all(p["counted"] == "llama-cpp-python" and p["dropped_by_template"] is None
               for p in parts_of(body))
    # Its BOS, added to every text it counts, is not counted in a part.
    assert body["messages"][0]["tokens"] == len(words("hello there, count me"))
    assert sent_sum(body) == body["totals"]["after"]
    asked = len(server.requests)
    snapshot(alice, session)  # found once, and each text counted once
    assert len(server.requests) == asked
    assert server.to("/v1/responses/input_tokens") == []


def test_a_server_without_a_count_endpoint_says_so_in_the_snapshot(alice, own_server):
    server, session = own_server("none")
    body = snapshot(alice, session)

    assert body["counted"] == "estimate"
    report = body["provider_count"]
    assert report["counter"] is None and not report["template_checked"]
    assert "none of the count endpoints" in report["fallback"]
    assert "HTTP 404" in report["fallback"]  # OpenAI's own count endpoint, asked last
    assert all(p["dropped_by_template"] is None for p in parts_of(body))
    probes = [path for path, _ in server.requests
              if path in ("/apply-template", "/tokenize", "/extras/tokenize/count")]
    snapshot(alice, session)
    assert len([path for path, _ in server.requests
                if path in ("/apply-template", "/tokenize", "/extras/tokenize/count")]) == len(
        probes) == 3  # its absence is remembered too
    # Not asked: no report, and no flag.
    assert snapshot(alice, session, "")["provider_count"] is None


def test_a_server_that_fails_mid_count_falls_back_and_says_why(alice, own_server, monkeypatch):
    server, session = own_server("llama.cpp")
    snapshot(alice, session)  # found
    served_snapshot.forget()
    monkeypatch.setattr(served_snapshot, "MAX_ASKS", 1)
    body = snapshot(alice, session)
    assert body["counted"] == "llama.cpp"  # the totals still the server's
    assert "the parts were counted by the estimate" in body["provider_count"]["fallback"]
    assert all(p["counted"] == "estimate" for p in parts_of(body))
