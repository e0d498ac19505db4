"""The broker trigger's service (runs/intake/triggers.py), in this process: what a message must
carry, whose it is, the same idempotency key once, a session's sequence in order, a refusal leaving
nothing behind but its reason."""

from __future__ import annotations

import json
import logging
import threading
import uuid

import pytest
from django.db import connection

from accounts.models import AuditAction, AuditEntry
from accounts.services import api_key_revoke
from runs.execution import tasks
from runs.intake import triggers
from runs.intake.trigger_payload import sign
from runs.intake.triggers import send_message
from runs.models import Message, PendingMessage, Run, Session, Trigger
from tests.support.threads import at_once


@pytest.fixture(autouse=True)
def by_hand(monkeypatch, hango_settings):
    """No run executes: the tests look at what a message leaves, not at its run."""
    hango_settings(run_inline=False, broker_url="", trigger_order_wait_seconds=0.5)
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)


def message(caller, *, signed_with: str | None = None, **fields) -> tuple[str, str]:
    """A payload of ``caller``'s tenant and key, signed with ``signed_with`` (the caller's
    key)."""
    payload = json.dumps({"tenant": str(caller.member.tenant_id),
                          "key": caller.key.split("_")[1], "content": "hello",
                          "idempotency_key": str(uuid.uuid4()), **fields})
    return payload, sign(payload, signed_with or caller.key)


def test_a_message_for_an_agent_starts_a_new_session_and_its_run(alice, make_agent):
    agent = make_agent(alice)
    answer = send_message(*message(alice, agent=agent["id"], title="from billing"))
    assert answer["status"] == "accepted" and answer["run_status"] == "queued"
    run = Run.objects.get(pk=answer["run"])
    session = Session.objects.get(pk=answer["session"])
    assert run.session_id == session.pk and session.member_id == alice.member.pk
    assert session.title == "from billing" and str(session.agent_id) == agent["id"]
    assert Message.objects.get(run=run).content == [{"type": "text", "text": "hello"}]
    audited = set(AuditEntry.objects.values_list("action", flat=True))
    assert {AuditAction.SESSION_CREATE, AuditAction.RUN_CREATE,
            AuditAction.TRIGGER_ACCEPT} <= audited


def test_the_same_idempotency_key_twice_starts_one_run_and_answers_it_twice(alice,
                                                                             make_session):
    session = make_session(alice)
    payload, signature = message(alice, session=session["id"])
    first, again = send_message(payload, signature), send_message(payload, signature)
    assert first["status"] == "accepted" and again["status"] == "duplicate"
    assert again["run"] == first["run"] and Run.objects.count() == 1
    # The same key with another message is refused, and names the message that has it.
    key = json.loads(payload)["idempotency_key"]
    other = send_message(*message(alice, session=session["id"], content="bye",
                                  idempotency_key=key))
    assert other["status"] == "rejected"
    assert other["error"]["code"] == "idempotency_key_reused"
    assert Run.objects.count() == 1


def test_two_workers_taking_the_same_message_at_once_start_one_run(alice, make_session,
                                                                   transactional_db):
    session = make_session(alice)
    payload, signature = message(alice, session=session["id"])
    answers = at_once(lambda: send_message(payload, signature))
    assert sorted(a["status"] for a in answers) == ["accepted", "duplicate"]
    assert answers[0]["run"] == answers[1]["run"] and Run.objects.count() == 1


