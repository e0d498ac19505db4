"""Runs handed to the workers as posts hand them over, without the web tier: the rows a post
writes, written in bulk beforehand (posting is not what is measured), then each run's task sent
as a post sends it once its transaction commits, from as many threads as ``make serve`` has web
processes. How ``bench_concurrency.py`` and ``bench_mcp.py`` put N runs in flight at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def queue_runs(member: Any, agent_id: Any, texts: list[str]) -> list[str]:
    """A session, its user message (each of ``texts``), its queued run and the run's status
    event, as ``message_post`` leaves them, for each text; the runs' ids, in order. No task is
    sent."""
    from django.db import transaction

    from runs.execution.events import status_event
    from runs.intake.content import user_content
    from runs.models import Message, Run, RunEvent, RunStatus, Session

    sessions = [Session(tenant_id=member.tenant_id, agent_id=agent_id, member=member)
                for _ in texts]
    runs = [Run(session=s, agent_id=agent_id, status=RunStatus.QUEUED, event_seq=1)
            for s in sessions]
    with transaction.atomic():
        Session.objects.bulk_create(sessions, batch_size=1000)
        Run.objects.bulk_create(runs, batch_size=1000)
        Message.objects.bulk_create([
            Message(session=s, seq=1, role="user", run=r, content=user_content(text))
            for text, s, r in zip(texts, sessions, runs, strict=True)], batch_size=1000)
        RunEvent.objects.bulk_create([
            RunEvent(run=r, seq=1, type=status_event(r)[0], data=status_event(r)[1])
            for r in runs], batch_size=1000)
    return [str(r.pk) for r in runs]


def hand_over(run_ids: list[str], *, senders: int) -> dict[str, float]:
    """Each run's task sent at its fair priority, as a post sends it once its transaction
    commits; when each was sent. The posts of ``senders`` web processes at once (``make
    serve`` runs two), each sending its share in the order given: run k by sender k mod the
    senders."""
    from django.db import connection

    from runs.execution import tasks

    sent: dict[str, float] = {}

    def send(share: list[str]) -> None:
        try:
            for run_id in share:
                sent[run_id] = time.time()
                tasks.send_run(run_id, priority=tasks.fair_priority(run_id))
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()

    shares = [run_ids[k::senders] for k in range(senders)]
    if senders == 1:
        send(shares[0])
        return sent
    with ThreadPoolExecutor(senders) as pool:
        list(pool.map(send, shares))
    return sent
