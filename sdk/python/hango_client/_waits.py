"""A wait declared once for both clients: an object read again, every ``interval`` seconds,
until it is done (a route with no server-side wait, like ``GET /v1/eval-runs/{id}``)::

    @polled(get, done=lambda eval_run: eval_run["status"] != "running", timed_out=…)
    def wait(self, eval_run_id: Ref, /, *, timeout: float | None = None,
             interval: float = 1.0) -> EvalRun: ...

The declared function's first argument is the object (or its id), read with the route of the
endpoint ``get``; ``timeout`` and ``interval`` are the wait's own. The sync core sleeps between
reads, the async one awaits; both decide with :meth:`Poll.pause`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from hango_client._endpoint import Endpoint, Resource, _AsyncMarker, _SyncMarker
from hango_client.errors import HangoError

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Poll:
    """One wait: ``done`` says when the object read is final; ``deadline`` (``time.monotonic``)
    is when ``timed_out`` of the last read is raised instead, None for no end."""

    done: Callable[[Any], bool]
    interval: float
    deadline: float | None
    timed_out: Callable[[Any], HangoError]

    def pause(self, current: Any) -> float:
        """Seconds to wait before reading ``current`` again (its wait spent: raises)."""
        if self.deadline is None:
            return self.interval
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.timed_out(current)
        return min(self.interval, left)


class Polled(Generic[P, T]):
    """A declared wait: called on a sync resource it answers ``T``, on an async one an
    awaitable of ``T``."""

    def __init__(self, read: Endpoint[Any, Any], fn: Callable[..., Any],
                 done: Callable[[Any], bool], timed_out: Callable[[Any], HangoError]) -> None:
        self.read, self.fn, self.done, self.timed_out = read, fn, done, timed_out
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> Polled[P, T]: ...
    @overload
    def __get__(self, obj: Resource[_SyncMarker], owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Resource[_AsyncMarker], owner: type
                ) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        core = obj._core

        def wait(*args: Any, **kwargs: Any) -> Any:
            bound = inspect.signature(self.fn).bind(None, *args, **kwargs)
            bound.apply_defaults()
            target = list(bound.arguments.values())[1]  # the first after self
            timeout, interval = bound.arguments["timeout"], bound.arguments["interval"]
            if interval <= 0:
                raise ValueError(f"interval must be above 0, got {interval!r}")
            poll = Poll(done=self.done, interval=interval, timed_out=self.timed_out,
                        deadline=None if timeout is None else time.monotonic() + timeout)
            return core.poll(self.read.route.call(self.read.fn, (target,), {}), poll)

        wait.__doc__ = self.__doc__
        return wait


def polled(read: Endpoint[Any, T], *, done: Callable[[Any], bool],
           timed_out: Callable[[Any], HangoError],
           ) -> Callable[[Callable[Concatenate[Any, P], T]], Polled[P, T]]:
    return lambda fn: Polled(read, fn, done, timed_out)
