"""Messages other services send through the broker: the ``hango.send_message`` task's service.

A service with access to the broker sends the task by name with two strings: ``payload``, a
JSON object saying whose message it is and what it says, and ``signature``, the payload signed
with one of the tenant's API keys. A message on the broker is not trusted by itself — anyone who
can write to the broker can send one — so it carries no secret and is believed only once its
signature checks: ``v1,`` then the base64 of HMAC-SHA256 over the payload's exact UTF-8 bytes,
keyed with the key's trigger key (:func:`accounts.keys.trigger_key`: the SHA-512 hex digest
of ``hango-trigger``, a NUL and the key), which the sender derives from the key it holds and
hango keeps sealed. The plaintext never crosses the broker, a message read off the broker signs
nothing else, and a copy of the database signs nothing either. The key must belong
to the payload's tenant, be unrevoked and its user active; the key's member is the actor, who
must be allowed to see the agent or session, as over HTTP.

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

import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import Max
from rest_framework import serializers

from accounts import keys
from accounts.audit import audit_record
from accounts.models import ApiKey, AuditAction, Member, Tenant
from agents.selectors import agent_get
from hango_api import fields as strict
from hango_api.parsers import unstorable_path
from hango_project import sealing
from hango_project.config import hango
from hango_project.errors import ApplicationError, NotFound
from hango_project.pgpool import release
from runs import queue, selectors, services
from runs.models import Session, Trigger
from runs.queue import Multitask
from runs.serializers import UserContentField
from webhooks import services as webhook_services

log = logging.getLogger(__name__)

TASK_NAME = "hango.send_message"
SIGNATURE_VERSION = "v1"


class TriggerInput(serializers.Serializer):
    """A message's payload. Exactly one of ``agent`` (a new session of it) and ``session``."""

    tenant = strict.UUIDField()
    key = strict.CharField(max_length=64, help_text="The signing API key's prefix.")
    agent = strict.UUIDField(required=False)
    session = strict.UUIDField(required=False)
    title = strict.CharField(max_length=200, required=False, allow_blank=True)
    content = UserContentField()
    multitask = strict.ChoiceField(choices=[m.value for m in Multitask], required=False,
                                   default=Multitask.ENQUEUE.value)
    idempotency_key = strict.CharField(max_length=200)
    sequence = strict.IntegerField(min_value=1, required=False)
    webhook = strict.UUIDField(required=False, help_text="A webhook endpoint of the tenant's "
                               "to tell of this run's end, besides the agent's.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        if ("agent" in attrs) == ("session" in attrs):
            raise serializers.ValidationError(
                {"session": ["Give exactly one of agent (a new session) and session."]})
        if "sequence" in attrs and "session" not in attrs:
            raise serializers.ValidationError(
                {"sequence": ["A sequence orders the messages of one session: give session."]})
        if "title" in attrs and "session" in attrs:
            raise serializers.ValidationError({"title": ["A title names a new session."]})
        return attrs


@dataclass
class Refused(Exception):
    """Why a message is not taken: a stable code and a sentence. ``signed``: refused after its
    signature checked (audited then; before, anyone with the broker could fill a tenant's
    audit log)."""

    code: str
    message: str
    detail: dict[str, Any] | None = None
    signed: bool = False

    def answer(self) -> dict[str, Any]:
        return {"status": "rejected",
                "error": {"code": self.code, "message": self.message, "detail": self.detail or {}}}


@dataclass
class Waiting(Exception):
    """The message's predecessor in its session's sequence has not been taken yet."""

    session: uuid.UUID
    sequence: int


def sign(payload: str, api_key: str) -> str:
    """The signature of ``payload`` with the API key ``api_key`` (its plaintext, on the sender's
    side), as the task checks it."""
    return _signature(payload, keys.trigger_key(api_key))


def _signature(payload: str, key: str) -> str:
    mac = hmac.new(key.encode(), _bytes(payload), hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(mac).decode()}"


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
                               "signature."), _parsed_or_none(given.get("payload")))
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
                return _refuse(refused, _parsed_or_none(payload))
        except Refused as refused:
            return _refuse(refused, _parsed_or_none(payload))
        release()  # no connection held while it waits
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def _take(payload: Any, signature: Any) -> dict[str, Any]:
    document = _document(payload)
    member, api_key = _signer(document, payload, signature)
    try:
        return _take_signed(document, member, api_key)
    except Refused as refused:
        refused.signed = True
        raise


