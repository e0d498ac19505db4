"""Webhooks: endpoints through the API, a run's end told to them, signed per Standard Webhooks
(checked with the spec's own library), retried with backoff, refused for private addresses,
secrets shown once and rotated with overlap."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from django.test import override_settings
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from accounts.models import AuditAction, AuditEntry
from runs.intake.services import message_post, run_cancel
from runs.models import Run, Session
from tests.support.api import error_of
from tests.support.receiver import receiver
from webhooks import delivery
from webhooks.models import Delivery, DeliveryStatus, Endpoint


@pytest.fixture
def local(hango_settings, transactional_db):
    """Deliveries to 127.0.0.1 allowed, attempted at once when their transaction commits, and
    retried after a fifth of a second."""
    hango_settings(webhook_allow_private=True, run_inline=True, broker_url="",
                   webhook_retry_base_seconds=0.2, webhook_max_attempts=3)


def make_endpoint(caller, url: str, **fields) -> dict:
    response = caller.client.post("/v1/webhooks", {"url": url, **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def settled(delivery_id: str, timeout: float = 10) -> Delivery:
    """The delivery once it is no longer pending (its last answer is written after the
    receiver has it)."""
    deadline = time.monotonic() + timeout
    while (found := Delivery.objects.get(pk=delivery_id)).status == DeliveryStatus.PENDING:
        assert time.monotonic() < deadline, "the delivery stayed pending"
        time.sleep(0.02)
    return found


def verified(secret: str, got) -> dict:
    return Webhook(secret).verify(got.body, got.headers)


def test_a_run_s_end_is_told_to_its_agent_s_endpoint_signed(alice, make_agent, make_session,
                                                           local):
    agent = make_agent(alice, model="scripted:demo")
    with receiver() as hook:
        endpoint = make_endpoint(alice, hook.url, agent=agent["id"])
        assert endpoint["secret"].startswith("whsec_")
        session = make_session(alice, agent_id=agent["id"])
        posted = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                   {"content": "count these words"}, format="json")
        run_id = posted.json()["run"]["id"]
        got = hook.wait_for(1)[0]
    assert got.path == "/hooks/hango?token=t0k3n"
    event = verified(endpoint["secret"], got)
    run = Run.objects.get(pk=run_id)
    assert event["type"] == "run.completed"
    assert event["data"] == {
        "run": run_id, "session": session["id"], "agent": agent["id"], "status": "completed",
        "error": None, "turn": run.turn,
        "usage": {"input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
                  "cache_read_tokens": 0, "cache_write_tokens": 0}}
    assert got.headers["webhook-id"] == f"msg_{Delivery.objects.get().pk.hex}"
    with pytest.raises(WebhookVerificationError):  # another secret does not verify it
        Webhook("whsec_" + "A" * 32).verify(got.body, got.headers)
    log = alice.client.get(f"/v1/webhooks/{endpoint['id']}/deliveries").json()["results"]
    assert [(d["event"], d["status"], d["attempts"], d["last_status_code"]) for d in log] == [
        ("run.completed", "succeeded", 1, 200)]


def test_an_end_written_by_the_orm_tells_the_same_data(alice, make_agent, make_session,
                                                       local, monkeypatch):
    from runs.execution import tasks

    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)  # the run waits, queued
    agent = make_agent(alice)
    with receiver() as hook:
        endpoint = make_endpoint(alice, hook.url, agent=agent["id"],
                                 events=["run.cancelled"])
        session = Session.objects.get(pk=make_session(alice, agent_id=agent["id"])["id"])
        _, run = message_post(session=session, content="hi")
        run_cancel(run=run, actor=alice.member)  # nobody holds it: cancelled at once
        event = verified(endpoint["secret"], hook.wait_for(1)[0])
    assert event["type"] == "run.cancelled"
    assert event["data"] == {
        "run": str(run.pk), "session": str(session.pk), "agent": agent["id"],
        "status": "cancelled", "error": None, "turn": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                  "cache_write_tokens": 0}}


def test_an_endpoint_that_fails_is_tried_again_then_given_up(alice, local):
    with receiver() as hook:
        hook.answers = [500, 503]
        endpoint = make_endpoint(alice, hook.url)
        ping = alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping")
        assert ping.status_code == 202
        got = hook.wait_for(3, timeout=10)
        settled(ping.json()["id"])
        ids = {g.headers["webhook-id"] for g in got}
        assert len(ids) == 1  # every attempt the same message: a receiver drops repeats
        stamps = [int(g.headers["webhook-timestamp"]) for g in got]
        assert stamps == sorted(stamps)
        done = Delivery.objects.get(pk=ping.json()["id"])
        assert (done.status, done.attempts, done.last_status_code) == (
            DeliveryStatus.SUCCEEDED, 3, 200)
        hook.answers = [500, 500, 500]
        failed = alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping").json()
        hook.wait_for(6, timeout=10)
        failed = settled(failed["id"])
    assert (failed.status, failed.attempts, failed.last_error) == (
        DeliveryStatus.FAILED, 3, "the endpoint answered 500")


def test_a_private_address_is_refused_unless_allowed(alice, hango_settings, transactional_db):
    hango_settings(run_inline=True, broker_url="")
    refused = alice.client.post("/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, format="json")
    assert "non-public" in str(error_of(refused, 422, "validation_error")["detail"]["url"])
    # A name that resolves to a private address passes creation, and fails at delivery.
    endpoint = make_endpoint(alice, "http://localhost:9/x")
    ping = alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping").json()
    attempted = Delivery.objects.get(pk=ping["id"])
    assert attempted.status == DeliveryStatus.FAILED and attempted.attempts == 1
    assert "non-public address" in attempted.last_error
    with pytest.raises(delivery.Refused):
        delivery.public_target("http://[::1]:8080/")
    for bad in ("ftp://example.com/", "http://user:pw@example.com/", "not a url"):
        response = alice.client.post("/v1/webhooks", {"url": bad}, format="json")
        error_of(response, 422, "validation_error")


def test_a_rotated_secret_signs_beside_the_old_one_until_the_overlap_ends(alice, local):
    with receiver() as hook:
        endpoint = make_endpoint(alice, hook.url)
        rotated = alice.client.post(f"/v1/webhooks/{endpoint['id']}/rotate").json()
        assert rotated["secret"] != endpoint["secret"]
        assert rotated["previous_secret_signs_until"] is not None
        alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping")
        got = hook.wait_for(1)[0]
        assert len(got.headers["webhook-signature"].split()) == 2
        verified(endpoint["secret"], got)  # a receiver not yet switched
        verified(rotated["secret"], got)
        Endpoint.objects.filter(pk=endpoint["id"]).update(previous_secret_expires_at=None)
        alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping")
        later = hook.wait_for(2)[1]
    verified(rotated["secret"], later)
    with pytest.raises(WebhookVerificationError):
        verified(endpoint["secret"], later)


def test_the_secret_is_shown_once_kept_sealed_and_never_audited(alice, local):
    endpoint = make_endpoint(alice, "http://127.0.0.1:9/x?token=s3cr3t")
    shown = alice.client.get(f"/v1/webhooks/{endpoint['id']}").json()
    assert "secret" not in shown and shown["url"] == "http://127.0.0.1:9/x?token=s3cr3t"
    stored = Endpoint.objects.get(pk=endpoint["id"])
    assert endpoint["secret"] not in stored.secret and endpoint["secret"][6:] not in stored.secret
    audit = json.dumps(list(AuditEntry.objects.values_list("detail", flat=True)))
    assert endpoint["secret"] not in audit and "s3cr3t" not in audit
    assert AuditEntry.objects.filter(action=AuditAction.WEBHOOK_CREATE).count() == 1
    # Under another DJANGO_SECRET_KEY the sealed secret opens no more: the delivery says so.
    with override_settings(SECRET_KEY="another-key"):
        ping = alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping").json()
    failed = Delivery.objects.get(pk=ping["id"])
    assert failed.status == DeliveryStatus.FAILED and "rotate it" in failed.last_error


def test_endpoints_answer_their_tenant_s_rule(alice, bob, admin, outsider, make_agent, local):
    endpoint = make_endpoint(alice, "http://127.0.0.1:9/x")
    for other in (bob, outsider):
        for path in ("", "/deliveries", "/ping", "/rotate"):
            method = "post" if path in ("/ping", "/rotate") else "get"
            response = getattr(other.client, method)(f"/v1/webhooks/{endpoint['id']}{path}")
            error_of(response, 404, "not_found")
        assert other.client.get("/v1/webhooks").json()["results"] == []
    assert [e["id"] for e in admin.client.get("/v1/webhooks").json()["results"]] == [
        endpoint["id"]]
    foreign = make_agent(outsider)
    response = alice.client.post("/v1/webhooks", {"url": "http://127.0.0.1:9/y",
                                                  "agent": foreign["id"]}, format="json")
    error_of(response, 422, "validation_error")
    changed = alice.client.patch(f"/v1/webhooks/{endpoint['id']}",
                                 {"active": False, "events": ["run.failed"]}, format="json")
    assert changed.json()["active"] is False and changed.json()["events"] == ["run.failed"]
    assert alice.client.delete(f"/v1/webhooks/{endpoint['id']}").status_code == 204
    assert not Endpoint.objects.exists()


def test_urls_that_cannot_be_called_are_refused_and_never_retried_forever(alice, local):
    for bad in ("http://[::1", "https://example.com:99999/x"):
        error_of(alice.client.post("/v1/webhooks", {"url": bad}, format="json"), 422)
    endpoint = make_endpoint(alice, "https://bücher.example/hook")  # a name in IDNA: allowed
    Endpoint.objects.filter(pk=endpoint["id"]).update(url="https://example.com:99999/x")
    ping = alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping").json()
    failed = Delivery.objects.get(pk=ping["id"])
    assert failed.status == DeliveryStatus.FAILED and failed.attempts == 1
    # Attempts used up by workers that died mid-attempt: the next look gives it up.
    stuck = Delivery.objects.create(tenant_id=failed.tenant_id, endpoint_id=endpoint["id"],
                                    event="webhook.ping", attempts=3)
    assert delivery.attempt(stuck.pk) is None
    assert Delivery.objects.get(pk=stuck.pk).status == DeliveryStatus.FAILED


@pytest.mark.parametrize(("address", "public"), [
    ("93.184.216.34", True), ("2606:2800:220:1::1", True), ("10.0.0.5", False),
    ("::ffff:127.0.0.1", False), ("64:ff9b::7f00:1", False), ("64:ff9b::5db8:d822", True),
    ("2002:7f00:1::1", False), ("::127.0.0.1", False), ("fe80::1", False),
])
def test_an_ipv4_address_carried_in_ipv6_is_checked_too(address, public):
    import ipaddress

    assert delivery.is_public(ipaddress.ip_address(address)) is public


def test_a_member_s_endpoint_hears_only_of_the_runs_the_member_may_see(alice, admin, make_agent,
                                                                      make_session, local,
                                                                      monkeypatch):
    from runs.execution import tasks

    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)
    agent = make_agent(alice)
    mine = make_endpoint(alice, "https://hooks.example.com/alice", agent=agent["id"])
    theirs = make_endpoint(admin, "https://hooks.example.com/admin", agent=agent["id"])
    for caller in (alice, admin):  # a run in alice's session, and one in the admin's
        session = Session.objects.get(pk=make_session(caller, agent_id=agent["id"])["id"])
        _, run = message_post(session=session, content="hi")
        run_cancel(run=run, actor=caller.member)
    told = sorted((str(d.endpoint_id), str(Run.objects.get(pk=d.run_id).session.member_id))
                  for d in Delivery.objects.all())
    assert told == sorted([(mine["id"], str(alice.member.pk)),
                           (theirs["id"], str(alice.member.pk)),
                           (theirs["id"], str(admin.member.pk))])


def test_the_turn_statement_tells_a_member_s_endpoint_only_of_their_runs(alice, admin,
                                                                         make_agent,
                                                                         make_session, local):
    agent = make_agent(alice, model="scripted:demo")
    mine = make_endpoint(alice, "https://hooks.example.com/alice", agent=agent["id"])
    theirs = make_endpoint(admin, "https://hooks.example.com/admin", agent=agent["id"])
    session = make_session(admin, agent_id=agent["id"])  # the admin's: alice cannot see it
    posted = admin.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"},
                               format="json")
    assert Run.objects.get(pk=posted.json()["run"]["id"]).status == "completed"
    assert [str(d.endpoint_id) for d in Delivery.objects.all()] == [theirs["id"]]
    assert mine["id"] != theirs["id"]


class Dripping:
    """A receiver that takes the request, then sends its answer's head a byte every tenth of
    a second for a minute: every read comes within any per-read timeout, the whole never. It
    keeps, for each connection the client hung up, how many bytes of the head it had sent."""

    HEAD = b"HTTP/1.1 200 OK\r\nx-slow: " + b"a" * 600

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.stop = threading.Event()
        self.hung_up: list[int] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for sent, byte in enumerate(self.HEAD):
                if self.stop.wait(0.1):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the client hung up
                    self.hung_up.append(sent)
                    return


@pytest.fixture
def dripping():
    receiver = Dripping()
    yield receiver
    receiver.stop.set()
    receiver.server.close()


def test_an_attempt_ends_at_its_time_limit_however_the_receiver_drips(
        alice, local, hango_settings, dripping):
    hango_settings(webhook_timeout_seconds=1, webhook_max_attempts=2)
    endpoint = make_endpoint(alice, dripping.url)
    ping = alice.client.post(f"/v1/webhooks/{endpoint['id']}/ping")
    failed = settled(ping.json()["id"], timeout=120)
    assert (failed.status, failed.attempts, failed.last_status_code, failed.last_error) == (
        DeliveryStatus.FAILED, 2, None, "no answer within the attempt's 1 s")
    # Both attempts hung up on the receiver mid-head (a byte it sent then found the
    # connection closed), where reading the whole of it would have taken a minute each.
    deadline = time.monotonic() + 60  # a guard against a hang only
    while len(dripping.hung_up) < 2:
        assert time.monotonic() < deadline, f"the receiver saw {dripping.hung_up} hang up"
        time.sleep(0.05)
    assert len(dripping.hung_up) == 2 and max(dripping.hung_up) < len(Dripping.HEAD)
