"""``/v1/agents/{id}/memory``: create, list, read, upsert, delete; path and size validation; the
agent's authorization (whoever sees the agent sees its memory; anyone else gets a 404)."""

from __future__ import annotations

import uuid

import pytest

from agents.models import MemoryFile
from tests.support.api import error_of, walk

AGENTS_MD = "/memories/AGENTS.md"
FIELDS = {"path", "content", "updated_at"}


@pytest.fixture
def agent(alice, make_agent) -> dict:
    return make_agent(alice)


def base(agent_id: str) -> str:
    return f"/v1/agents/{agent_id}/memory"


def file_url(agent_id: str, path: str) -> str:
    """The canonical URL: the path follows without its leading slash."""
    return f"{base(agent_id)}/{path.lstrip('/')}"


def create(caller, agent_id, path=AGENTS_MD, content="Prefer short answers."):
    return caller.client.post(base(agent_id), {"path": path, "content": content}, format="json")


def test_create_then_read_list_replace_and_delete(alice, agent):
    created = create(alice, agent["id"])
    assert created.status_code == 201, created.content
    body = created.json()
    assert set(body) == FIELDS
    assert (body["path"], body["content"]) == (AGENTS_MD, "Prefer short answers.")

    url = file_url(agent["id"], AGENTS_MD)
    assert alice.client.get(url).json() == body
    assert alice.client.get(base(agent["id"])).json()["results"] == [body]

    replaced = alice.client.put(url, {"content": "Be brief."}, format="json")
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["content"] == "Be brief."
    assert replaced.json()["updated_at"] > body["updated_at"]
    assert MemoryFile.objects.get(agent_id=agent["id"]).content == "Be brief."

    assert alice.client.delete(url).status_code == 204
    error_of(alice.client.get(url), 404, "not_found")
    error_of(alice.client.delete(url), 404, "not_found")
    assert not MemoryFile.objects.exists()


def test_put_creates_a_missing_file(alice, agent):
    response = alice.client.put(file_url(agent["id"], "/memories/new.md"), {"content": ""},
                                format="json")
    assert response.status_code == 201, response.content
    assert response.json()["path"] == "/memories/new.md"
    assert MemoryFile.objects.get(path="/memories/new.md").content == ""


def test_a_path_with_its_slash_or_percent_encoded_names_the_same_file(alice, agent):
    create(alice, agent["id"], path="/notes/my plan.md", content="x")
    for url in (f"{base(agent['id'])}/notes/my%20plan.md",
                f"{base(agent['id'])}//notes/my%20plan.md"):
        response = alice.client.get(url)
        assert response.status_code == 200, (url, response.content)
        assert response.json()["path"] == "/notes/my plan.md"


def test_content_is_kept_exactly(alice, agent):
    content = "  leading spaces\n\ttabs\nunicode: héllo ✓\n"
    assert create(alice, agent["id"], content=content).json()["content"] == content


def test_list_is_by_path_and_paginated(alice, agent, hango_settings):
    hango_settings(page_size=2)
    paths = ["/c.md", "/a.md", "/b/z.md", "/b/a.md", "/d"]
    for path in paths:
        assert create(alice, agent["id"], path=path).status_code == 201
    items, pages = walk(alice.client, base(agent["id"]))
    assert [i["path"] for i in items] == sorted(paths)
    assert pages == 3


def test_memory_is_per_agent(alice, agent, make_agent):
    other = make_agent(alice, name="other")
    create(alice, agent["id"])
    assert create(alice, other["id"], content="other's").status_code == 201
    assert alice.client.get(file_url(other["id"], AGENTS_MD)).json()["content"] == "other's"
    assert len(alice.client.get(base(agent["id"])).json()["results"]) == 1


def test_an_existing_path_is_a_409_on_create(alice, agent):
    create(alice, agent["id"])
    error = error_of(create(alice, agent["id"], content="again"), 409, "conflict")
    assert error["detail"] == {"path": AGENTS_MD}
    assert MemoryFile.objects.get().content == "Prefer short answers."


