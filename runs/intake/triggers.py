"""Messages other services send through the broker: the ``hango.send_message`` task's service.

A service with access to the broker sends the task by name with two strings: ``payload``, a
JSON object saying whose message it is and what it says, and ``signature``, the payload signed
with one of the tenant's API keys. A message on the broker is not trusted by itself — anyone who
can write to the broker can send one — so it carries no secret and is believed only once its
signature checks (:mod:`runs.intake.trigger_payload` reads and checks it): ``v1,`` then the base64
of HMAC-SHA256 over the payload's exact UTF-8 bytes, keyed with the key's trigger key
(:func:`accounts.keys.trigger_key`: the SHA-512 hex digest of ``hango-trigger``, a NUL and the
key), which the sender derives from the key it holds and hango keeps sealed. The plaintext never
crosses the broker, a message read off the broker signs nothing else, and a copy of the
database signs nothing either. The key must belong to the payload's tenant, be unrevoked and its
user active; the key's member is the actor, who must be allowed to see the agent or session, as
over HTTP.

A message is taken whole or not at all: its session (for ``agent``), user message, run and
:class:`~runs.models.Trigger` row in one transaction. The same ``idempotency_key`` again
answers with the same run (a redelivered or replayed message changes nothing); with another
message it is refused. Messages for one session carrying a ``sequence`` are taken in that
order: one whose predecessor has not been taken waits for it, up to
``HANGO_TRIGGER_ORDER_WAIT_SECONDS``. A bad message is refused with a reason — logged, audited
in its tenant once its signature checked (before, it is anyone's: the broker's writers must not
fill a tenant's audit log), and the task's answer — and never retried.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import Max

from accounts.audit import audit_record
from accounts.models import ApiKey, AuditAction, Member, Tenant
from agents.selectors import agent_get
from hango_project.config import hango
from hango_project.errors import ApplicationError, NotFound
from hango_project.pgpool import release
from runs.execution import queue
from runs.intake import selectors, services
from runs.intake import trigger_payload as messages
from runs.intake.trigger_payload import Refused
from runs.models import Session, Trigger
from webhooks import services as webhook_services

log = logging.getLogger(__name__)

TASK_NAME = "hango.send_message"


@dataclass
class Waiting(Exception):
    """The message's predecessor in its session's sequence has not been taken yet."""

    session: uuid.UUID
    sequence: int


@shared_task(
    name=TASK_NAME,
    ignore_result=False,  # the sender reads its answer: which run, or why not
    acks_late=True,
    autoretry_for=(InterfaceError, OperationalError),  # the database went away: nothing was taken
    retry_backoff=True,
    max_retries=5,
)
def send_message_task(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The task (workers import this module: ``CELERY_IMPORTS``): ``(payload, signature)`` by
    position or by name, taken; safe to deliver twice."""
    given = dict(zip(("payload", "signature"), args, strict=False)) | kwargs
    if len(args) > 2 or set(given) != {"payload", "signature"}:
        return _refuse(Refused("malformed", "The task takes two arguments: payload and "
                               "signature."), messages.parsed_or_none(given.get("payload")))
    return send_message(given["payload"], given["signature"])


def send_message(payload: Any, signature: Any) -> dict[str, Any]:
    """Take one message: its answer — ``accepted`` or ``duplicate`` with the session and run,
    or ``rejected`` with the error. A message waiting for its predecessor is tried again until
    ``HANGO_TRIGGER_ORDER_WAIT_SECONDS`` have passed."""
    deadline = time.monotonic() + hango().trigger_order_wait_seconds
    pause = 0.05
    while True:
        try:
            return _take(payload, signature)
        except Waiting as waiting:
            if time.monotonic() >= deadline:
                refused = Refused("predecessor_missing",
                                  f"Message {waiting.sequence - 1} of the session never came "
                                  f"(waited {hango().trigger_order_wait_seconds:g} s); send it, "
                                  f"then this one again.",
                                  {"sequence": waiting.sequence}, signed=True)
                return _refuse(refused, messages.parsed_or_none(payload))
        except Refused as refused:
            return _refuse(refused, messages.parsed_or_none(payload))
        release()  # no connection held while it waits
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def _take(payload: Any, signature: Any) -> dict[str, Any]:
    document = messages.document(payload)
    member, api_key = messages.signer(document, payload, signature)
    try:
        return _take_signed(document, member, api_key)
    except Refused as refused:
        refused.signed = True
        raise


