"""Who sees what: members only their own; owners and admins their whole tenant; everyone else
gets the very 404 a missing id gets, on every route, and never sees the object in a list.
Tenant-wide objects (MCP servers) every member of the tenant sees, and only owners and admins
change; a member's own credential nobody else sees, whatever their role."""

from __future__ import annotations

import uuid

import pytest

from agents.models import Agent
from integrations.models import Credential, McpServer
from runs.models import Session
from schedules.models import Schedule
from tests.support.api import error_of
from webhooks.models import Endpoint

# (method, url template, body); {agent} and {session} are alice's.
OBJECT_ROUTES = [
    ("get", "/v1/agents/{agent}", None),
    ("patch", "/v1/agents/{agent}", {"name": "renamed"}),
    ("delete", "/v1/agents/{agent}", None),
    ("get", "/v1/sessions/{session}", None),
    ("get", "/v1/sessions/{session}/messages", None),
    ("get", "/v1/agents/{agent}/context-overrides", None),
    ("put", "/v1/agents/{agent}/context-overrides", [{"part": "tool:echo", "action": "exclude"}]),
    ("get", "/v1/sessions/{session}/context", None),
    ("get", "/v1/sessions/{session}/context?against=last", None),
    ("post", "/v1/sessions/{session}/context",
     {"overrides": [{"part": "system:todo", "action": "exclude"}]}),
    ("post", "/v1/sessions/{session}/context/try", {"message": "Hello?"}),
    ("get", "/v1/sessions/{session}/context-overrides", None),
    ("put", "/v1/sessions/{session}/context-overrides",
     [{"part": "message:1", "action": "replace", "replacement": "Hello."}]),
    ("get", "/v1/sessions/{session}/context-overrides/both", None),
    ("put", "/v1/sessions/{session}/context-overrides/both",
     {"agent": [{"part": "tool:echo", "action": "exclude"}],
      "session": [{"part": "message:1", "action": "replace", "replacement": "Hello."}]}),
    ("get", "/v1/webhooks/{webhook}", None),
    ("patch", "/v1/webhooks/{webhook}", {"description": "renamed"}),
    ("get", "/v1/webhooks/{webhook}/deliveries", None),
    ("post", "/v1/webhooks/{webhook}/rotate", None),
    ("post", "/v1/webhooks/{webhook}/ping", None),
    ("get", "/v1/schedules/{schedule}", None),
    ("patch", "/v1/schedules/{schedule}", {"name": "renamed"}),
    ("get", "/v1/schedules/{schedule}/fires", None),
    ("get", "/v1/schedules/{schedule}/context", None),
    ("get", "/v1/schedules/{schedule}/usage", None),
    ("post", "/v1/schedules/{schedule}/run", None),
]
ROUTE_IDS = [f"{method.upper()} {url}" for method, url, _ in OBJECT_ROUTES]

ALLOWED = ["alice", "admin", "owner"]
FORBIDDEN = ["bob", "outsider"]


@pytest.fixture
def objects(alice, make_agent, make_session) -> dict[str, str]:
    agent = make_agent(alice)
    session = make_session(alice, agent_id=agent["id"])
    webhook = alice.client.post("/v1/webhooks", {"url": "https://hooks.example.com/x"},
                                format="json")
    schedule = alice.client.post("/v1/schedules", {"name": "n", "agent": agent["id"],
                                                   "cron": "0 9 * * *", "content": "hi"},
                                 format="json")
    return {"agent": agent["id"], "session": session["id"], "webhook": webhook.json()["id"],
            "schedule": schedule.json()["id"]}


def call(client, method: str, url: str, body: dict | list | None):
    send = getattr(client, method)
    return send(url, body, format="json") if body else send(url)


def with_ids(url: str, agent: str, session: str, webhook: str | None = None,
             schedule: str | None = None) -> str:
    return url.format(agent=agent, session=session, webhook=webhook or session,
                      schedule=schedule or session)


@pytest.mark.parametrize("who", FORBIDDEN)
@pytest.mark.parametrize("method, url, body", OBJECT_ROUTES, ids=ROUTE_IDS)
def test_forbidden_caller_gets_the_missing_id_404(request, objects, who, method, url, body):
    client = request.getfixturevalue(who).client
    response = call(client, method, with_ids(url, **objects), body)
    error_of(response, 404, "not_found")

    for missing in (str(uuid.uuid4()), "not-a-uuid"):
        baseline = call(client, method, with_ids(url, missing, missing), body)
        error_of(baseline, 404, "not_found")
        assert response.content == baseline.content


