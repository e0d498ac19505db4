"""Bad input answers 400/413/415/422 (or 404/405 for routes and methods) in the one error shape;
never a 500."""

from __future__ import annotations

import base64
import json

import pytest

from agents.models import Agent
from runs.models import Session
from tests.support.api import AGENT_BODY, error_of
from tests.support.openapi import body_operations

WRITES = [("post", "/v1/agents"), ("patch", "/v1/agents/{agent}"), ("post", "/v1/sessions")]
WRITE_IDS = [f"{m.upper()} {u}" for m, u in WRITES]


@pytest.fixture
def agent(alice, make_agent) -> dict:
    return make_agent(alice)


def send(client, method: str, url: str, agent: dict, data, content_type="application/json",
         **extra):
    return getattr(client, method)(url.format(agent=agent["id"]), data=data,
                                   content_type=content_type, **extra)


def nothing_written(agent: dict) -> bool:
    """Still only ``agent``, unchanged, and no session."""
    row = Agent.objects.get(pk=agent["id"])
    return (
        Agent.objects.filter(tenant_id=row.tenant_id).count() == 1
        and row.name == agent["name"]
        and not Session.objects.filter(tenant_id=row.tenant_id).exists()
    )


@pytest.mark.parametrize("method, url", WRITES, ids=WRITE_IDS)
@pytest.mark.parametrize("raw", ['{"name":', "{'name': 'x'}", "nope", '{"a": NaN}', "\xff\xfe",
                                 "[" * 50_000])
def test_unreadable_json_is_400(alice, agent, method, url, raw):
    response = send(alice.client, method, url, agent, raw.encode("latin-1"))
    error_of(response, 400, "malformed_request")
    assert nothing_written(agent)


@pytest.mark.parametrize("method, url", WRITES, ids=WRITE_IDS)
@pytest.mark.parametrize("raw", ["[]", '[{"name": "x"}]', '"x"', "5", "true", "null"])
def test_json_that_is_not_an_object_is_422(alice, agent, method, url, raw):
    response = send(alice.client, method, url, agent, raw)
    error_of(response, 422, "validation_error")
    assert nothing_written(agent)


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", {"a": 1}),
        ("name", ["x"]),
        ("name", "x" * 101),
        ("name", "n\u0000"),
        ("description", ["x"]),
        ("system_prompt", {"a": 1}),
        ("model", 5),
        ("config", "x"),
        ("config", [1]),
        ("config", 5),
        ("config", None),
        ("config", {"max_turns": "ten"}),
        ("config", {"subagents": 5}),
        ("config", {"subagents": "abc"}),
        ("config", {"subagents": [{"name": "a", "description": "d", "system_prompt": "x\u0000"}]}),
        ("config", {"interrupt_on": {"bad name!": ["approve"]}}),
        ("config", {"summarization": "often"}),
        ("allowed_tools", "x"),
        ("allowed_tools", [1, 2]),
    ],
)
@pytest.mark.parametrize("method", ["post", "patch"])
def test_wrong_types_are_422(alice, agent, method, field, value):
    url = "/v1/agents" if method == "post" else f"/v1/agents/{agent['id']}"
    body = {**AGENT_BODY, field: value} if method == "post" else {field: value}
    response = getattr(alice.client, method)(url, body, format="json")
    error = error_of(response, 422, "validation_error")
    assert [key.split("/")[0] for key in error["detail"]] == [field]
    assert nothing_written(agent)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\u0000"])
def test_unstorable_characters_in_config_are_422(alice, escape):
    raw = ('{"name": "n", "model": "scripted:demo", "config": {"subagents": [{"name": "a", '
           f'"description": "d{escape}", "system_prompt": ""}}]}}}}')
    error = error_of(alice.client.post("/v1/agents", raw, content_type="application/json"), 422)
    assert [key.split("/")[0] for key in error["detail"]] == ["config"]


@pytest.mark.parametrize("operation", body_operations(), ids=str)
@pytest.mark.parametrize("raw, where", [
    ('{"a\\u0000": 1}', "a\\u0000"),            # the object's first key (was a 500)
    ('{"\\ud800": 1, "z": 2}', "\\ud800"),
    ('{"ok": 1, "k\\udfff": 2}', "k\\udfff"),   # a later key (was a 500: the key echoed)
    ('[{"x": {"\\u0000": []}}]', "0/x/\\u0000"),
    ('{"x": [{"y": "\\ud800"}]}', "x/0/y"),
])
def test_unstorable_keys_and_strings_are_422_on_every_json_route(alice, route_ids, operation,
                                                                 raw, where):
    response = getattr(alice.client, operation.method)(
        operation.url(route_ids), raw, content_type="application/json")
    error = error_of(response, 422, "validation_error")
    assert list(error["detail"]) == [where]


@pytest.mark.parametrize("method, url", WRITES, ids=WRITE_IDS)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/xml"])
def test_non_json_content_type_is_415(alice, agent, method, url, content_type):
    response = send(alice.client, method, url, agent, "name=x", content_type=content_type)
    error_of(response, 415, "unsupported_media_type")
    assert nothing_written(agent)


def test_multipart_is_415(alice):
    error_of(alice.client.post("/v1/agents", {"name": "x"}, format="multipart"), 415)