@pytest.mark.parametrize(("change", "code"), [
    ({"signature": "v1,AAAA"}, "invalid_signature"),
    ({"signed_with": "hk_000000000000_not-the-key"}, "invalid_signature"),
    ({"key": "ffffffffffff"}, "invalid_signature"),
    ({"tenant": str(uuid.uuid4())}, "unknown_tenant"),  # signed with a valid key
    ({"tenant": "acme"}, "unknown_tenant"),  # the tenant's name, not its id
    ({"content": 5}, "validation_error"),
    ({"content": ""}, "validation_error"),
    ({"multitask": "now"}, "validation_error"),
    ({"idempotency_key": None}, "validation_error"),
    ({"sequence": 1}, "validation_error"),  # a sequence orders a session's messages
    ({"session": "not-a-uuid"}, "validation_error"),
    ({"agent_name": "x"}, "validation_error"),  # unknown field: a typo must not pass unnoticed
    ({"session": str(uuid.uuid4())}, "not_found"),
    ({"content": "a\u0000b"}, "validation_error"),  # PostgreSQL could not store it
    ({"content": "x" * 2_000_000}, "too_large"),
])
def test_a_bad_message_is_refused_with_its_reason_and_leaves_nothing(alice, make_agent, change,
                                                                    code, caplog):
    agent = make_agent(alice)
    fields = {"agent": agent["id"], **change}
    signature = fields.pop("signature", None)
    signed_with = fields.pop("signed_with", None)
    if "session" in change:
        fields.pop("agent")
    payload, signed = message(alice, signed_with=signed_with, **fields)
    with caplog.at_level(logging.WARNING, logger="runs.intake.triggers"):
        answer = send_message(payload, signature or signed)
    assert answer["status"] == "rejected" and answer["error"]["code"] == code, answer
    assert not Run.objects.exists() and not Session.objects.exists()
    assert not Trigger.objects.exists()
    assert code in caplog.text and signed not in caplog.text
    content = fields.get("content", "hello")
    assert not isinstance(content, str) or not content or content[:20] not in caplog.text
    if code not in ("invalid_signature", "too_large", "unknown_tenant"):  # audited in the tenant
        entry = AuditEntry.objects.get(action=AuditAction.TRIGGER_REJECT)
        assert entry.detail["code"] == code and "hello" not in json.dumps(entry.detail)
    else:  # refused before its signature was read (anyone's), or naming no tenant: only logged
        assert not AuditEntry.objects.filter(action=AuditAction.TRIGGER_REJECT).exists()


def test_a_signed_message_naming_no_tenant_says_so_and_where_to_find_its_id(alice, make_agent):
    agent = make_agent(alice)["id"]
    for tenant in ("acme", str(uuid.uuid4()), str(alice.member.tenant_id)[:-1], None):
        fields = {"agent": agent, "tenant": tenant} if tenant else {"agent": agent}
        payload, signature = message(alice, **fields)
        if tenant is None:  # no tenant at all
            payload = json.dumps({k: v for k, v in json.loads(payload).items() if k != "tenant"})
            signature = sign(payload, alice.key)
        error = send_message(payload, signature)["error"]
        assert error["code"] == "unknown_tenant", (tenant, error)
        assert "hango whoami" in error["message"] and "GET /v1/me" in error["message"]
        assert error["detail"] == {"tenant": ["Not the id of a tenant."]}
    assert not Session.objects.exists() and not Trigger.objects.exists()


def test_whether_a_tenant_exists_is_told_only_to_a_valid_signature(alice, outsider, make_agent):
    from django.test.utils import CaptureQueriesContext

    agent = make_agent(alice)["id"]
    # Unsigned (or signed with another key): the same answer for an unknown tenant and a real
    # one, and no tenant looked up to tell them apart.
    for tenant in (str(uuid.uuid4()), "acme", str(outsider.member.tenant_id)):
        for signed_with in ("hk_000000000000_not-the-key", outsider.key):
            payload, signature = message(alice, agent=agent, tenant=tenant,
                                         signed_with=signed_with)
            with CaptureQueriesContext(connection) as queries:
                answer = send_message(payload, signature)
            assert answer["error"]["code"] == "invalid_signature", (tenant, answer)
            assert not [q for q in queries if 'FROM "tenants"' in q["sql"]], tenant
    # A valid signature naming a tenant that exists but is not the key's: still no more than
    # invalid_signature, so nothing says whose the key is.
    payload, signature = message(alice, agent=agent, tenant=str(outsider.member.tenant_id))
    assert send_message(payload, signature)["error"]["code"] == "invalid_signature"
    assert not Trigger.objects.exists()


