"""The process's one asyncio loop, where every MCP client session of the process lives.

The MCP SDK is asyncio (anyio); the harness is synchronous and, in a worker, each run is a gevent
greenlet. Rather than an asyncio twin of the harness, the process keeps one event loop on a
thread of its own and hands it coroutines (:func:`run`); the caller waits on an event that the
loop sets when the coroutine ends.

* Under gevent's monkey-patching (``make worker``, ``make serve``) that "thread" is a greenlet
  and the loop's selector is gevent's (``selectors`` is patched before asyncio makes the loop),
  so the loop waits for its sockets through the same hub as the runs, and a run waiting for its
  MCP call waits on a gevent event: it holds no OS thread, and the process's other runs go on.
  asyncio records its running loop per OS thread, so every greenlet would see the loop greenlet's
  loop as running, and Django refuses the ORM where a loop runs (``SynchronousOnlyOperation``):
  a greenlet switch hook (:func:`_home_only`) marks the loop running only while its own greenlet
  is on the CPU.
* Without gevent (the quickstart's thread pool, inline runs in tests) it is an OS thread, and
  the caller waits on a plain :class:`threading.Event`.

Either way the coroutine runs in a copy of the caller's context, so the caller's current span
is the parent of the SDK's own and its trace context travels in the request's ``_meta``.

A forked child starts a loop of its own on first use (the parent's does not survive a fork).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from harness.tools.base import never

T = TypeVar("T")

POLL_SECONDS = 0.5  # how often a waiting caller checks whether its run was cancelled

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_owner_pid = 0


class Cancelled(Exception):
    """The caller's run was cancelled while it waited; the coroutine was cancelled too."""


def loop() -> asyncio.AbstractEventLoop:
    """The process's MCP loop, started on first use (again in a forked child)."""
    global _loop, _owner_pid
    with _lock:
        if _loop is None or _owner_pid != os.getpid():
            _loop, _owner_pid = _start(), os.getpid()
        return _loop


def _start() -> asyncio.AbstractEventLoop:
    new = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(new)
        if _greenlets_are_threads():
            _home_only(new)
        new.call_soon(ready.set)
        new.run_forever()

    threading.Thread(target=serve, name="hango-mcp-loop", daemon=True).start()
    ready.wait()
    return new


def _greenlets_are_threads() -> bool:
    """Whether ``threading`` is gevent's (the worker's and the web tier's processes)."""
    try:
        from gevent import monkey
    except ImportError:  # gevent is a dependency of the server, not of the harness
        return False
    return bool(monkey.is_module_patched("threading"))


def _home_only(home_loop: asyncio.AbstractEventLoop) -> None:
    """From now on, ``home_loop`` is the running loop only in the calling greenlet (the loop's
    own): greenlet's switch hook sets it on a switch into that greenlet and clears it on a switch
    out of it. A hook already set (a profiler's, say) is called after this one."""
    import greenlet

    home = greenlet.getcurrent()
    previous = None

    def switched(event: str, args: tuple[Any, Any]) -> None:
        if event in ("switch", "throw"):
            origin, target = args
            if target is home:
                asyncio._set_running_loop(home_loop)
            elif origin is home:
                asyncio._set_running_loop(None)
        if previous is not None:
            previous(event, args)

    previous = greenlet.settrace(switched)


def run(coro: Coroutine[Any, Any, T], *, timeout: float,
        cancel_requested: Callable[[], bool] = never) -> T:
    """What ``coro`` returns (or raises), run on the process's loop. Waits at most ``timeout``
    seconds (then :class:`TimeoutError`) and checks ``cancel_requested`` every
    :data:`POLL_SECONDS` (then :class:`Cancelled`); either way the coroutine is cancelled."""
    target = loop()
    done = threading.Event()  # a gevent Event when threading is patched: looked up now
    outcome: list[asyncio.Task[T]] = []

    def finished(task: asyncio.Task[T]) -> None:
        done.set()

    def start() -> None:
        task = target.create_task(coro)  # in the copied context this runs in
        outcome.append(task)
        task.add_done_callback(finished)

    target.call_soon_threadsafe(contextvars.copy_context().run, start)
    waited = 0.0
    while not done.wait(min(POLL_SECONDS, max(timeout - waited, 0))):
        waited += POLL_SECONDS
        if cancel_requested():
            _cancel(target, outcome)
            raise Cancelled("the run was cancelled while the call was under way")
        if waited >= timeout:
            _cancel(target, outcome)
            raise TimeoutError(f"no answer within {timeout:g} s")
    task = outcome[0]
    if task.cancelled():
        raise Cancelled("the call was cancelled")
    return task.result()


def _cancel(target: asyncio.AbstractEventLoop, started: list[asyncio.Task[Any]]) -> None:
    """Cancel the task ``started`` holds once it exists (it may not have started yet)."""

    def cancel() -> None:
        for task in started:
            task.cancel()

    target.call_soon_threadsafe(cancel)