@pytest.mark.parametrize("who", ALLOWED)
@pytest.mark.parametrize("method, url, body", OBJECT_ROUTES, ids=ROUTE_IDS)
def test_own_member_admin_and_owner_may(request, objects, who, method, url, body):
    client = request.getfixturevalue(who).client
    response = call(client, method, with_ids(url, **objects), body)
    expected = 204 if method == "delete" else 202 if url.endswith(("/run", "/ping")) else 200
    if url.endswith("?against=last"):  # allowed: and the new session has sent no call yet
        expected = 409
    assert response.status_code == expected, response.content
    if method == "patch" and "/agents/" in url:
        assert Agent.objects.get(pk=objects["agent"]).name == "renamed"
    if method == "patch" and "/webhooks/" in url:
        assert Endpoint.objects.get(pk=objects["webhook"]).description == "renamed"
    if method == "patch" and "/schedules/" in url:
        assert Schedule.objects.get(pk=objects["schedule"]).name == "renamed"
    if method == "delete":
        assert not Agent.objects.filter(pk=objects["agent"]).exists()


@pytest.mark.django_db  # callers fetched by name: the database, unseen by collection
@pytest.mark.parametrize("who", ["alice", "bob"])
@pytest.mark.parametrize("method, url, body", OBJECT_ROUTES, ids=ROUTE_IDS)
def test_missing_and_malformed_ids_answer_alike(request, who, method, url, body):
    client = request.getfixturevalue(who).client
    bodies = {
        call(client, method, with_ids(url, missing, missing), body).content
        for missing in (str(uuid.uuid4()), str(uuid.uuid4()), "not-a-uuid", "0" * 40, "%00")
    }
    assert len(bodies) == 1


@pytest.mark.parametrize("who", FORBIDDEN)
@pytest.mark.parametrize("route", ["/v1/agents", "/v1/sessions"])
def test_lists_hide_what_is_not_yours(request, objects, who, route):
    caller = request.getfixturevalue(who)
    own = caller.client.post("/v1/agents", {"name": "mine", "model": "scripted:demo"},
                             format="json").json()
    caller.client.post("/v1/sessions", {"agent": own["id"]}, format="json")

    listed = {item["id"] for item in caller.client.get(route).json()["results"]}
    assert len(listed) == 1  # only the caller's own object
    assert not listed & set(objects.values())


@pytest.mark.parametrize("who", ["admin", "owner"])
@pytest.mark.parametrize("route, key", [("/v1/agents", "agent"), ("/v1/sessions", "session")])
def test_admin_and_owner_lists_include_members_objects(request, objects, outsider, make_session,
                                                       who, route, key):
    make_session(outsider)  # another tenant's objects stay out even for owners
    listed = [item["id"] for item in request.getfixturevalue(who).client.get(route).json()[
        "results"]]
    assert listed == [objects[key]]


def test_member_list_holds_only_their_own(alice, bob, objects, make_session):
    make_session(bob)
    assert [a["id"] for a in alice.client.get("/v1/agents").json()["results"]] == [
        objects["agent"]]
    assert [s["id"] for s in alice.client.get("/v1/sessions").json()["results"]] == [
        objects["session"]]


@pytest.mark.parametrize("who", FORBIDDEN)
def test_cannot_start_a_session_on_an_agent_you_cannot_see(request, objects, who):
    client = request.getfixturevalue(who).client
    response = client.post("/v1/sessions", {"agent": objects["agent"]}, format="json")
    error_of(response, 422, "validation_error")
    missing = client.post("/v1/sessions", {"agent": str(uuid.uuid4())}, format="json")
    assert response.content == missing.content
    assert Session.objects.filter(agent_id=objects["agent"]).count() == 1  # alice's only


def test_admin_may_start_a_session_on_a_members_agent(admin, objects):
    response = admin.client.post("/v1/sessions", {"agent": objects["agent"]}, format="json")
    assert response.status_code == 201, response.content
    assert Session.objects.get(pk=response.json()["id"]).member_id == admin.member.id


