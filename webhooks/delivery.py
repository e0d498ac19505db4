"""Sending a delivery: one attempt at a time, signed per Standard Webhooks, to a public address.

An attempt is claimed in a short statement (the delivery's ``next_attempt_at`` moves past the
attempt's longest time, so a worker that dies mid-attempt leaves it to be sent again), made with
no transaction open, and its outcome written in another. A 2xx answer is a success; anything
else — another status, a redirect, a timeout, a refused connection — is tried again after a
growing pause, ``HANGO_WEBHOOK_MAX_ATTEMPTS`` times in all. The body is the same for every
attempt and its ``webhook-id`` too, so a receiver drops a repeat; ``webhook-timestamp`` is the
attempt's.

*Where it goes.* The URL's host is resolved and every address must be public (not loopback,
private, link-local, multicast or reserved) unless ``HANGO_WEBHOOK_ALLOW_PRIVATE``; the request
then goes to the address checked (the name in ``Host`` and TLS's SNI), so a name that resolves
elsewhere a moment later (DNS rebinding) gains nothing, and redirects are not followed. A URL
refused this way fails at once, without retries: it will not become public by waiting.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.db.models import F, Q
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from hango_project.config import hango
from webhooks import secrets
from webhooks.models import Delivery, DeliveryStatus, Endpoint

log = logging.getLogger(__name__)

USER_AGENT = "hango-webhooks/1"
MAX_ERROR = 500
CLOCK_SKEW = timedelta(seconds=1)  # a task may come a little early (another host's clock)


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str  # "" on success
    retry: bool  # worth another attempt


class Refused(Exception):
    """The URL may not be called (its address, its scheme): no attempt is worth making."""


def attempt(delivery_id: uuid.UUID | str) -> Delivery | None:
    """Make the delivery's next attempt if it is due and nobody else is making it; the
    delivery as it stands after, or None when there was nothing to do."""
    now = timezone.now()
    knobs = hango()
    claimed = (Delivery.objects
               .filter(pk=delivery_id, status=DeliveryStatus.PENDING)
               .filter(Q(next_attempt_at__isnull=True)
                       | Q(next_attempt_at__lte=now + CLOCK_SKEW))
               .update(attempts=F("attempts") + 1,
                       next_attempt_at=now + timedelta(seconds=knobs.webhook_timeout_seconds + 30)))
    if not claimed:
        return None
    delivery = Delivery.objects.select_related("endpoint").get(pk=delivery_id)
    outcome = _send(delivery, now)
    _record(delivery, outcome)
    return delivery


def body(delivery: Delivery) -> str:
    """What the receiver gets: the Standard Webhooks envelope, the same for every attempt."""
    when = delivery.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return json.dumps({"type": delivery.event, "timestamp": when, "data": delivery.data},
                      separators=(",", ":"))


def signatures(endpoint: Endpoint, message_id: str, at: datetime, payload: str) -> str:
    """``webhook-signature``: one ``v1,…`` per secret that signs now (two during a rotation's
    overlap, the newest first)."""
    keys = [secrets.unseal(endpoint.secret)]
    if (endpoint.previous_secret and endpoint.previous_secret_expires_at is not None
            and endpoint.previous_secret_expires_at > at):
        keys.append(secrets.unseal(endpoint.previous_secret))
    return " ".join(Webhook(key).sign(message_id, at, payload) for key in keys)


def _send(delivery: Delivery, now: datetime) -> Outcome:
    endpoint = delivery.endpoint
    if not endpoint.active:
        return Outcome(None, "the endpoint is disabled", retry=False)
    payload = body(delivery)
    try:
        signature = signatures(endpoint, delivery.message_id, now, payload)
        target, host = public_target(endpoint.url)
    except (Refused, secrets.SecretUnreadable) as exc:
        return Outcome(None, str(exc), retry=False)
    headers = {"content-type": "application/json", "user-agent": USER_AGENT, "host": host,
               "webhook-id": delivery.message_id,
               "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": signature}
    sni = urlsplit(endpoint.url).hostname or ""
    try:
        with (httpx.Client(timeout=hango().webhook_timeout_seconds,
                           follow_redirects=False) as client,
              client.stream("POST", target, content=payload.encode(), headers=headers,
                            extensions={"sni_hostname": sni}) as answer):
            code = answer.status_code  # the body is never read
    except httpx.HTTPError as exc:
        return Outcome(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR], retry=True)
    if 200 <= code < 300:
        return Outcome(code, "", retry=False)
    return Outcome(code, f"the endpoint answered {code}", retry=True)


def public_target(url: str) -> tuple[str, str]:
    """The URL with its host replaced by an address that may be called, and the ``Host``
    header's value; :class:`Refused` when none may be."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise Refused(f"a webhook URL is http(s)://host/…, not {parts.scheme!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"the host {parts.hostname!r} does not resolve ({exc})") from None
    addresses = [ipaddress.ip_address(str(entry[4][0]).split("%")[0]) for entry in found]
    if not hango().webhook_allow_private:
        private = [a for a in addresses if not a.is_global]
        if private:
            raise Refused(f"the host {parts.hostname!r} resolves to a non-public address "
                          f"({private[0]}); set HANGO_WEBHOOK_ALLOW_PRIVATE to allow it")
    address = addresses[0]
    netloc = f"[{address}]" if address.version == 6 else str(address)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{netloc}:{port}", parts.path or "/", parts.query, "")), host


def _record(delivery: Delivery, outcome: Outcome) -> None:
    now = timezone.now()
    delivery.last_status_code = outcome.status_code
    delivery.last_error = outcome.error
    if not outcome.error:
        delivery.status, delivery.delivered_at, delivery.next_attempt_at = (
            DeliveryStatus.SUCCEEDED, now, None)
    elif outcome.retry and delivery.attempts < hango().webhook_max_attempts:
        delivery.next_attempt_at = now + retry_pause(delivery.attempts)
    else:
        delivery.status, delivery.next_attempt_at = DeliveryStatus.FAILED, None
    Delivery.objects.filter(pk=delivery.pk).update(
        status=delivery.status, delivered_at=delivery.delivered_at,
        next_attempt_at=delivery.next_attempt_at, last_status_code=delivery.last_status_code,
        last_error=delivery.last_error)
    if delivery.status == DeliveryStatus.FAILED:
        log.warning("webhook delivery %s to endpoint %s failed after %d attempts: %s",
                    delivery.pk, delivery.endpoint_id, delivery.attempts, outcome.error)


def retry_pause(attempts: int) -> timedelta:
    """The pause after the ``attempts``-th failed attempt: the base, then six times longer each
    time (5 s, 30 s, 3 min, 18 min, 1.8 h at the default), at most 4 hours."""
    base = hango().webhook_retry_base_seconds
    return timedelta(seconds=min(base * 6 ** (attempts - 1), 4 * 3600))