def test_the_file_cap_is_a_409(alice, agent, hango_settings):
    hango_settings(memory_max_files=2)
    assert create(alice, agent["id"], path="/a").status_code == 201
    assert alice.client.put(file_url(agent["id"], "/b"), {"content": "b"},
                            format="json").status_code == 201
    error_of(create(alice, agent["id"], path="/c"), 409, "conflict")
    error_of(alice.client.put(file_url(agent["id"], "/c"), {"content": "c"}, format="json"),
             409, "conflict")
    # Replacing an existing file needs no room.
    assert alice.client.put(file_url(agent["id"], "/a"), {"content": "a2"},
                            format="json").status_code == 200
    assert MemoryFile.objects.count() == 2


@pytest.mark.parametrize("path", ["memories/x.md", "/memories/", "/a//b", "/a/../b", "/./a",
                                  "/" + "x" * 255, "", "/tab\there", 7, None])
def test_invalid_paths_are_422_on_create(alice, agent, path):
    response = alice.client.post(base(agent["id"]), {"path": path, "content": "x"},
                                 format="json")
    error = error_of(response, 422, "validation_error")
    assert list(error["detail"]) == ["path"]
    assert not MemoryFile.objects.exists()


@pytest.mark.parametrize("suffix", ["a/../b", "a/./b", "a/", "a%09b"])
def test_invalid_paths_are_422_on_put_and_404_on_read(alice, agent, suffix):
    url = f"{base(agent['id'])}/{suffix}"
    error = error_of(alice.client.put(url, {"content": "x"}, format="json"), 422,
                     "validation_error")
    assert list(error["detail"]) == ["path"]
    error_of(alice.client.get(url), 404, "not_found")
    error_of(alice.client.delete(url), 404, "not_found")
    assert not MemoryFile.objects.exists()


def test_a_nul_in_the_url_path_is_a_404_not_a_500(alice, agent):
    error_of(alice.client.get(f"{base(agent['id'])}/a%00b"), 404, "not_found")


@pytest.mark.parametrize("body", [{"path": AGENTS_MD}, {"path": AGENTS_MD, "content": 5},
                                  {"path": AGENTS_MD, "content": None}])
def test_content_must_be_a_string(alice, agent, body):
    error = error_of(alice.client.post(base(agent["id"]), body, format="json"), 422)
    assert list(error["detail"]) == ["content"]


def test_content_is_bounded_in_bytes(alice, agent, hango_settings):
    hango_settings(memory_max_bytes=10)
    assert create(alice, agent["id"], path="/fits", content="é" * 5).status_code == 201
    error = error_of(create(alice, agent["id"], path="/big", content="é" * 6), 422)
    assert list(error["detail"]) == ["content"]
    assert "at most 10 bytes" in error["detail"]["content"][0]
    put = alice.client.put(file_url(agent["id"], "/fits"), {"content": "x" * 11}, format="json")
    error_of(put, 422, "validation_error")
    assert MemoryFile.objects.get(path="/fits").content == "é" * 5


def test_a_body_that_is_not_an_object_is_422(alice, agent):
    error_of(alice.client.post(base(agent["id"]), ["x"], format="json"), 422)
    error_of(alice.client.put(file_url(agent["id"], "/a"), "x", format="json"), 422)


def test_server_fields_are_refused_and_nothing_is_written(alice, agent, make_agent, bob):
    others = make_agent(bob)
    extras = {"id": str(uuid.uuid4()), "agent": others["id"], "agent_id": others["id"],
              "created_at": "2001-02-03T04:05:06Z", "updated_at": "2001-02-03T04:05:06Z"}
    response = alice.client.post(base(agent["id"]), {"path": AGENTS_MD, "content": "c",
                                                     **extras}, format="json")
    error = error_of(response, 422, "validation_error")
    assert error["detail"] == {name: ["Unknown field."] for name in extras}
    assert not MemoryFile.objects.exists()

    created = alice.client.post(base(agent["id"]), {"path": AGENTS_MD, "content": "c"},
                                format="json")
    assert created.status_code == 201, created.content
    put = alice.client.put(f"{base(agent['id'])}/memories/AGENTS.md",
                           {"content": "d", "path": "/memories/other.md"}, format="json")
    assert error_of(put, 422)["detail"] == {"path": ["Unknown field."]}
    assert MemoryFile.objects.get().content == "c"