def test_what_is_not_a_signed_json_object_is_refused(alice):
    assert send_message(b"{}", "v1,x")["error"]["code"] == "malformed"
    assert send_message("{not json", "v1,x")["error"]["code"] == "malformed"
    assert send_message("[1]", "v1,x")["error"]["code"] == "malformed"
    payload, _ = message(alice, agent=str(uuid.uuid4()))
    assert send_message(payload, None)["error"]["code"] == "invalid_signature"
    assert triggers.send_message_task(payload)["error"]["code"] == "malformed"
    assert triggers.send_message_task(payload, "v1,x", 3)["error"]["code"] == "malformed"


def test_a_revoked_key_and_a_session_the_member_may_not_see_are_refused(alice, bob, outsider,
                                                                       make_session):
    session = make_session(bob)  # bob's: alice, a plain member, does not see it
    answer = send_message(*message(alice, session=session["id"]))
    assert answer["error"]["code"] == "not_found"
    # Another tenant's owner, with a valid key of their own: the session does not exist there.
    answer = send_message(*message(outsider, session=make_session(alice)["id"]))
    assert answer["error"]["code"] == "not_found"
    api_key_revoke(actor=alice.member, api_key=alice.member.api_keys.get())
    answer = send_message(*message(alice, session=make_session(bob)["id"]))
    assert answer["error"]["code"] == "key_revoked"
    assert not Run.objects.exists()


def test_a_busy_session_queues_the_message_by_default_and_rejects_it_when_asked(
        alice, make_session):
    session = make_session(alice)
    first = send_message(*message(alice, session=session["id"]))
    queued = send_message(*message(alice, session=session["id"]))
    assert queued["status"] == "accepted" and queued["run_status"] == "pending"
    assert PendingMessage.objects.filter(session_id=session["id"]).count() == 1
    busy = send_message(*message(alice, session=session["id"], multitask="reject"))
    assert busy["status"] == "rejected" and busy["error"]["code"] == "conflict"
    assert busy["error"]["detail"]["active_run"] == first["run"]
    assert Trigger.objects.count() == 2  # the refused one left no row


def test_a_session_s_messages_with_a_sequence_are_taken_in_its_order(alice, make_session,
                                                                    transactional_db):
    session = make_session(alice)["id"]
    second = message(alice, session=session, sequence=2, content="second")
    answers: dict[str, dict] = {}

    def take_second() -> None:
        try:
            answers["second"] = send_message(*second)
        finally:
            connection.close()

    waiting = threading.Thread(target=take_second)
    waiting.start()  # it waits for message 1
    first = send_message(*message(alice, session=session, sequence=1, content="first"))
    waiting.join(10)
    assert first["status"] == "accepted" and answers["second"]["status"] == "accepted"
    runs = list(Run.objects.filter(session_id=session).order_by("created_at")
                .values_list("pk", flat=True))
    assert [str(r) for r in runs] == [first["run"], answers["second"]["run"]]
    # A sequence already taken is refused; one whose predecessor never comes, after the wait.
    again = send_message(*message(alice, session=session, sequence=2, content="again"))
    assert again["error"]["code"] == "sequence_taken"
    late = send_message(*message(alice, session=session, sequence=4, content="fourth"))
    assert late["error"]["code"] == "predecessor_missing"
    assert AuditEntry.objects.filter(action=AuditAction.TRIGGER_REJECT,
                                     detail__code="predecessor_missing").exists()
    assert Trigger.objects.filter(session_id=session).count() == 2


