"""When a request is tried again, and how long the client waits first.

Every POST carries an ``Idempotency-Key`` (a uuid4 made once per call and repeated on each of
its retries), so the server answers a retried POST with the first attempt's answer instead of
doing the work twice: a POST is retried as safely as a GET. A 503 (the database restarting), a
429 (rate limited) and a gateway's 502/504 are retried, waiting what ``Retry-After`` asks (up
to ``max_delay``), else an exponential backoff with jitter; so is a request that got no answer
(a refused or dropped connection, a timeout).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """``attempts``: tries in all (1: never retry). ``backoff``: the first wait in seconds,
    doubled each retry up to ``max_delay``. ``statuses``: answers worth another try.
    ``retry_posts``: False retries GETs only (for a server without idempotency keys).
    ``stream_reconnects``: how many times in a row an event stream that breaks is opened
    again (each after the same backoff) before the iterator gives up."""

    attempts: int = 4
    backoff: float = 0.5
    max_delay: float = 8.0
    statuses: frozenset[int] = frozenset({429, 502, 503, 504})
    retry_posts: bool = True
    stream_reconnects: int = 5

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.stream_reconnects < 1:
            raise ValueError("attempts and stream_reconnects must be at least 1")
        if self.backoff < 0 or self.max_delay < 0:
            raise ValueError("backoff and max_delay must not be negative")

    def allows(self, method: str) -> bool:
        return method in ("GET", "HEAD") or self.retry_posts

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` counts from 1)."""
        if response is not None:
            asked = _retry_after(response)
            if asked is not None:
                return min(asked, self.max_delay)
        ceiling = min(self.backoff * 2 ** (attempt - 1), self.max_delay)
        jittered: float = ceiling / 2 + random.uniform(0, ceiling / 2)
        return jittered


NO_RETRIES = RetryPolicy(attempts=1)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date, or nothing: the backoff decides