def _take_signed(document: dict[str, Any], member: Member, api_key: ApiKey) -> dict[str, Any]:
    data = _validated(document)
    fingerprint = _fingerprint(data, member)
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


def _bytes(text: str) -> bytes:
    """UTF-8, a lone surrogate kept (it fails the checks after, never the encoding)."""
    return text.encode("utf-8", "surrogatepass")


def _document(payload: Any) -> dict[str, Any]:
    """The payload read: a JSON object under the body cap."""
    if not isinstance(payload, str):
        raise Refused("malformed", "The payload must be a string holding a JSON object.")
    if len(_bytes(payload)) > hango().max_body_bytes:
        raise Refused("too_large", f"The payload is over {hango().max_body_bytes} bytes "
                      f"(HANGO_MAX_BODY_BYTES).")
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        raise Refused("malformed", "The payload is not JSON.") from None
    if not isinstance(data, dict):
        raise Refused("malformed", "The payload must be a JSON object.")
    return data


def _validated(data: dict[str, Any]) -> dict[str, Any]:
    """The message checked as the HTTP API checks a body: nothing PostgreSQL could not store,
    each field of its type."""
    where = unstorable_path(data)
    if where is not None:
        raise Refused("validation_error", "The payload is not a valid message.",
                      {where: ["NUL and lone surrogate characters are not allowed."]})
    serializer = TriggerInput(data=data)
    if not serializer.is_valid():
        raise Refused("validation_error", "The payload is not a valid message.",
                      dict(serializer.errors))
    return dict(serializer.validated_data)


def _signer(document: dict[str, Any], payload: str, signature: Any) -> tuple[Member, ApiKey]:
    """The key's member, once the signature checks and the key may act in the tenant (the
    message is read no further before)."""
    refused = Refused("invalid_signature",
                      "The message is not signed by a valid API key of the tenant.")
    prefix, tenant = document.get("key"), document.get("tenant")
    if not isinstance(prefix, str) or not isinstance(tenant, str) or not isinstance(
            signature, str):
        raise refused
    try:
        tenant_id = uuid.UUID(tenant)
    except ValueError:
        raise refused from None
    api_key = (ApiKey.objects.select_related("member__user")
               .filter(prefix=prefix[:64], member__tenant_id=tenant_id).first())
    if api_key is None:
        raise refused
    try:
        signing_key = sealing.unseal(api_key.trigger_key) if api_key.trigger_key else ""
    except sealing.Unreadable:
        signing_key = ""
    if not signing_key:
        raise Refused("key_cannot_sign", "The API key cannot sign trigger messages (issued "
                      "before they existed, or under another DJANGO_SECRET_KEY): issue a new "
                      "key.")
    expected = _bytes(_signature(payload, signing_key))
    if not any(hmac.compare_digest(expected, _bytes(given)) for given in signature.split()):
        raise refused
    if api_key.revoked_at is not None:
        raise Refused("key_revoked", "The API key that signed the message has been revoked.")
    if not api_key.member.user.is_active:
        raise Refused("user_inactive", "The signing key's user is inactive.")
    return api_key.member, api_key


def _fingerprint(data: dict[str, Any], member: Member) -> str:
    """What the message asks for, and whose it is: another member's key reusing an
    idempotency key is refused, never answered with the first member's run."""
    asked = {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in data.items()
             if k not in ("idempotency_key", "key")}
    asked["member"] = str(member.pk)
    return hashlib.sha256(_bytes(json.dumps(asked, sort_keys=True))).hexdigest()


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


def _parsed_or_none(payload: Any) -> dict[str, Any] | None:
    try:
        data = json.loads(payload) if isinstance(payload, str) else None
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


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