@pytest.mark.parametrize("who", FORBIDDEN)
@pytest.mark.parametrize("method, body", [("patch", {"name": "hijacked", "config": {}}),
                                          ("delete", None)])
def test_forbidden_writes_change_nothing(request, alice, objects, who, method, body):
    before = Agent.objects.values().get(pk=objects["agent"])
    client = request.getfixturevalue(who).client
    response = call(client, method, f"/v1/agents/{objects['agent']}", body)
    error_of(response, 404, "not_found")
    assert Agent.objects.values().get(pk=objects["agent"]) == before
    assert alice.client.get(f"/v1/agents/{objects['agent']}").status_code == 200


@pytest.mark.parametrize("who", FORBIDDEN)
def test_forbidden_patch_with_invalid_body_is_still_404(request, objects, who):
    """The object is looked up before the body is judged, so a 422 never confirms it exists."""
    client = request.getfixturevalue(who).client
    response = client.patch(f"/v1/agents/{objects['agent']}", {"model": "gpt4"}, format="json")
    error_of(response, 404, "not_found")


# -- tenant-wide objects: an MCP server (an admin's) -------------------------------------------
# Every member of the tenant reads it; owners and admins change it, a member's write is refused
# by role (403: they see it); another tenant's caller gets the very 404 of a missing id.

TENANT_ROUTES = [
    ("get", "/v1/mcp-servers/{server}", None),
    ("get", "/v1/mcp-servers/{server}/tools", None),
    ("patch", "/v1/mcp-servers/{server}", {"description": "changed"}),
    ("delete", "/v1/mcp-servers/{server}", None),
]
TENANT_ROUTE_IDS = [f"{method.upper()} {url}" for method, url, _ in TENANT_ROUTES]


@pytest.fixture
def tenant_server(admin) -> str:
    response = admin.client.post("/v1/mcp-servers", {
        "name": "docs", "transport": "streamable_http", "url": "https://docs.example.com/mcp"},
        format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.parametrize("method, url, body", TENANT_ROUTES, ids=TENANT_ROUTE_IDS)
def test_another_tenant_gets_the_missing_id_404_on_tenant_wide_objects(outsider, tenant_server,
                                                                       method, url, body):
    response = call(outsider.client, method, url.format(server=tenant_server), body)
    error_of(response, 404, "not_found")
    for missing in (str(uuid.uuid4()), "not-a-uuid"):
        assert response.content == call(outsider.client, method, url.format(server=missing),
                                        body).content
    assert McpServer.objects.get(pk=tenant_server).description == ""
    assert outsider.client.get("/v1/mcp-servers").json()["results"] == []


@pytest.mark.parametrize("who", ["alice", "bob", "admin", "owner"])
@pytest.mark.parametrize("method, url, body", TENANT_ROUTES, ids=TENANT_ROUTE_IDS)
def test_members_read_tenant_wide_objects_and_only_owners_and_admins_write(
        request, tenant_server, who, method, url, body):
    caller = request.getfixturevalue(who)
    response = call(caller.client, method, url.format(server=tenant_server), body)
    if method == "get":
        assert response.status_code == 200, response.content
    elif not caller.member.sees_whole_tenant:
        error_of(response, 403, "permission_denied")
        assert McpServer.objects.get(pk=tenant_server).description == ""
    elif method == "patch":
        assert response.status_code == 200, response.content
        assert McpServer.objects.get(pk=tenant_server).description == "changed"
    else:
        assert response.status_code == 204
        assert not McpServer.objects.filter(pk=tenant_server).exists()


@pytest.mark.parametrize("who", ["bob", "admin", "owner", "outsider"])
def test_a_members_own_credential_is_theirs_alone(request, alice, who):
    mine = alice.client.put("/v1/credentials/docs-token?scope=member", {"value": "alice's"},
                            format="json")
    assert mine.status_code == 201, mine.content
    caller = request.getfixturevalue(who)
    assert caller.client.get("/v1/credentials").json()["results"] == []
    error_of(caller.client.delete("/v1/credentials/docs-token?scope=member"), 404, "not_found")
    assert Credential.objects.get(name="docs-token").member_id == alice.member.pk