def test_the_admin_lists_the_messages_taken_and_adds_or_changes_none(staff_client, alice,
                                                                    make_agent):
    from django.urls import reverse

    answer = send_message(*message(alice, agent=make_agent(alice)["id"], idempotency_key="i-1"))
    listed = staff_client.get(reverse("admin:runs_trigger_changelist"))
    assert listed.status_code == 200 and "i-1" in listed.content.decode()
    page = staff_client.get(reverse("admin:runs_trigger_change", args=[answer["trigger"]]))
    assert page.status_code == 200 and answer["run"] in page.content.decode()
    assert staff_client.get(reverse("admin:runs_trigger_add")).status_code == 403


def test_a_message_may_name_a_webhook_told_of_its_run_s_end(alice, outsider, make_agent):
    from runs.intake.services import run_cancel
    from webhooks.models import Delivery

    endpoint = alice.client.post("/v1/webhooks", {"url": "https://hooks.example.com/x"},
                                 format="json").json()
    answer = send_message(*message(alice, agent=make_agent(alice)["id"],
                                   webhook=endpoint["id"]))
    assert Trigger.objects.get(pk=answer["trigger"]).webhook_id == uuid.UUID(endpoint["id"])
    run_cancel(run=Run.objects.get(pk=answer["run"]), actor=alice.member)
    delivery = Delivery.objects.get()
    assert (str(delivery.endpoint_id), delivery.event, str(delivery.run_id)) == (
        endpoint["id"], "run.cancelled", answer["run"])
    # Another tenant's webhook does not exist for this key's member.
    foreign = outsider.client.post("/v1/webhooks", {"url": "https://hooks.example.com/y"},
                                   format="json").json()
    refused = send_message(*message(alice, agent=make_agent(alice)["id"],
                                    webhook=foreign["id"]))
    assert refused["error"]["code"] == "not_found"


def test_a_sequenced_message_taken_twice_at_once_is_a_duplicate_not_a_refusal(
        alice, make_session, transactional_db):
    session = make_session(alice)
    payload, signature = message(alice, session=session["id"], sequence=1)
    answers = at_once(lambda: send_message(payload, signature))
    assert sorted(a["status"] for a in answers) == ["accepted", "duplicate"]


def test_hostile_payloads_are_refused_not_crashed_on(alice, bob, make_session):
    assert send_message("[" * 5000, "v1,x")["error"]["code"] == "malformed"
    payload, signature = message(alice, agent=str(uuid.uuid4()))
    assert send_message(payload, "v1,ſignature")["error"]["code"] == "invalid_signature"
    surrogate = payload.replace('"hello"', '"\\ud800"')
    refused = send_message(surrogate, sign(surrogate, alice.key))
    assert refused["error"]["code"] == "validation_error"
    # Another member of the tenant reusing an idempotency key gets no answer of the first's.
    session = make_session(alice)
    first = send_message(*message(alice, session=session["id"], idempotency_key="shared"))
    assert first["status"] == "accepted"
    other = send_message(*message(bob, agent=str(uuid.uuid4()), idempotency_key="shared"))
    assert other["error"]["code"] == "idempotency_key_reused"


def test_the_database_s_digests_sign_nothing_and_old_keys_cannot_sign(alice, make_agent):
    import base64
    import hashlib
    import hmac as hmac_

    from accounts.models import ApiKey

    payload, _ = message(alice, agent=make_agent(alice)["id"])
    stored = ApiKey.objects.get(member=alice.member)
    forged = hmac_.new(stored.secret_hash.encode(), payload.encode(), hashlib.sha256).digest()
    answer = send_message(payload, "v1," + base64.b64encode(forged).decode())
    assert answer["error"]["code"] == "invalid_signature"
    assert stored.trigger_key and stored.trigger_key not in (sign(payload, alice.key), alice.key)
    ApiKey.objects.filter(pk=stored.pk).update(trigger_key="")  # issued before triggers
    answer = send_message(payload, sign(payload, alice.key))
    assert answer["error"]["code"] == "key_cannot_sign"
