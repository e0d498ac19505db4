"""Per-caller rate limits: requests per minute, counted in Redis so they hold across processes.

A caller is an API key, or — for a staff user's login session (the admin's screens) — the member
it acts as. The limit of a key is its own ``rate_limit_per_minute``, else its tenant's, else
``hango().rate_limit_per_minute``; a member's is its tenant's, else the server's. 0 at whichever
level decides means no limit. Requests without a caller (healthz, the schema, the docs) are not
throttled.

Design choices:

- **Fixed 60-second window.** One counter per caller and window, ``hango:rl:<prefix>:<window>``
  for a key, ``hango:rl:member:<member id>:<window>`` for a login session (``window`` = Unix
  time // 60), bumped with INCR and given a TTL with EXPIRE in one MULTI/EXEC
  pipeline: one round trip and O(1) memory per key. The trade-off against a sliding window (a
  sorted set of request times) is burstiness at the edge: a client can spend its limit at the end
  of one window and again at the start of the next, so up to twice the limit in a short span. A
  sliding window avoids that but stores one entry per request and costs more per call; for a
  per-minute abuse guard the fixed window is enough. Windows follow each web host's clock, so
  hosts should keep their clocks synchronised (a skew only moves the boundary).
- **Over the limit** → DRF ``Throttled``, which ``hango_project.errors`` renders as 429
  ``rate_limited`` with ``Retry-After`` = the seconds until the window resets, rounded up (1..60).
- **No Redis configured** (the embedded quickstart) → an in-process counter with the same
  windows. It is then per process: with several web processes each allows the full limit.
- **Fail-open.** If Redis errors (down, timeout), the request is allowed and a warning is logged
  at most once a minute per process. A rate limit protects the service; refusing every request
  because its counter store is unreachable would turn a Redis outage into an API outage. After a
  failure a process skips Redis for a few seconds, so an outage does not add a timeout to every
  request.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

import redis
from rest_framework.throttling import BaseThrottle

from accounts.authentication import StaffSession
from accounts.models import ApiKey, Member
from hango_project.config import hango

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60
KEY_PREFIX = "hango:rl"
# Redis must answer fast or not at all: a slow counter store must not slow every request down.
REDIS_TIMEOUT_SECONDS = 0.25
WARN_EVERY_SECONDS = 60.0
# After a Redis error, requests skip Redis (and are allowed) for this long before it is tried again.
RETRY_REDIS_AFTER_SECONDS = 5.0

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()
_redis_down_until: dict[str, float] = {}


def _redis_client(url: str) -> redis.Redis:
    """One client (and connection pool) per URL per process."""
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = redis.Redis.from_url(
                url,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
            )
            _clients[url] = client
        return client


class _LocalCounter:
    """The fallback without Redis: counts per (prefix, window) in this process only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window = -1
        self._counts: dict[str, int] = {}

    def incr(self, prefix: str, window: int) -> int:
        with self._lock:
            if window != self._window:  # a new window: the old counts can never matter again
                self._window = window
                self._counts = {}
            count = self._counts.get(prefix, 0) + 1
            self._counts[prefix] = count
            return count

    def clear(self) -> None:
        with self._lock:
            self._window = -1
            self._counts = {}


local_counter = _LocalCounter()


class _WarnLimiter:
    """Logs the Redis-failure warning at most once per ``WARN_EVERY_SECONDS`` per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = -math.inf

    def warn(self, error: Exception) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last < WARN_EVERY_SECONDS:
                return
            self._last = now
        logger.warning("Rate limit store unreachable, allowing requests (fail-open): %s", error)

    def reset(self) -> None:
        with self._lock:
            self._last = -math.inf


redis_warning = _WarnLimiter()


def limit_for(api_key: ApiKey) -> int:
    """Requests per minute for ``api_key``: its own, else its tenant's, else the server's."""
    if api_key.rate_limit_per_minute is not None:
        return api_key.rate_limit_per_minute
    tenant_limit = api_key.member.tenant.rate_limit_per_minute
    if tenant_limit is not None:
        return tenant_limit
    return hango().rate_limit_per_minute


def member_limit(member: Member) -> int:
    """Requests per minute for a login session acting as ``member``: its tenant's, else the
    server's (a session has no limit of its own, as a key may)."""
    tenant_limit = member.tenant.rate_limit_per_minute
    return tenant_limit if tenant_limit is not None else hango().rate_limit_per_minute


def _bucket(credential: object) -> tuple[str, int] | None:
    """The counter's name and the limit of the request's caller; None without a caller."""
    if isinstance(credential, ApiKey):
        return credential.prefix, limit_for(credential)
    if isinstance(credential, StaffSession):
        return f"member:{credential.member.pk}", member_limit(credential.member)
    return None


def redis_key(prefix: str, window: int) -> str:
    return f"{KEY_PREFIX}:{prefix}:{window}"


class ApiKeyRateThrottle(BaseThrottle):
    """DRF throttle: a fixed one-minute window per API key, or per member for a login session
    (see the module docstring)."""

    # The wall clock (windows are shared across processes, so not a monotonic one); tests pin it.
    clock = staticmethod(time.time)

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Any, view: Any) -> bool:
        bucket = _bucket(getattr(request, "auth", None))
        if bucket is None:
            return True  # unauthenticated: healthz, the schema, the docs
        name, limit = bucket
        if limit <= 0:
            return True
        now = self.clock()
        window = int(now // WINDOW_SECONDS)
        count = self._count(name, window)
        if count is None or count <= limit:
            return True
        # DRF's Throttled rounds ``wait`` up, so Retry-After is the seconds until the window
        # resets, rounded up: 1..60.
        self._wait = (window + 1) * WINDOW_SECONDS - now
        return False

    def wait(self) -> float | None:
        return self._wait

    @staticmethod
    def _count(prefix: str, window: int) -> int | None:
        """This request's number in the window, or None when the store failed (fail-open)."""
        url = hango().rate_limit_redis_url
        if not url:
            return local_counter.incr(prefix, window)
        if time.monotonic() < _redis_down_until.get(url, 0.0):
            return None  # it failed moments ago: don't make every request wait on a timeout
        key = redis_key(prefix, window)
        try:
            pipe = _redis_client(url).pipeline(transaction=True)
            pipe.incr(key)
            # Counted from this request: always past the window's end, gone a minute after it.
            pipe.expire(key, WINDOW_SECONDS + 1)
            count, _ = pipe.execute()
            return int(count)
        except (redis.RedisError, OSError) as error:
            _redis_down_until[url] = time.monotonic() + RETRY_REDIS_AFTER_SECONDS
            redis_warning.warn(error)
            return None
