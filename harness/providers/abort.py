"""Stopping a model call in flight from another thread: the :class:`CallAbort` handle.

A cancel is seen by whoever polls the run's flag (in the server, the process's watch thread,
:mod:`runs.execution.leases`), not by the thread that is blocked reading the model's stream. The
loop makes a handle for each streamed call and sets it as the call's current one
(:func:`current`); an adapter that opens a stream hands it a closer (:func:`on_abort`); the
watcher calls :meth:`CallAbort.abort`, which runs the closers at once. Closing an HTTP response
from another thread does not wake a read blocked on its socket, so the closer shuts the socket
down (:func:`shut_down`): the blocked read sees the end of the stream at once, the adapter
unwinds, and the loop, seeing the handle aborted, records the call as cancelled rather than
failed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

_current: ContextVar[CallAbort | None] = ContextVar("hango_call_abort", default=None)


class CallAbort:
    """One model call's abort: set once, from any thread; its closers run once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []
        self.aborted = False

    def abort(self) -> None:
        with self._lock:
            if self.aborted:
                return
            self.aborted = True
            closers, self._closers = self._closers, []
        for close in closers:
            _quietly(close)

    def add(self, close: Callable[[], None]) -> None:
        """Run ``close`` on abort (at once when the call was aborted already)."""
        with self._lock:
            if not self.aborted:
                self._closers.append(close)
                return
        _quietly(close)


@contextlib.contextmanager
def current(handle: CallAbort) -> Iterator[CallAbort]:
    """``handle`` as the current call's abort while the block runs (on this thread)."""
    token = _current.set(handle)
    try:
        yield handle
    finally:
        _current.reset(token)


def on_abort(close: Callable[[], None]) -> None:
    """Register ``close`` with the current call's abort, if the caller made one."""
    handle = _current.get()
    if handle is not None:
        handle.add(close)


def aborted() -> bool:
    """Whether the current call was aborted."""
    handle = _current.get()
    return handle is not None and handle.aborted


def shut_down(response: Any) -> Callable[[], None]:
    """A closer for an HTTP response being read (an ``httpx2.Response``): its socket shut down
    for both directions, which wakes a read blocked on it, where a close would not."""

    def close() -> None:
        stream = getattr(response, "extensions", {}).get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
        else:  # no socket to reach (another transport): close what can be closed
            response.close()

    return close


def _quietly(close: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):  # an abort must never raise into the watcher
        close()
