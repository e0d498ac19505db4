"""Posting many messages at once, watching a session's active runs meanwhile, and reading the
user messages back in order (the multitask tests)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections, connection
from rest_framework.test import APIClient

from runs.models import ACTIVE_RUN_STATUSES, UNFINISHED_RUN_STATUSES, Message, Run
from tests.support.api import Caller


def text_of(thread: int, index: int) -> str:
    return f"message {index} of thread {thread}"


def post_burst(caller: Caller, session_id: str, multitask: str | list[str], *, threads: int,
               per_thread: int, pause: float = 0,
               before_next: Callable[[], None] | None = None,
               ) -> list[list[tuple[int, dict[str, Any]]]]:
    """Every thread posts ``per_thread`` messages one after the other (:func:`text_of`),
    ``pause`` seconds apart or each once ``before_next`` returns, all threads started together
    (a barrier), each with its own client and connection; per thread, each answer's (status,
    body) in order. ``multitask`` is one strategy, or one per thread."""
    gate = threading.Barrier(threads)
    strategies = [multitask] * threads if isinstance(multitask, str) else multitask

    def one(thread: int) -> list[tuple[int, dict[str, Any]]]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {caller.key}")
        answers = []
        try:
            gate.wait(timeout=30)
            for index in range(per_thread):
                if index and before_next is not None:
                    before_next()
                elif index and pause:
                    time.sleep(pause)
                response = client.post(f"/v1/sessions/{session_id}/messages",
                                       {"content": text_of(thread, index),
                                        "multitask": strategies[thread]}, format="json")
                answers.append((response.status_code, response.json()))
        finally:
            connection.close()
        return answers

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(one, range(threads)))


class ActiveWatch:
    """A thread reading, as often as it can, how many active runs each of the sessions has:
    ``most`` is the largest count it saw for any session, ``busy`` how many reads saw one."""

    def __init__(self, *session_ids: str) -> None:
        self.session_ids = [str(s) for s in session_ids]
        self.most = 0
        self.busy = 0
        self.reads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ActiveWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _watch(self) -> None:
        try:
            while not self._stop.is_set():
                counts = Counter(Run.objects.filter(session_id__in=self.session_ids,
                                                    status__in=ACTIVE_RUN_STATUSES)
                                 .values_list("session_id", flat=True))
                self.reads += 1
                self.busy += bool(counts)
                self.most = max(self.most, *counts.values(), 0)
                time.sleep(0.002)
        finally:
            connection.close()


def wait_until_settled(session_id: str, timeout: float = 120) -> list[Run]:
    """The session's runs once none is unfinished (active or pending), oldest first."""
    deadline = time.monotonic() + timeout
    while True:
        close_old_connections()
        runs = list(Run.objects.filter(session_id=session_id).order_by("created_at"))
        left = [r for r in runs if r.status in UNFINISHED_RUN_STATUSES]
        if not left:
            return runs
        if time.monotonic() > deadline:
            raise AssertionError(f"runs still unfinished: {[(r.pk, r.status) for r in left]}")
        time.sleep(0.1)


def user_texts(session_id: str) -> list[str]:
    """The text of each stored user message that has one, in seq order."""
    return [m.content[0]["text"] for m in Message.objects.filter(session_id=session_id,
                                                                 role="user").order_by("seq")
            if m.content and m.content[0]["type"] == "text"]


def keeps_each_threads_order(texts: list[str], *, threads: int, per_thread: int) -> bool:
    """Every posted text is there once, and each thread's in the order it posted them."""
    expected = {text_of(t, i) for t in range(threads) for i in range(per_thread)}
    if sorted(texts) != sorted(expected):
        return False
    return all([t for t in texts if t.endswith(f" of thread {thread}")]
               == [text_of(thread, i) for i in range(per_thread)] for thread in range(threads))
