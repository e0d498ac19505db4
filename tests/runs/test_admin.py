"""runs.admin: sessions, runs and what they hold are read here; the admin writes them only
through the run services (cancel, resume, withdrawing a waiting message), each audited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import AuditAction, AuditEntry
from runs.models import Message, PendingMessage, Run, RunStatus, Session, SessionFile
from tests.support.api import post_message


@pytest.fixture
def session(alice, make_session, hango_settings) -> Session:
    hango_settings(run_inline=False, broker_url="")  # runs stay queued: nothing executes them
    return Session.objects.get(pk=make_session(alice)["id"])


def enqueued(alice, session: Session, text: str):
    return alice.client.post(f"/v1/sessions/{session.pk}/messages",
                             {"content": text, "multitask": "enqueue"}, format="json")


def test_sessions_are_made_through_the_api_not_added_here(staff_client, alice):
    """An agent and its tenant, and the member whose conversation it is: the API makes a
    session as that member (audited as theirs), and an empty one made here could not be
    written to anyway."""
    alice.client.post("/v1/agents", {"name": "helper", "model": "scripted:demo"}, format="json")
    add = reverse("admin:runs_session_add")
    assert staff_client.get(add).status_code == 403
    assert staff_client.post(add, {"title": "by hand"}).status_code == 403
    assert not Session.objects.exists()
    assert 'href="/admin/runs/session/add/"' not in staff_client.get(
        reverse("admin:runs_session_changelist")).content.decode()


def test_a_sessions_summary_and_title_are_read_only(staff_client, session):
    change = reverse("admin:runs_session_change", args=[session.pk])
    response = staff_client.post(change, {"title": "renamed", "summary": "Forged.",
                                          "summary_seq": "5"})
    assert response.status_code == 403
    session.refresh_from_db()
    assert (session.title, session.summary, session.summary_seq) == ("t", "", 0)
    page = staff_client.get(change).content.decode()
    assert 'name="summary"' not in page and 'name="summary_seq"' not in page
    assert 'name="_save"' not in page


@pytest.mark.parametrize("model", [Session, Run, Message, SessionFile])
def test_what_a_run_wrote_is_not_deleted_on_its_own(staff_client, alice, session, model):
    post_message(alice, str(session.pk), "hi")
    SessionFile.objects.create(session=session, path="/notes.md", content="x")
    obj = model.objects.first()
    opts = model._meta
    delete = reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[obj.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=obj.pk).exists()
    listed = staff_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert b'value="delete_selected"' not in listed.content


def test_a_runs_page_saves_nothing_and_its_actions_are_audited(staff_client, alice, session,
                                                               staff_member):
    run = Run.objects.get(pk=post_message(alice, str(session.pk), "hi").json()["run"]["id"])
    change = reverse("admin:runs_run_change", args=[run.pk])
    assert staff_client.post(change, {}).status_code == 403  # no whole-row write from a form
    response = staff_client.post(reverse("admin:runs_run_changelist"),
                                 {"action": "cancel_runs", "_selected_action": [str(run.pk)]})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    entry = AuditEntry.objects.get(action=AuditAction.RUN_CANCEL)
    assert entry.actor == staff_member and entry.object_id == str(run.pk)


def test_withdrawing_a_waiting_message_is_audited(staff_client, alice, session, staff_member):
    post_message(alice, str(session.pk), "first")
    waiting = Run.objects.get(pk=enqueued(alice, session, "second").json()["run"]["id"])
    pending = PendingMessage.objects.get(run=waiting)
    delete = reverse("admin:runs_pendingmessage_delete", args=[pending.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not Run.objects.filter(pk=waiting.pk).exists()
    entry = AuditEntry.objects.get(action=AuditAction.RUN_CANCEL)
    assert entry.actor == staff_member and entry.object_id == str(waiting.pk)
    assert entry.detail == {"session": str(session.pk), "outcome": "withdrawn"}


def test_a_run_no_longer_waiting_is_not_withdrawn(staff_client, alice, session):
    """Between the confirmation page and its POST the waiting run ended (here: as if skipped):
    nothing is deleted, and the page says why instead of failing."""
    post_message(alice, str(session.pk), "first")
    waiting = Run.objects.get(pk=enqueued(alice, session, "second").json()["run"]["id"])
    pending = PendingMessage.objects.get(run=waiting)
    Run.objects.filter(pk=waiting.pk).update(status=RunStatus.CANCELLED)
    delete = reverse("admin:runs_pendingmessage_delete", args=[pending.pk])
    response = staff_client.post(delete, {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert "is no longer waiting" in response.content.decode()
    assert Run.objects.filter(pk=waiting.pk).exists() and PendingMessage.objects.exists()
    assert not AuditEntry.objects.filter(detail__outcome="withdrawn").exists()
