"""schedules.admin: read-only but for pausing and resuming, through the services and audited as
the staff user's member of the schedule's tenant (not as the schedule's owner)."""

from __future__ import annotations

from django.urls import reverse

from accounts.models import AuditAction, AuditEntry
from schedules.models import Schedule


def test_pausing_and_resuming_are_audited_as_whoever_did_it(staff_client, alice, make_agent,
                                                            staff_member):
    made = alice.client.post("/v1/schedules", {
        "name": "nightly", "agent": make_agent(alice)["id"], "cron": "0 3 * * *",
        "content": "Go."}, format="json")
    assert made.status_code == 201, made.content
    changelist = reverse("admin:schedules_schedule_changelist")
    for action in ("pause", "resume"):
        response = staff_client.post(changelist, {"action": action,
                                                  "_selected_action": [made.json()["id"]]})
        assert response.status_code == 302
    assert Schedule.objects.get().active
    updates = AuditEntry.objects.filter(action=AuditAction.SCHEDULE_UPDATE)
    assert [e.actor for e in updates] == [staff_member, staff_member]


def test_schedules_are_not_added_changed_or_deleted_here(staff_client, alice, make_agent):
    made = alice.client.post("/v1/schedules", {
        "name": "nightly", "agent": make_agent(alice)["id"], "cron": "0 3 * * *",
        "content": "Go."}, format="json").json()
    assert staff_client.get(reverse("admin:schedules_schedule_add")).status_code == 403
    delete = reverse("admin:schedules_schedule_delete", args=[made["id"]])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert Schedule.objects.exists()
