"""What a run's live channel is to its two hubs (:mod:`runs.live.relay` in this process,
:mod:`runs.live.redis` through Redis): the protocols, a follower's inbox, a silent
subscription."""

from __future__ import annotations

import queue
import time
from typing import Protocol

FOLLOWER_BACKLOG = 10_000  # deltas an in-process follower may fall behind before losing some

# A follower's queue: each payload with when it reached this process; None, its channel lost.
Inbox = queue.Queue[tuple[str, float] | None]


class Subscription(Protocol):
    def get(self, timeout: float) -> str | None:
        """The next message's JSON (a delta or a marker), waiting up to ``timeout`` seconds;
        None if none came."""
        ...

    @property
    def live(self) -> bool:
        """Whether what is published still arrives (the run's events markers with it)."""
        ...

    @property
    def arrived(self) -> float:
        """When (``time.monotonic()``) the payload :meth:`get` returned last reached this
        process."""
        ...

    def close(self) -> None: ...


class Hub(Protocol):
    def publish(self, channel: str, payload: str) -> None:
        """Send ``payload`` to the channel's followers now, or drop it; never raises."""
        ...

    def subscribe(self, channel: str) -> Subscription:
        """Follow ``channel``: deltas published from the moment this returns are received."""
        ...


class Silent:
    """No deltas: waiting on it is sleeping (a stream whose subscription failed)."""

    live = False
    arrived = 0.0

    def get(self, timeout: float) -> str | None:
        if timeout > 0:
            time.sleep(timeout)
        return None

    def close(self) -> None:
        pass
