"""Routes declared once (hango_client/_endpoint.py): a call becomes the request the API reads,
on the sync and the async client alike. No server: an httpx MockTransport records requests."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from hango_client import OMIT, AsyncClient, Client
from hango_client._endpoint import ref_id


def recording() -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "DELETE":
            return httpx.Response(204)
        return httpx.Response(200, json={"id": "x", "results": [], "next": None})

    return seen, httpx.MockTransport(answer)


def test_path_query_and_body_come_from_the_arguments():
    seen, transport = recording()
    client = Client("http://api.test", "hk_1", transport=transport)
    client.agents.create(name="a", model="scripted:demo", config={"interrupt_on": {}})
    client.agents.update({"id": "ag/1"}, description="d")
    client.runs.get("r1", wait=5)
    client.context.inspect("s1", against="last")
    client.credentials.set("TOKEN", value="v", scope="member")
    client.context.set_agent_overrides("a1", overrides=[{"part": "system:0",
                                                          "action": "exclude"}])
    client.agents.memory_get("a1", "/memories/AGENTS.md")
    assert client.agents.delete("a1") is None
    client.sessions.create(agent={"id": "a1", "name": "as answered"})

    create, update, wait, inspect, credential, overrides, memory, delete, session = seen
    assert json.loads(session.content) == {"agent": "a1"}  # an object given for an id
    assert (create.method, create.url.path) == ("POST", "/v1/agents")
    assert json.loads(create.content) == {"name": "a", "model": "scripted:demo",
                                          "config": {"interrupt_on": {}}}  # OMIT left out
    assert create.headers["Authorization"] == "Bearer hk_1"
    assert update.url.raw_path == b"/v1/agents/ag%2F1"  # one segment, whatever the id holds
    assert json.loads(update.content) == {"description": "d"}
    assert wait.url.params["wait"] == "5" and wait.extensions["timeout"]["read"] == 35
    assert inspect.url.params == httpx.QueryParams({"against": "last"})
    assert credential.url.params["scope"] == "member"
    assert json.loads(credential.content) == {"value": "v"}
    assert json.loads(overrides.content) == [{"part": "system:0", "action": "exclude"}]
    assert memory.url.path == "/v1/agents/a1/memory/memories/AGENTS.md"
    assert delete.method == "DELETE"


def test_a_post_without_fields_sends_an_empty_object():
    seen, transport = recording()
    Client("http://api.test", "k", transport=transport).runs.cancel("r1")
    assert seen[0].content == b"{}" and seen[0].headers["content-type"] == "application/json"


def test_the_async_client_sends_the_same_requests():
    seen, transport = recording()
    client = AsyncClient("http://api.test", "k", transport=transport)

    async def calls():
        await client.sessions.send("s1", "hello", multitask="enqueue")
        return [item async for item in client.sessions.iter()]

    assert asyncio.run(calls()) == []
    assert seen[0].url.path == "/v1/sessions/s1/messages"
    assert json.loads(seen[0].content) == {"content": "hello", "multitask": "enqueue"}


def test_pages_are_followed_on_the_same_server_only():
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("cursor") == "2":
            return httpx.Response(200, json={"results": [3], "next": "http://evil.test/v1/agents",
                                             "previous": None})
        return httpx.Response(200, json={"results": [1, 2], "previous": None,
                                         "next": "http://api.test/v1/agents?cursor=2"})

    client = Client("http://api.test", "k", transport=httpx.MockTransport(answer))
    found = []
    with pytest.raises(Exception, match="points elsewhere"):
        for item in client.agents.iter(limit=2):
            found.append(item)
    assert found == [1, 2, 3]


def test_refs_and_omit():
    assert ref_id("abc") == "abc" and ref_id({"id": 7}) == "7"
    with pytest.raises(TypeError):
        ref_id({"name": "no id"})
    assert not OMIT and repr(OMIT) == "OMIT"
