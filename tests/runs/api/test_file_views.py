"""``/v1/sessions/{id}/files``: the session's virtual filesystem, listed and read, with the
session's visibility (somebody else's session → 404, owners and admins see their tenant's)."""

from __future__ import annotations

import uuid

import pytest

from runs.execution.stores import DbFileStore


@pytest.fixture
def session(alice, make_session):
    return make_session(alice)


def write(session: dict, files: dict[str, str]) -> None:
    store = DbFileStore(uuid.UUID(session["id"]))
    for path, content in files.items():
        store.write(path, content)


def files_url(session: dict, path: str = "") -> str:
    return f"/v1/sessions/{session['id']}/files" + (f"/{path}" if path else "")


def test_list_files_in_path_order(alice, session):
    write(session, {"/notes/b.md": "bee", "/a.txt": "héllo", "/notes/a.md": ""})
    response = alice.client.get(files_url(session))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"results", "next", "previous"}
    assert [(f["path"], f["size"]) for f in body["results"]] == [
        ("/a.txt", 6), ("/notes/a.md", 0), ("/notes/b.md", 3)]  # bytes
    assert all(set(f) == {"path", "size", "updated_at"} for f in body["results"])
    assert body["results"][0]["updated_at"].endswith("Z")


def test_an_empty_filesystem_lists_nothing(alice, session):
    assert alice.client.get(files_url(session)).json()["results"] == []


def test_list_pages(alice, session):
    write(session, {f"/f{i}": str(i) for i in range(5)})
    first = alice.client.get(files_url(session) + "?limit=2").json()
    assert [f["path"] for f in first["results"]] == ["/f0", "/f1"]
    second = alice.client.get(first["next"]).json()
    assert [f["path"] for f in second["results"]] == ["/f2", "/f3"]


def test_get_a_file(alice, session):
    write(session, {"/notes/plan.md": "# Plan\n1. go\n"})
    response = alice.client.get(files_url(session, "notes/plan.md"))
    assert response.status_code == 200
    assert response.json() == {"path": "/notes/plan.md", "content": "# Plan\n1. go\n"}
    # The leading slash may be given, encoded or not; the path is normalised.
    for spelled in ("%2Fnotes%2Fplan.md", "/notes/plan.md", "notes/./plan.md"):
        again = alice.client.get(files_url(session, spelled))
        assert again.status_code == 200, spelled
        assert again.json()["path"] == "/notes/plan.md"


@pytest.mark.parametrize("path", ["missing.md", "notes", "notes/../x", "a%00b"])
def test_a_missing_or_invalid_path_answers_404(alice, session, path):
    write(session, {"/notes/plan.md": "x"})
    response = alice.client.get(files_url(session, path))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_other_members_and_tenants_get_404_owners_and_admins_see(
        alice, bob, admin, owner, outsider, session):
    write(session, {"/secret.md": "s"})
    for caller in (bob, outsider):
        for url in (files_url(session), files_url(session, "secret.md")):
            response = caller.client.get(url)
            assert response.status_code == 404, (caller.member.email, url)
            assert response.json()["error"]["code"] == "not_found"
    for caller in (admin, owner):
        assert caller.client.get(files_url(session)).json()["results"][0]["path"] == "/secret.md"
        assert caller.client.get(files_url(session, "secret.md")).json()["content"] == "s"


def test_an_unknown_session_answers_404(alice):
    for url in (f"/v1/sessions/{uuid.uuid4()}/files", "/v1/sessions/nope/files/a.md"):
        assert alice.client.get(url).status_code == 404


def test_files_are_read_only_and_need_a_key(alice, anon, session):
    write(session, {"/a.md": "a"})
    assert alice.client.post(files_url(session), {}, format="json").status_code == 405
    assert alice.client.put(files_url(session, "a.md"), {}, format="json").status_code == 405
    assert anon.get(files_url(session)).status_code == 401
    assert anon.get(files_url(session, "a.md")).status_code == 401
