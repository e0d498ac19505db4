"""Sending a delivery: one attempt at a time, signed per Standard Webhooks, to a public address.

An attempt is claimed in a short statement (the delivery's ``next_attempt_at`` moves past the
attempt's longest time, so a worker that dies mid-attempt leaves it to be sent again), made with
no transaction open, and its outcome written in another. A 2xx answer is a success; anything
else — another status, a redirect, a timeout, a refused connection — is tried again after a
growing pause, ``HANGO_WEBHOOK_MAX_ATTEMPTS`` times in all. The body is the same for every
attempt and its ``webhook-id`` too, so a receiver drops a repeat; ``webhook-timestamp`` is the
attempt's.

*Where it goes* (:mod:`hango_project.outbound`, the rule MCP servers share). The URL's host is
resolved and every address must be public (not loopback, private, link-local, multicast or
reserved) unless ``HANGO_WEBHOOK_ALLOW_PRIVATE``; the request
then goes to the address checked (the name in ``Host`` and TLS's SNI), so a name that resolves
elsewhere a moment later (DNS rebinding) gains nothing, and redirects are not followed. A URL
refused this way fails at once, without retries: it will not become public by waiting.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
from django.db.models import F, Q
from django.utils import timezone
from opentelemetry.trace import SpanKind
from standardwebhooks.webhooks import Webhook

from hango_project import metrics, outbound
from hango_project.config import hango
from hango_project.outbound import Refused, Unresolved, is_public  # noqa: F401 (kept here)
from hango_project.pgpool import release
from harness import telemetry
from webhooks import secrets
from webhooks.models import Delivery, DeliveryStatus, Endpoint

log = logging.getLogger(__name__)

USER_AGENT = "hango-webhooks/1"
MAX_ERROR = 500
CLOCK_SKEW = timedelta(seconds=1)  # a task may come a little early (another host's clock)
SWITCH = "HANGO_WEBHOOK_ALLOW_PRIVATE"


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str  # "" on success
    retry: bool  # worth another attempt


def attempt(delivery_id: uuid.UUID | str) -> Delivery | None:
    """Make the delivery's next attempt if it is due and nobody else is making it; the
    delivery as it stands after, or None when there was nothing to do."""
    now = timezone.now()
    knobs = hango()
    pending = Delivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING)
    claimed = (pending.filter(attempts__lt=knobs.webhook_max_attempts)
               .filter(Q(next_attempt_at__isnull=True)
                       | Q(next_attempt_at__lte=now + CLOCK_SKEW))
               .update(attempts=F("attempts") + 1,
                       next_attempt_at=now + timedelta(seconds=knobs.webhook_timeout_seconds + 30)))
    if not claimed:
        # Attempts used up, yet still pending (its last attempt's worker died): given up.
        pending.filter(attempts__gte=knobs.webhook_max_attempts).update(
            status=DeliveryStatus.FAILED, next_attempt_at=None)
        return None
    delivery = Delivery.objects.select_related("endpoint").get(pk=delivery_id)
    release()  # no connection held while the receiver takes its time
    attrs = {telemetry.ATTR_WEBHOOK_EVENT: delivery.event,
             telemetry.ATTR_WEBHOOK_ATTEMPT: delivery.attempts}
    with telemetry.span(telemetry.SPAN_WEBHOOK_DELIVER, attrs, kind=SpanKind.CLIENT) as span:
        outcome = _send(delivery, now)
        if outcome.status_code is not None:
            span.set_attribute(telemetry.ATTR_HTTP_STATUS, outcome.status_code)
        if outcome.error:  # never the error's text: it may quote the receiver's address
            telemetry.failed(span, "webhook_failed")
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
        target, host, sni = public_target(endpoint.url)
    except (Refused, secrets.SecretUnreadable) as exc:
        return Outcome(None, str(exc)[:MAX_ERROR], retry=False)
    except Unresolved as exc:  # the resolver's trouble may pass
        return Outcome(None, str(exc)[:MAX_ERROR], retry=True)
    headers = {"content-type": "application/json", "user-agent": USER_AGENT, "host": host,
               "webhook-id": delivery.message_id,
               "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": signature, **telemetry.trace_headers()}
    return _post(target, payload, headers, sni)


def _post(target: str, payload: str, headers: dict[str, str], sni: str) -> Outcome:
    """One POST, ended at the attempt's limit. The client's timeout bounds each connect, write
    and read; a receiver sending its answer a byte at a time would stretch the whole past all
    of them, and past the claim's window: at the limit the connection is closed under it."""
    limit = hango().webhook_timeout_seconds
    client = httpx.Client(timeout=limit, follow_redirects=False)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        client.close()

    ended = threading.Timer(limit, expire)
    ended.start()
    try:
        with client, client.stream("POST", target, content=payload.encode(), headers=headers,
                                   extensions={"sni_hostname": sni}) as answer:
            code = answer.status_code  # the body is never read
    except Exception as exc:  # noqa: BLE001 (whatever it was, the attempt has its outcome)
        if expired.is_set():
            return Outcome(None, f"no answer within the attempt's {limit:g} s", retry=True)
        # A URL the HTTP client cannot use is not worth another attempt; its trouble on the
        # way (refused, reset, timed out) may pass.
        return Outcome(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR],
                       retry=isinstance(exc, httpx.HTTPError))
    finally:
        ended.cancel()
    if 200 <= code < 300:
        return Outcome(code, "", retry=False)
    return Outcome(code, f"the endpoint answered {code}", retry=True)


def public_target(url: str) -> tuple[str, str, str]:
    """The URL with its host replaced by an address that may be called, the ``Host`` header's
    value and the TLS name: :func:`hango_project.outbound.public_target` under
    ``HANGO_WEBHOOK_ALLOW_PRIVATE``."""
    return outbound.public_target(url, allow_private=hango().webhook_allow_private,
                                  switch=SWITCH)


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
    outcome_name = ("succeeded" if not outcome.error else
                    "failed" if delivery.status == DeliveryStatus.FAILED else "retrying")
    metrics.webhook_deliveries.add(1, {telemetry.ATTR_WEBHOOK_OUTCOME: outcome_name,
                                       telemetry.ATTR_WEBHOOK_EVENT: delivery.event})
    # Fenced by the attempt it records: a slower, older attempt writes nothing over it.
    Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING,
                            attempts=delivery.attempts).update(
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