@pytest.mark.parametrize("method, url", WRITES, ids=WRITE_IDS)
def test_oversized_body_is_413(alice, agent, hango_settings, method, url):
    hango_settings(max_body_bytes=200)
    raw = json.dumps({**AGENT_BODY, "agent": agent["id"], "description": "x" * 300})
    error = error_of(send(alice.client, method, url, agent, raw), 413, "payload_too_large")
    assert error["detail"]["limit_bytes"] == 200
    assert nothing_written(agent)


def test_body_at_the_limit_is_accepted(alice, hango_settings):
    raw = json.dumps(AGENT_BODY)
    hango_settings(max_body_bytes=len(raw))
    assert alice.client.post("/v1/agents", raw, content_type="application/json").status_code == 201
    hango_settings(max_body_bytes=len(raw) - 1)
    error_of(alice.client.post("/v1/agents", raw, content_type="application/json"), 413)


def test_unreadable_content_length_is_400(alice):
    response = alice.client.generic("POST", "/v1/agents", "{}", content_type="application/json",
                                    CONTENT_LENGTH="lots")
    error_of(response, 400, "malformed_request")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("url", ["/v1/agents", "/v1/sessions", "/v1/sessions/{session}/messages"])
@pytest.mark.parametrize("cursor", ["garbage", "é", b64("o=abc"), b64("p=abc"),
                                    b64("p=2020-01-01"), b64("p=2020-01-01 00:00:00"),
                                    b64("p=%00"), b64("p=1.5&r=1"),
                                    # offsets PostgreSQL refuses (were 500s)
                                    b64("p=2020-01-01 00:00:00%2B16:00"),
                                    b64("p=2020-01-01 00:00:00%2B01:00:00.5")])
def test_invalid_cursor_is_400(alice, make_session, url, cursor):
    session = make_session(alice)
    response = alice.client.get(url.format(session=session["id"]), {"cursor": cursor})
    error_of(response, 400, "invalid_query")


@pytest.mark.parametrize("url", ["/v1/skills", "/v1/agents/{agent}/memory",
                                 "/v1/sessions/{session}/files"])
def test_a_cursor_with_a_nul_is_400(alice, make_session, url):
    # Ordered by a text column: a NUL in the position was a 500 from the query.
    session = make_session(alice)
    url = url.format(agent=session["agent"], session=session["id"])
    error_of(alice.client.get(url, {"cursor": b64("p=a%00b")}), 400, "invalid_query")


@pytest.mark.parametrize("url", ["/v1/audit?object_type=a%00", "/v1/agents?x%00=1",
                                 "/v1/usage?purpose=%00"])
def test_a_nul_in_a_query_parameter_is_400(owner, url):
    error = error_of(owner.client.get(url), 400, "invalid_query")
    assert error["detail"]


def test_a_cursor_from_the_api_still_works(alice, make_agent, hango_settings):
    hango_settings(page_size=1)
    make_agent(alice), make_agent(alice)
    next_url = alice.client.get("/v1/agents").json()["next"]
    assert alice.client.get(next_url).status_code == 200


@pytest.mark.django_db  # callers fetched by name: the database, unseen by collection
@pytest.mark.parametrize("who", ["alice", "anon"])
@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("url", ["/v1/nope", "/v1/agents/", "/v1/agents/x/y", "/nope"])
def test_unknown_route_is_a_json_404(request, who, method, url):
    fixture = request.getfixturevalue(who)
    client = fixture if who == "anon" else fixture.client
    error_of(getattr(client, method)(url), 404, "not_found")


@pytest.mark.parametrize("url", ["/v1/sessions/{session}/context?counted=",
                                 "/v1/sessions/{session}/messages?cursor=",
                                 "/v1/usage?since=", "/v1/audit?action=", "/v1/agents?limit=",
                                 "/v1/agents?limit=2&x="])
def test_an_empty_query_value_is_400_naming_it(owner, make_session, url):
    session = make_session(owner)
    error = error_of(owner.client.get(url.format(session=session["id"])), 400, "invalid_query")
    assert error["detail"] == {"parameter": url.rsplit("&", 1)[-1].split("?")[-1][:-1]}


def test_the_admin_still_takes_an_empty_search(staff_client):
    assert staff_client.get("/admin/agents/agent/?q=").status_code == 200


def test_an_unknown_key_of_a_posted_image_is_422_naming_it(alice, make_session):
    # Only the blocks' own keys were checked: an image's were dropped without a word.
    session = make_session(alice)
    content = [{"type": "tool_result", "tool_use_id": "t", "content": "",
                "images": [{"type": "image", "media_type": "image/png", "data": "eA==",
                            "detail": "high"}]}]
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": content}, format="json")
    error = error_of(response, 422, "validation_error")
    assert error["detail"] == {"content": ["0/images/0/detail: Unknown field."]}


def test_an_event_position_past_any_seq_is_no_event_or_a_400(alice, queued_run, hango_settings):
    # A position over 2**31 was a 500 from the stream's read (an int4 parameter).
    hango_settings(event_stream_max_seconds=1)
    url = f"/v1/runs/{queued_run.pk}/events"
    far = alice.client.get(url, {"after": str(2**58), "format": "json"})
    assert far.status_code == 200, far.content
    assert far.json()["results"] == []
    streamed = alice.client.get(url, {"after": str(2**58), "format": "sse"})
    assert streamed.status_code == 200
    assert b"event: error" not in b"".join(streamed.streaming_content)
    error = error_of(alice.client.get(url, {"after": str(2**63), "format": "json"}), 400,
                     "invalid_query")
    assert error["detail"] == {"after": str(2**63)}
