"""A ``hango.send_message`` message read and believed: its payload parsed and checked as the
HTTP API checks a body, its signature checked against the signing key's sealed trigger key,
its fingerprint for idempotency. Nothing here writes; :mod:`runs.intake.triggers` takes the message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from accounts import keys
from accounts.models import ApiKey, Member, Tenant
from hango_api import fields as strict
from hango_api.inputs import Input
from hango_api.parsers import unstorable_path
from hango_project import sealing
from hango_project.config import hango
from runs.execution.queue import Multitask
from runs.intake.content_fields import UserContentField

SIGNATURE_VERSION = "v1"


class TriggerInput(Input):
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


def sign(payload: str, api_key: str) -> str:
    """The signature of ``payload`` with the API key ``api_key`` (its plaintext, on the sender's
    side), as the task checks it."""
    return _signature(payload, keys.trigger_key(api_key))


def _signature(payload: str, key: str) -> str:
    mac = hmac.new(key.encode(), utf8(payload), hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(mac).decode()}"


def utf8(text: str) -> bytes:
    """UTF-8, a lone surrogate kept (it fails the checks after, never the encoding)."""
    return text.encode("utf-8", "surrogatepass")


def document(payload: Any) -> dict[str, Any]:
    """The payload read: a JSON object under the body cap."""
    if not isinstance(payload, str):
        raise Refused("malformed", "The payload must be a string holding a JSON object.")
    if len(utf8(payload)) > hango().max_body_bytes:
        raise Refused("too_large", f"The payload is over {hango().max_body_bytes} bytes "
                      f"(HANGO_MAX_BODY_BYTES).")
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        raise Refused("malformed", "The payload is not JSON.") from None
    if not isinstance(data, dict):
        raise Refused("malformed", "The payload must be a JSON object.")
    return data


def validated(data: dict[str, Any]) -> dict[str, Any]:
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


def signer(document: dict[str, Any], payload: str, signature: Any) -> tuple[Member, ApiKey]:
    """The key's member, once the signature checks and the key may act in the tenant (the
    message is read no further before).

    The key is found by its prefix alone, so a message naming another tenant than the key's
    is still checked against the key's signature: one that checks but names no tenant at all
    (the tenant's name, a mistyped id) is ``unknown_tenant`` — what a newcomer signing with a
    good key needs to hear — rather than an ``invalid_signature`` that sends them after the HMAC.

    What that tells, and whom. Only a message whose signature checks with a valid key gets
    ``unknown_tenant``: an unsigned or mis-signed one is ``invalid_signature`` whether its
    tenant exists or not, and no tenant is looked up for it, so writing to the broker without
    a key tells nothing about tenants. A key's holder (revoked or not) can tell whether a UUID
    is some tenant's id; tenant ids are random UUIDs that grant nothing (a key signs only in
    its own tenant, and a tenant that exists but is not the key's stays ``invalid_signature``,
    saying nothing of whose the key is), so learning that a UUID is not a tenant's is harmless.
    """
    refused = Refused("invalid_signature",
                      "The message is not signed by a valid API key of the tenant.")
    prefix, tenant = document.get("key"), document.get("tenant")
    if not isinstance(prefix, str) or not isinstance(signature, str):
        raise refused
    api_key = ApiKey.objects.select_related("member__user").filter(prefix=prefix[:64]).first()
    if api_key is None:
        raise refused
    signing_key = _signing_key(api_key)
    if _uuid(tenant) != api_key.member.tenant_id:
        if signing_key and _signed(payload, signing_key, signature) and not _is_tenant(tenant):
            raise Refused("unknown_tenant", "The message's tenant is not the id of a tenant: "
                          "name the tenant by its id (a UUID, not its name), which `hango "
                          "whoami` or GET /v1/me answers with the signing key.",
                          {"tenant": ["Not the id of a tenant."]})
        raise refused
    if not signing_key:
        raise Refused("key_cannot_sign", "The API key cannot sign trigger messages (issued "
                      "before they existed, or under another DJANGO_SECRET_KEY): issue a new "
                      "key.")
    if not _signed(payload, signing_key, signature):
        raise refused
    if api_key.revoked_at is not None:
        raise Refused("key_revoked", "The API key that signed the message has been revoked.")
    if not api_key.member.user.is_active:
        raise Refused("user_inactive", "The signing key's user is inactive.")
    return api_key.member, api_key


def _signing_key(api_key: ApiKey) -> str:
    """The key's trigger key unsealed; empty when it has none or it cannot be read."""
    try:
        return sealing.unseal(api_key.trigger_key) if api_key.trigger_key else ""
    except sealing.Unreadable:
        return ""


def _signed(payload: str, signing_key: str, signature: str) -> bool:
    """Whether one of the signatures (space-separated) is the payload's with ``signing_key``."""
    expected = utf8(_signature(payload, signing_key))
    return any(hmac.compare_digest(expected, utf8(given)) for given in signature.split())


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _is_tenant(value: Any) -> bool:
    tenant_id = _uuid(value)
    return tenant_id is not None and Tenant.objects.filter(pk=tenant_id).exists()


def fingerprint(data: dict[str, Any], member: Member) -> str:
    """What the message asks for, and whose it is: another member's key reusing an
    idempotency key is refused, never answered with the first member's run."""
    asked = {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in data.items()
             if k not in ("idempotency_key", "key")}
    asked["member"] = str(member.pk)
    return hashlib.sha256(utf8(json.dumps(asked, sort_keys=True))).hexdigest()


def parsed_or_none(payload: Any) -> dict[str, Any] | None:
    try:
        data = json.loads(payload) if isinstance(payload, str) else None
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
