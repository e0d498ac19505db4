"""Calls made at the same moment from several threads, as several workers would make them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def at_once(call: Callable[[], T], count: int = 2, timeout: float = 20) -> list[T]:
    """``call`` in ``count`` threads released together, each with its own database
    connection (closed after); their answers, in the order they came."""
    answers: list[T] = []
    barrier = threading.Barrier(count)

    def one() -> None:
        barrier.wait()
        try:
            answers.append(call())
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return answers
