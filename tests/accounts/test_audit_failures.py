"""The audit log's rules for what is not a write: a refused or failed write leaves no row,
details never carry secrets, a row needs the write's transaction; and API keys issued and
revoked through the services (or the command line) audited as such."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction

from accounts.audit import audit_record
from accounts.models import ApiKey, AuditAction
from accounts.services import api_key_issue, api_key_revoke
from runs.intake import services as run_services
from runs.models import Run, Session
from tests.support.api import AGENT_BODY, post_message
from tests.support.audit_routes import new_rows, queued_run, row_ids

# -- failed writes leave no row ---------------------------------------------------------------


def test_a_refused_write_records_nothing(alice, bob, world):
    before = row_ids()
    # 409: the name is taken; 422: an unknown skill; 404: somebody else's agent.
    assert alice.client.post("/v1/skills", {"name": "pdf-forms", "description": "x",
                                            "instructions": "y"}, format="json").status_code == 409
    assert alice.client.post("/v1/agents", {**AGENT_BODY, "config": {"skills": [
        "00000000-0000-0000-0000-000000000000"]}}, format="json").status_code == 422
    assert bob.client.delete(f"/v1/agents/{world['agent']}").status_code == 404
    assert bob.client.delete(f"/v1/skills/{world['skill']}").status_code == 403
    assert new_rows(before) == []
    run_id = queued_run(alice, world)
    before = row_ids()
    assert alice.client.post(f"/v1/runs/{run_id}/resume").status_code == 409
    assert post_message(alice, world["session"]).status_code == 409
    assert new_rows(before) == []


def test_a_write_that_fails_after_recording_rolls_its_row_back(alice, world, monkeypatch):
    session = Session.objects.get(pk=world["session"])

    def broken(run_id, **_):
        raise RuntimeError("broker down")

    monkeypatch.setattr("runs.execution.tasks.enqueue_run", broken)
    before = row_ids()
    with pytest.raises(RuntimeError):
        run_services.message_post(session=session, content="hi", actor=alice.member)
    assert new_rows(before) == [] and not Run.objects.filter(session=session).exists()


def test_audit_record_refuses_secrets_shaped_details_and_unknown_actions(alice):
    with pytest.raises(ValueError), transaction.atomic():
        audit_record(actor=alice.member, tenant=alice.member.tenant, action=AuditAction.RUN_CREATE,
                     obj_type="run", obj_id="x", detail={"content": "hello"})
    with pytest.raises(ValueError), transaction.atomic():
        audit_record(actor=alice.member, tenant=alice.member.tenant,
                     action="run.delete",  # type: ignore[arg-type]
                     obj_type="run", obj_id="x", detail={})


@pytest.mark.django_db(transaction=True)
def test_audit_record_needs_the_write_transaction(tenant):
    with pytest.raises(RuntimeError):
        audit_record(actor=None, tenant=tenant, action=AuditAction.AGENT_CREATE,
                     obj_type="agent", obj_id="x", detail={})


# -- API keys ---------------------------------------------------------------------------------


def test_key_create_and_revoke_through_the_services(owner, alice):
    before = row_ids()
    issued = api_key_issue(member=alice.member, name="ci", actor=owner.member)
    api_key_revoke(api_key=issued.api_key, actor=owner.member)
    api_key_revoke(api_key=issued.api_key, actor=owner.member)  # already revoked: no write
    created, revoked = new_rows(before)
    expected = {"prefix": issued.api_key.prefix, "name": "ci", "member": str(alice.member.pk)}
    assert (created.action, created.object_type, created.object_id) == (
        AuditAction.API_KEY_CREATE, "api_key", str(issued.api_key.pk))
    assert (revoked.action, revoked.object_id) == (AuditAction.API_KEY_REVOKE,
                                                   str(issued.api_key.pk))
    assert created.detail == revoked.detail == expected
    assert created.actor_id == revoked.actor_id == owner.member.pk


def test_a_key_from_the_command_line_has_no_actor_and_names_its_member(owner):
    before = row_ids()
    call_command("hango_create_key", "--tenant", "acme", "--email", "carol@acme.test",
                 "--role", "member", "--key-name", "laptop", stdout=StringIO())
    [row] = new_rows(before)
    key = ApiKey.objects.get(name="laptop")
    assert row.action == AuditAction.API_KEY_CREATE and row.actor is None
    assert row.detail == {"prefix": key.prefix, "name": "laptop", "member": str(key.member_id)}