# -- authorization: exactly the agent's ------------------------------------------------------

ROUTES = [
    ("get", "{base}", None),
    ("post", "{base}", {"path": "/memories/other.md", "content": "x"}),
    ("get", "{file}", None),
    ("put", "{file}", {"content": "changed"}),
    ("delete", "{file}", None),
]
ROUTE_IDS = [f"{m.upper()} {u}" for m, u, _ in ROUTES]


def call(client, method, url, body):
    send = getattr(client, method)
    return send(url, body, format="json") if body is not None else send(url)


def urls(agent_id: str) -> dict[str, str]:
    return {"base": base(agent_id), "file": file_url(agent_id, AGENTS_MD)}


@pytest.mark.parametrize("who", ["bob", "outsider"])
@pytest.mark.parametrize("method, url, body", ROUTES, ids=ROUTE_IDS)
def test_who_cannot_see_the_agent_gets_the_missing_agent_404(request, alice, agent, who,
                                                             method, url, body):
    create(alice, agent["id"])
    client = request.getfixturevalue(who).client
    response = call(client, method, url.format(**urls(agent["id"])), body)
    error_of(response, 404, "not_found")
    missing = call(client, method, url.format(**urls(str(uuid.uuid4()))), body)
    assert response.content == missing.content
    row = MemoryFile.objects.get()
    assert (row.path, row.content) == (AGENTS_MD, "Prefer short answers.")
    assert MemoryFile.objects.count() == 1


@pytest.mark.parametrize("who", ["alice", "admin", "owner"])
@pytest.mark.parametrize("method, url, body", ROUTES, ids=ROUTE_IDS)
def test_the_agents_owner_and_tenant_admins_may(request, alice, agent, who, method, url, body):
    create(alice, agent["id"])
    client = request.getfixturevalue(who).client
    response = call(client, method, url.format(**urls(agent["id"])), body)
    expected = {"get": 200, "post": 201, "put": 200, "delete": 204}[method]
    assert response.status_code == expected, response.content


def test_a_forbidden_invalid_body_is_still_404(bob, alice, agent):
    """The agent is looked up before the body is judged, so a 422 never confirms it exists."""
    response = bob.client.post(base(agent["id"]), {"path": "relative"}, format="json")
    error_of(response, 404, "not_found")
    response = bob.client.put(f"{base(agent['id'])}/a/../b", {"content": 1}, format="json")
    error_of(response, 404, "not_found")


def test_deleting_the_agent_deletes_its_memory(alice, agent):
    create(alice, agent["id"])
    assert alice.client.delete(f"/v1/agents/{agent['id']}").status_code == 204
    assert not MemoryFile.objects.exists()


# -- the admin (same rules as the API) -------------------------------------------------------

def test_the_admin_shows_memory_on_the_agent_and_its_own_page(admin_client, alice, agent):
    create(alice, agent["id"], content="Remember: tabs, not spaces.")
    row = MemoryFile.objects.get()
    for url in (f"/admin/agents/agent/{agent['id']}/change/",
                f"/admin/agents/memoryfile/{row.pk}/change/"):
        page = admin_client.get(url)
        assert page.status_code == 200
        assert "Remember: tabs, not spaces." in page.content.decode()


def test_the_admin_refuses_an_invalid_path(admin_client, agent):
    page = admin_client.post("/admin/agents/memoryfile/add/",
                             {"agent": agent["id"], "path": "/a/../b", "content": "x"})
    assert page.status_code == 200  # the form again, with the error
    assert "must be normalized" in page.content.decode()
    assert not MemoryFile.objects.exists()
