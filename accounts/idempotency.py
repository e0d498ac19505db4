"""Idempotency keys: what makes a retried write safe. A write sent with ``Idempotency-Key: <key>``
stores its first answer under the key, per tenant, **in the write's own transaction**; a retry
with the same key and the same request answers that answer again instead of doing the write
twice. :mod:`accounts.idempotent_requests` applies it to every write route; this module holds
the rules: the header's form, what counts as the same request, the stored answer, the cleanup.

Why in the write's transaction: the key's row and the write commit together or not at all. A
crash between the commit and the answer, a dropped connection, or a 503 from a commit whose
reply was lost all leave either both (the retry replays the answer) or neither (the retry does
the write, once).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounts.models import IdempotencyKey, Member
from hango_project.config import hango
from hango_project.database import database
from hango_project.errors import error_json
from hango_project.sealing import Unreadable, seal, unseal

HEADER: Final = "Idempotency-Key"
# On an answer given again from a stored key.
REPLAYED_HEADER: Final = "Idempotent-Replayed"
# The methods whose requests take a key: every one that may change something.
WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_KEY_CHARS: Final = 255
# The advisory lock space of idempotency keys (two-key form: this, then 32 bits of a hash of the
# tenant and the key). runs.execution.queue's session locks use another.
_KEY_LOCKS: Final = 0x6B657973  # "keys"


class BadKey(ValueError):
    """The header's value is not a key: 1 to 255 visible ASCII characters."""


def parse_key(raw: str) -> str:
    """The key a header's value names, or :class:`BadKey`. Visible ASCII only (``!`` to ``~``),
    as HTTP sends header values byte for byte: a UUID, a ULID, a hash, a log line's id."""
    if not 1 <= len(raw) <= MAX_KEY_CHARS:
        raise BadKey(f"{HEADER} must be 1 to {MAX_KEY_CHARS} characters long.")
    if any(not "!" <= char <= "~" for char in raw):
        raise BadKey(f"{HEADER} may hold only visible ASCII characters (no spaces).")
    return raw


def _fingerprint_key() -> bytes:
    return hashlib.sha256(b"hango idempotency\0" + settings.SECRET_KEY.encode()).digest()


def fingerprint(request: HttpRequest) -> str:
    """What makes a request the same request: its method, its path and query, and its body
    (JSON compared as data: the order of an object's keys and the spacing do not count; any
    other body byte for byte)."""
    body = request.body
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode()
    except (ValueError, RecursionError):
        canonical = body
    # Keyed by the server's secret: a body may hold one of the caller's (a credential's value),
    # which a plain hash kept for a day would let a reader of the table try guesses against.
    digest = hmac.new(_fingerprint_key(), digestmod=hashlib.sha256)
    for part in (request.method or "").encode(), request.get_full_path_info().encode():
        digest.update(part + b"\0")
    digest.update(canonical)
    return digest.hexdigest()


@dataclass(frozen=True)
class Claim:
    """A request sent with a key, as the store sees it: whose, which key, what request."""

    member: Member
    key: str
    method: str
    path: str
    fingerprint: str

    def lock_key(self) -> tuple[int, int]:
        """The advisory lock of the key in its tenant (32 bits of a hash of both)."""
        digest = hashlib.sha256(f"{self.member.tenant_id}\0{self.key}".encode()).digest()
        return _KEY_LOCKS, int.from_bytes(digest[:4], "big", signed=True)

    def lock(self) -> bool:
        """Take the key's lock for the caller's transaction, unless another request holds it:
        two requests with one key never execute together."""
        return database().try_lock(self.lock_key())


def stored(claim: Claim) -> IdempotencyKey | None:
    """The answer kept under the claim's key in its tenant, if any (an expired one counts as
    none even before the cleanup removes it)."""
    return (IdempotencyKey.objects
            .filter(tenant_id=claim.member.tenant_id, key=claim.key, created_at__gte=_oldest())
            .first())


def store(claim: Claim, response: HttpResponse) -> bool:
    """Keep ``response`` as the claim's answer, in the caller's transaction (the write's).
    False when it is not kept: a streamed answer, or one that is not text."""
    assert transaction.get_connection().in_atomic_block, "a key commits with its write"
    if response.streaming:
        return False
    try:
        text = response.content.decode()
    except UnicodeDecodeError:
        return False
    # An expired row the cleanup has not reached yet gives way to the new answer.
    IdempotencyKey.objects.filter(tenant_id=claim.member.tenant_id, key=claim.key).delete()
    IdempotencyKey.objects.create(
        tenant_id=claim.member.tenant_id, key=claim.key, method=claim.method, path=claim.path,
        fingerprint=claim.fingerprint, member=claim.member, status=response.status_code,
        content_type=response.get("Content-Type", ""), sealed_body=seal(text))
    return True


def answer_again(claim: Claim, kept: IdempotencyKey) -> HttpResponse:
    """The stored answer when the claim is the request it answered, from the same member
    (any of its API keys); else 422 ``idempotency_key_reused``: the key was used for another
    request, or by another member of the tenant, who is told nothing of that one. 409
    ``idempotency_key_unreadable`` when ``DJANGO_SECRET_KEY`` changed since it was kept (the
    body was sealed, the fingerprint keyed, with the old one): done, and nothing to say how."""
    if kept.member_id != claim.member.pk:
        return _reused(claim, "by another member of the tenant", {"key": claim.key})
    try:
        body = unseal(kept.sealed_body)
    except Unreadable:
        return error_json(
            409, "idempotency_key_unreadable",
            "This key's request was done, but its answer cannot be read back since the "
            "server's secret key changed: check what it did before sending it with a new key.",
            {"key": claim.key, "status": kept.status, "method": kept.method,
             "path": kept.path})
    if kept.fingerprint != claim.fingerprint:
        return _reused(claim, f"for another request ({kept.method} {kept.path}, or the same "
                       "route with another body)",
                       {"key": claim.key, "method": kept.method, "path": kept.path})
    response = HttpResponse(body, status=kept.status, content_type=kept.content_type or None)
    response[REPLAYED_HEADER] = "true"
    return response


def _reused(claim: Claim, how: str, detail: dict[str, str]) -> HttpResponse:
    return error_json(422, "idempotency_key_reused",
                      f"This {HEADER} was used {how}: use a new key for a new request.",
                      detail)


def in_progress(claim: Claim) -> HttpResponse:
    response = error_json(
        409, "idempotency_key_in_progress",
        f"A request with this {HEADER} is still being handled: try again shortly for its "
        "answer.", {"key": claim.key})
    response["Retry-After"] = "1"
    return response


def _oldest() -> datetime:
    return timezone.now() - timedelta(hours=hango().idempotency_key_hours)


def purge_expired() -> str:
    """Remove the keys older than ``HANGO_IDEMPOTENCY_KEY_HOURS`` (a reconciler pass, every
    worker's: concurrent passes delete the same rows harmlessly); what it did, for the log."""
    removed, _ = IdempotencyKey.objects.filter(created_at__lt=_oldest()).delete()
    return f"removed {removed} expired idempotency keys" if removed else ""
