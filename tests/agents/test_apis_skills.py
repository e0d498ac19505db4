"""``/v1/skills``: tenant-wide skills — every member reads and creates; the skill's owner and the
tenant's owners and admins change and delete (other members: 403); other tenants: 404. Agents
attach them by id in ``config.skills``."""

from __future__ import annotations

import uuid

import pytest

from agents.models import Agent, Skill
from tests.support.api import error_of, walk

FIELDS = {"id", "name", "description", "instructions", "allowed_tools"}
SKILL = {"name": "pdf-forms", "description": "Fill in PDF forms.",
         "instructions": "1. Read the form.\n2. Fill every field.\n",
         "allowed_tools": ["echo"]}


@pytest.fixture
def make_skill():
    def _make(caller, **overrides) -> dict:
        response = caller.client.post("/v1/skills", {**SKILL, **overrides}, format="json")
        assert response.status_code == 201, response.content
        return response.json()

    return _make


@pytest.fixture
def skill(alice, make_skill) -> dict:
    return make_skill(alice)


def test_create_returns_the_skill(alice):
    response = alice.client.post("/v1/skills", SKILL, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == FIELDS
    assert {k: body[k] for k in SKILL} == SKILL
    row = Skill.objects.get(pk=body["id"])
    assert (row.tenant_id, row.owner_id) == (alice.member.tenant_id, alice.member.id)


def test_optional_fields_default(alice):
    response = alice.client.post("/v1/skills", {"name": "a", "description": "d"}, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["instructions"], response.json()["allowed_tools"]) == ("", None)


def test_read_list_update_delete(alice, skill, make_skill):
    other = make_skill(alice, name="a-first")
    assert alice.client.get(f"/v1/skills/{skill['id']}").json() == skill
    items, _ = walk(alice.client, "/v1/skills")
    assert [s["id"] for s in items] == [other["id"], skill["id"]]  # by name

    patched = alice.client.patch(f"/v1/skills/{skill['id']}",
                                 {"description": "New.", "allowed_tools": None}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json() == {**skill, "description": "New.", "allowed_tools": None}

    assert alice.client.delete(f"/v1/skills/{skill['id']}").status_code == 204
    error_of(alice.client.get(f"/v1/skills/{skill['id']}"), 404, "not_found")
    assert not Skill.objects.filter(pk=skill["id"]).exists()


@pytest.mark.parametrize("field, value", [
    ("name", ""), ("name", "PDF"), ("name", "pdf forms"), ("name", "-pdf"), ("name", "pdf-"),
    ("name", "pdf--forms"), ("name", "pdf_forms"), ("name", "a" * 65), ("name", 5),
    ("description", ""), ("description", "d" * 1025),
    ("instructions", 7), ("allowed_tools", "echo"), ("allowed_tools", ["bad name"]),
    ("allowed_tools", ["echo", "echo"]), ("allowed_tools", {"echo": True}),
])
def test_invalid_content_is_422_naming_the_field(alice, field, value):
    response = alice.client.post("/v1/skills", {**SKILL, field: value}, format="json")
    error = error_of(response, 422, "validation_error")
    assert list(error["detail"]) == [field]
    assert not Skill.objects.exists()


def test_limits_are_inclusive(alice, hango_settings):
    hango_settings(skill_max_instructions_chars=10)
    body = {"name": "a" * 64, "description": "d" * 1024, "instructions": "i" * 10}
    assert alice.client.post("/v1/skills", body, format="json").status_code == 201
    too_long = {**body, "name": "b", "instructions": "i" * 11}
    error = error_of(alice.client.post("/v1/skills", too_long, format="json"), 422)
    assert list(error["detail"]) == ["instructions"]


def test_a_taken_name_is_a_409(alice, bob, skill, make_skill, outsider):
    error = error_of(bob.client.post("/v1/skills", SKILL, format="json"), 409, "conflict")
    assert error["detail"] == {"name": "pdf-forms"}
    other = make_skill(alice, name="other")
    rename = alice.client.patch(f"/v1/skills/{other['id']}", {"name": "pdf-forms"},
                                format="json")
    error_of(rename, 409, "conflict")
    assert Skill.objects.get(pk=other["id"]).name == "other"
    make_skill(outsider)  # names are unique per tenant only


def test_server_fields_are_refused_and_nothing_is_written(alice, bob, other_tenant, skill):
    extras = {"id": str(uuid.uuid4()), "tenant": str(other_tenant.id),
              "tenant_id": str(other_tenant.id), "owner": str(bob.member.id),
              "owner_id": str(bob.member.id), "created_at": "2001-02-03T04:05:06Z"}
    response = alice.client.post("/v1/skills", {**SKILL, "name": "other", **extras},
                                 format="json")
    assert error_of(response, 422, "validation_error")["detail"] == {
        name: ["Unknown field."] for name in extras}
    assert Skill.objects.count() == 1

    before = Skill.objects.values().get()
    patched = alice.client.patch(f"/v1/skills/{skill['id']}", {"description": "New.", **extras},
                                 format="json")
    assert error_of(patched, 422)["detail"] == {name: ["Unknown field."] for name in extras}
    assert Skill.objects.values().get() == before


# -- authorization ---------------------------------------------------------------------------

@pytest.mark.parametrize("who", ["alice", "bob", "admin", "owner"])
def test_every_member_of_the_tenant_reads_skills(request, skill, who):
    client = request.getfixturevalue(who).client
    assert client.get(f"/v1/skills/{skill['id']}").json() == skill
    assert [s["id"] for s in client.get("/v1/skills").json()["results"]] == [skill["id"]]


@pytest.mark.parametrize("method, body", [("get", None), ("patch", {"description": "x"}),
                                          ("delete", None)])
def test_another_tenant_gets_the_missing_id_404(outsider, skill, method, body):
    send = getattr(outsider.client, method)
    response = send(f"/v1/skills/{skill['id']}", body, format="json")
    error_of(response, 404, "not_found")
    missing = send(f"/v1/skills/{uuid.uuid4()}", body, format="json")
    assert response.content == missing.content
    assert outsider.client.get("/v1/skills").json()["results"] == []
    assert Skill.objects.get(pk=skill["id"]).description == SKILL["description"]


@pytest.mark.parametrize("method, body", [("patch", {"description": "hijacked"}),
                                          ("patch", {"name": "BAD NAME"}),  # 403 before 422
                                          ("delete", None)])
def test_another_member_may_not_change_it(bob, skill, method, body):
    before = Skill.objects.values().get(pk=skill["id"])
    response = getattr(bob.client, method)(f"/v1/skills/{skill['id']}", body, format="json")
    error_of(response, 403, "permission_denied")
    assert Skill.objects.values().get(pk=skill["id"]) == before


@pytest.mark.parametrize("who", ["alice", "admin", "owner"])
def test_the_owner_and_tenant_admins_may_change_and_delete(request, skill, who):
    client = request.getfixturevalue(who).client
    response = client.patch(f"/v1/skills/{skill['id']}", {"description": "ok"}, format="json")
    assert response.status_code == 200, response.content
    assert client.delete(f"/v1/skills/{skill['id']}").status_code == 204


# -- attaching skills to agents --------------------------------------------------------------

def agent_with(caller, skills):
    body = {"name": "a", "model": "scripted:demo", "config": {"skills": skills}}
    return caller.client.post("/v1/agents", body, format="json")


def test_an_agent_may_use_any_skill_of_its_tenant(alice, bob, skill):
    response = agent_with(bob, [skill["id"]])
    assert response.status_code == 201, response.content
    assert response.json()["config"]["skills"] == [skill["id"]]


def test_skill_ids_are_stored_canonically(alice, skill):
    response = agent_with(alice, [skill["id"].upper()])
    assert response.json()["config"]["skills"] == [skill["id"]]


def test_an_unknown_or_foreign_skill_id_is_422_alike(alice, outsider, skill, make_skill):
    foreign = make_skill(outsider)
    responses = [agent_with(alice, [i]) for i in (foreign["id"], str(uuid.uuid4()))]
    for response in responses:
        error = error_of(response, 422, "validation_error")
        assert list(error["detail"]) == ["config"]
    assert responses[0].json()["error"]["detail"]["config"][0].startswith(
        "skills: there is no skill with id")
    assert not Agent.objects.filter(tenant_id=alice.member.tenant_id).exists()

    agent = agent_with(alice, [skill["id"]]).json()
    patched = alice.client.patch(f"/v1/agents/{agent['id']}",
                                 {"config": {"skills": [skill["id"], foreign["id"]]}},
                                 format="json")
    error_of(patched, 422, "validation_error")
    assert Agent.objects.get(pk=agent["id"]).config == {"skills": [skill["id"]]}


def test_deleting_a_skill_detaches_it_from_agents(alice, bob, skill, make_skill):
    other = make_skill(alice, name="other")
    mine = agent_with(alice, [skill["id"], other["id"]]).json()
    bobs = agent_with(bob, [skill["id"]]).json()
    assert alice.client.delete(f"/v1/skills/{skill['id']}").status_code == 204
    assert Agent.objects.get(pk=mine["id"]).config == {"skills": [other["id"]]}
    assert Agent.objects.get(pk=bobs["id"]).config == {"skills": []}


def test_deleting_a_skill_in_the_admin_detaches_it_too(admin_client, alice, skill):
    agent = agent_with(alice, [skill["id"]]).json()
    page = admin_client.post(f"/admin/agents/skill/{skill['id']}/delete/", {"post": "yes"})
    assert page.status_code == 302
    assert not Skill.objects.exists()
    assert Agent.objects.get(pk=agent["id"]).config == {"skills": []}
