"""Getting deliveries attempted: a Celery task per attempt with a broker, a thread of this
process without one (the embedded quickstart), at once when runs execute inline (tests). A
pause longer than :data:`QUEUE_AT_MOST` is not handed to the broker as a delayed task (a worker
would hold it in memory for hours); the reconciler sends what is due (:func:`send_due`)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import datetime, timedelta

from celery import shared_task
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from hango_project.config import hango
from webhooks import delivery
from webhooks.models import Delivery, DeliveryStatus

log = logging.getLogger(__name__)

QUEUE_AT_MOST = 60.0  # seconds a delayed attempt may wait in the broker
DUE_GRACE = timedelta(seconds=10)  # a due delivery the reconciler leaves to its own task


@shared_task(name="hango.webhooks.deliver", acks_late=True,
             autoretry_for=(InterfaceError, OperationalError), retry_backoff=True, max_retries=5)
def deliver(delivery_id: str) -> None:
    """One attempt; the next one handed on when it is soon."""
    attempted = delivery.attempt(delivery_id)
    if attempted is not None and attempted.status == DeliveryStatus.PENDING:
        send(attempted.pk, at=attempted.next_attempt_at)


def send(delivery_id: uuid.UUID | str, *, at: datetime | None = None) -> None:
    """Have the delivery attempted at ``at`` (now if None); call it once the delivery is
    committed."""
    wait = 0.0 if at is None else max(0.0, (at - timezone.now()).total_seconds())
    knobs = hango()
    if knobs.run_inline and wait == 0:
        deliver(str(delivery_id))
        return
    if knobs.run_inline or not knobs.broker_url:
        threading.Thread(target=_locally, args=(str(delivery_id), wait), daemon=True,
                         name="webhook-delivery").start()
        return
    if wait > QUEUE_AT_MOST:
        return  # the reconciler sends it when it is due
    try:
        deliver.apply_async((str(delivery_id),), countdown=wait, queue="runs")
    except BrokerError as exc:  # the reconciler sends it when it is due
        log.warning("webhook delivery %s was not sent to the broker (%s)", delivery_id,
                    type(exc).__name__)


def _locally(delivery_id: str, wait: float) -> None:
    time.sleep(wait)
    try:
        deliver(delivery_id)
    except Exception:
        log.exception("webhook delivery %s failed in this process", delivery_id)
    finally:
        close_old_connections()
        connection.close()


def send_due(limit: int = 500) -> int:
    """The reconciler's part: hand on the pending deliveries due for a while (their task was
    lost, their pause was long, their worker died mid-attempt); how many."""
    due = list(Delivery.objects.filter(status=DeliveryStatus.PENDING,
                                       next_attempt_at__lte=timezone.now() - DUE_GRACE)
               .order_by("next_attempt_at").values_list("pk", flat=True)[:limit])
    for delivery_id in due:
        send(delivery_id)
    return len(due)