def _take_signed(document: dict[str, Any], member: Member, api_key: ApiKey) -> dict[str, Any]:
    data = messages.validated(document)
    fingerprint = messages.fingerprint(data, member)
    known = _known(data, fingerprint)
    if known is not None:
        return known
    session = _session(data, member) if "session" in data else None
    webhook = (_visible(lambda: webhook_services.endpoint_get(member=member,
                                                              endpoint_id=data["webhook"]),
                        "webhook") if "webhook" in data else None)
    try:
        with transaction.atomic():
            if session is not None:
                queue.lock_session(session.pk)
                # Taken meanwhile (a copy waited on the same lock)? Then answer it as such.
                if (known := _known(data, fingerprint)) is not None:
                    return known
                _check_order(session, data.get("sequence"))
            else:
                agent = _visible(lambda: agent_get(member=member, agent_id=data["agent"]),
                                 "agent")
                session = services.session_create(member=member, agent=agent,
                                                  title=data.get("title", ""))
            trigger = Trigger.objects.create(
                tenant_id=member.tenant_id, member=member, api_key=api_key,
                idempotency_key=data["idempotency_key"], fingerprint=fingerprint,
                session=session, sequence=data.get("sequence"), webhook=webhook)
            _, run = services.message_post(session=session, content=data["content"],
                                           multitask=data["multitask"], actor=member)
            if webhook is not None:
                run.webhook = webhook
                run.save(update_fields=["webhook"])
            trigger.run = run
            trigger.save(update_fields=["run"])
            audit_record(actor=member, tenant=member.tenant_id, action=AuditAction.TRIGGER_ACCEPT,
                         obj_type="trigger", obj_id=trigger.pk, detail=_audit_detail(data, run))
    except IntegrityError as exc:  # taken meanwhile by another worker, or a row went away
        known = _known(data, fingerprint)
        if known is not None:
            return known
        if _constraint(exc) == "trigger_session_sequence":
            raise Refused("sequence_taken",
                          f"Message {data.get('sequence')} of the session was already taken "
                          f"with another idempotency key.") from None
        raise Refused("not_found", "The session, agent or webhook went away meanwhile.") from None
    except ApplicationError as exc:  # refused by the service: busy session, quota, bad content
        raise Refused(exc.code, exc.message, exc.detail) from None
    return _answer("accepted", trigger)


def _constraint(exc: IntegrityError) -> str:
    diag = getattr(exc.__cause__, "diag", None)
    return str(getattr(diag, "constraint_name", "") or "")


def _known(data: dict[str, Any], fingerprint: str) -> dict[str, Any] | None:
    """The answer to a message whose idempotency key was taken before, or None."""
    trigger = Trigger.objects.select_related("run").filter(tenant_id=data["tenant"],
                                     idempotency_key=data["idempotency_key"]).first()
    if trigger is None:
        return None
    if trigger.fingerprint != fingerprint:
        raise Refused("idempotency_key_reused",
                      "The idempotency key was used before for another message.",
                      {"trigger": str(trigger.pk)})
    return _answer("duplicate", trigger)


def _session(data: dict[str, Any], member: Member) -> Session:
    return _visible(lambda: selectors.session_get(member=member, session_id=data["session"]),
                    "session")


def _visible(get: Any, what: str) -> Any:
    try:
        return get()
    except NotFound:
        raise Refused("not_found", f"The {what} was not found.", {what: ["not found"]}) from None


def _check_order(session: Session, sequence: int | None) -> None:
    """Under the session's lock: a message with a sequence comes right after the last taken."""
    if sequence is None:
        return
    last = Trigger.objects.filter(session=session).aggregate(m=Max("sequence"))["m"] or 0
    if sequence > last + 1:
        raise Waiting(session.pk, sequence)
    if sequence <= last:
        raise Refused("sequence_taken",
                      f"Message {sequence} of the session was already taken with another "
                      f"idempotency key.", {"sequence": sequence, "last": last})


def _answer(status: str, trigger: Trigger) -> dict[str, Any]:
    run_status = trigger.run.status if trigger.run is not None else None
    return {"status": status, "trigger": str(trigger.pk),
            "session": str(trigger.session_id) if trigger.session_id else None,
            "run": str(trigger.run_id) if trigger.run_id else None, "run_status": run_status}


def _audit_detail(data: dict[str, Any], run: Any) -> dict[str, Any]:
    detail = {"key_prefix": data["key"], "idempotency_key": data["idempotency_key"],
              "run": str(run.pk), "multitask": data["multitask"]}
    if "sequence" in data:
        detail["sequence"] = data["sequence"]
    return detail


def _refuse(refused: Refused, data: dict[str, Any] | None) -> dict[str, Any]:
    """Log the refusal (never the content or the signature), audit it in its tenant when the
    tenant is known, and answer it."""
    said = {name: value if isinstance(value, int) else value[:200]
            for field, name in _SAID.items()
            if isinstance(data, dict) and isinstance(value := data.get(field), str | int)}
    log.warning("a %s message was refused (%s): %s %s", TASK_NAME, refused.code,
                refused.message, said)
    tenant = _tenant(said.get("tenant")) if refused.signed else None
    if tenant is not None:
        with transaction.atomic():
            audit_record(actor=None, tenant=tenant, action=AuditAction.TRIGGER_REJECT,
                         obj_type="trigger", obj_id=str(said.get("idempotency_key", ""))[:64],
                         detail={"code": refused.code, "reason": refused.message, **said})
    return refused.answer()


# What a refusal's log line and audit row say of the message: who and which, never what.
_SAID = {"tenant": "tenant", "key": "key_prefix", "idempotency_key": "idempotency_key",
         "sequence": "sequence"}


def _tenant(value: Any) -> uuid.UUID | None:
    try:
        tenant_id = uuid.UUID(str(value))
    except ValueError:
        return None
    return tenant_id if Tenant.objects.filter(pk=tenant_id).exists() else None
