"""inspector.admin: overrides are read here, and deleted only through the rules of the API's PUT —
an excluded message goes with its pair, a set that would leave an invalid request is refused,
and each deletion is a ``context.override`` audit row."""

from __future__ import annotations

from django.urls import reverse

from accounts.models import AuditAction, AuditEntry
from context.models import ContextOverride
from tests.support.api import post_message


def put(caller, url: str, overrides: list[dict]) -> None:
    response = caller.client.put(url, overrides, format="json")
    assert response.status_code == 200, response.content


def excluded(*parts: str) -> list[dict]:
    return [{"part": p, "action": "exclude"} for p in parts]


def stored() -> set[str]:
    return set(ContextOverride.objects.values_list("part", flat=True))


def delete_url(part: str) -> str:
    override = ContextOverride.objects.get(part=part)
    return reverse("admin:context_contextoverride_delete", args=[override.pk])


def test_deleting_an_excluded_message_deletes_its_pair_and_is_audited(staff_client, alice, demo,
                                                                      staff_member):
    session_url = f"/v1/sessions/{demo['id']}/context-overrides"
    put(alice, session_url, excluded("message:5", "message:10"))
    assert stored() == {"message:4", "message:5", "message:10"}
    confirm = staff_client.get(delete_url("message:5")).content.decode()
    assert "exclude message:4" in confirm  # the confirmation names the pair too
    response = staff_client.post(delete_url("message:5"), {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert "message:4" in response.content.decode()
    assert stored() == {"message:10"}
    assert alice.client.get(session_url).json()["overrides"] == [
        {"part": "message:10", "action": "exclude", "replacement": None}]
    entry = AuditEntry.objects.filter(action=AuditAction.CONTEXT_OVERRIDE).latest("created_at")
    assert entry.actor == staff_member and entry.object_id == demo["id"]
    assert entry.detail == {"overrides": [{"part": "message:10", "action": "exclude"}],
                            "added": []}


def test_an_agents_override_is_deleted_through_its_put(staff_client, alice, demo):
    agent_url = f"/v1/agents/{demo['agent']}/context-overrides"
    put(alice, agent_url, [{"part": "system:agent", "action": "replace", "replacement": "Hi."},
                           *excluded("tool:echo")])
    response = staff_client.post(delete_url("tool:echo"), {"post": "yes"})
    assert response.status_code == 302
    assert stored() == {"system:agent"}
    entry = AuditEntry.objects.filter(action=AuditAction.CONTEXT_OVERRIDE).latest("created_at")
    assert entry.actor is None  # the staff user is no member of the tenant
    assert entry.object_type == "agent" and entry.detail["overrides"] == [
        {"part": "system:agent", "action": "replace"}]


def test_deleting_several_at_once_writes_one_set_per_target(staff_client, alice, demo):
    put(alice, f"/v1/sessions/{demo['id']}/context-overrides", excluded("message:7", "message:10"))
    put(alice, f"/v1/agents/{demo['agent']}/context-overrides", excluded("tool:echo"))
    before = AuditEntry.objects.filter(action=AuditAction.CONTEXT_OVERRIDE).count()
    chosen = ContextOverride.objects.filter(part__in=["message:7", "tool:echo"])
    response = staff_client.post(reverse("admin:context_contextoverride_changelist"), {
        "action": "delete_selected", "post": "yes",
        "_selected_action": [str(o.pk) for o in chosen]})
    assert response.status_code == 302
    assert stored() == {"message:10"}  # message:6 went with message:7
    assert AuditEntry.objects.filter(action=AuditAction.CONTEXT_OVERRIDE).count() == before + 2


def test_a_deletion_that_would_leave_an_invalid_request_is_refused(staff_client, alice, demo,
                                                                   hango_settings):
    """Everything up to the first answer left out, the second question first: putting the
    answer back alone would start the request with the model's message."""
    assert post_message(alice, demo["id"], "and now?").json()["run"]["status"] == "completed"
    everything = [f"message:{i}" for i in range(1, 11)]
    put(alice, f"/v1/sessions/{demo['id']}/context-overrides", excluded(*everything))
    before = AuditEntry.objects.count()
    response = staff_client.post(delete_url("message:10"), {"post": "yes"}, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "invalid request" in page and "message:10" in page
    assert stored() == set(everything)
    assert AuditEntry.objects.count() == before


def test_overrides_are_not_added_or_changed_here(staff_client, alice, demo):
    put(alice, f"/v1/sessions/{demo['id']}/context-overrides", excluded("message:10"))
    override = ContextOverride.objects.get()
    assert staff_client.get(reverse("admin:context_contextoverride_add")).status_code == 403
    change = reverse("admin:context_contextoverride_change", args=[override.pk])
    assert staff_client.post(change, {"part": "message:1", "action": "exclude"}).status_code == 403
    assert stored() == {"message:10"}
