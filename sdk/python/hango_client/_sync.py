"""The sync client's core: sends a :class:`Call` with the retry policy, walks list pages and
follows a run's event stream across reconnections (``Last-Event-ID``)."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from typing import Any

import httpx
from httpx_sse import SSEError, connect_sse

from hango_client._core import (
    STREAM_TIMEOUT,
    CoreBase,
    Settings,
    answer,
    parse_event,
    run_call,
    stream_call,
    stream_headers,
    stream_params,
)
from hango_client._endpoint import Call, _SyncMarker
from hango_client._waits import Poll
from hango_client.errors import NotAnApi, api_error
from hango_client.types import FINISHED, Event


class SyncCore(CoreBase, _SyncMarker):
    def __init__(self, settings: Settings, http: httpx.Client) -> None:
        self.settings, self.http = settings, http

    def json(self, call: Call) -> Any:
        return answer(self.send(call))

    def send(self, call: Call, *, auth: bool = True, also_ok: tuple[int, ...] = (),
             idempotency_key: str | None = None) -> httpx.Response:
        """The answer to ``call``, tried again as the retry policy allows; an error answer
        (but ``also_ok``'s) raises :class:`ApiError`."""
        policy = self.settings.retry
        kwargs = self.request_kwargs(
            call, self.headers(call, self.idempotency_key(call, idempotency_key), auth=auth))
        attempt = 0
        while True:
            attempt += 1
            retry = attempt < policy.attempts and policy.allows(call.method)
            try:
                response = self.http.request(call.method, call.path, **kwargs)
            except httpx.TransportError as exc:
                if not retry:
                    raise self.transport_error(exc) from exc
                time.sleep(policy.delay(attempt))
                continue
            if response.is_success or response.status_code in also_ok:
                return response
            if retry and response.status_code in policy.statuses:
                time.sleep(policy.delay(attempt, response))
                continue
            raise api_error(response)

    def pages(self, call: Call) -> Iterator[Any]:
        page: Call | None = call
        while page is not None:
            document = self.json(page)
            yield document
            page = self.next_page(document)

    def items(self, call: Call) -> Iterator[Any]:
        for page in self.pages(call):
            yield from page["results"]

    def poll(self, call: Call, poll: Poll) -> Any:
        """``call``'s object, read again until ``poll`` says it is done (or its wait is
        spent)."""
        current = self.json(call)
        while not poll.done(current):
            time.sleep(poll.pause(current))
            current = self.json(call)
        return current

    def events(self, call: Call) -> EventStream:
        return EventStream(self, call)


class EventStream:
    """A run's events after the call's ``after``, until the run has finished: a stream that
    breaks, or that the server ends while the run goes on, is opened again after the last seq
    seen (``Last-Event-ID``), so no stored event is missed or repeated. ``after`` is the last
    seq seen; ``run``, the run as read when the stream ended. Iterate it once; ``close()`` (or
    ``with``) leaves the stream at once."""

    def __init__(self, core: SyncCore, call: Call) -> None:
        self._core = core
        self._call, self.after = stream_call(call)
        self.run: Any = None
        self._events = self._follow()

    def __iter__(self) -> Iterator[Event]:
        return self._events

    def __next__(self) -> Event:
        return next(self._events)

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._events.close()

    def _follow(self) -> Generator[Event, None, None]:
        core, call = self._core, self._call
        policy, failures = core.settings.retry, 0
        while True:
            received = False
            try:
                headers = {**core.headers(call, None), **stream_headers(self.after)}
                with connect_sse(core.http, "GET", call.path, headers=headers,
                                 params=stream_params(call, self.after),
                                 timeout=STREAM_TIMEOUT) as source:
                    if not source.response.is_success:
                        source.response.read()
                        failures += 1
                        if (source.response.status_code not in policy.statuses
                                or failures >= policy.stream_reconnects):
                            raise api_error(source.response)
                        time.sleep(policy.delay(failures, source.response))
                        continue
                    for frame in source.iter_sse():
                        event = parse_event(frame)
                        if event is None:
                            continue
                        failures, received = 0, True
                        if event.seq is not None:
                            if event.seq <= self.after:  # seen before a reconnection
                                continue
                            self.after = event.seq
                        yield event
            except SSEError as exc:
                raise NotAnApi(f"{core.settings.url}{call.path} did not answer an event "
                               f"stream ({exc})") from exc
            except httpx.TransportError as exc:
                failures += 1
                if failures >= policy.stream_reconnects:
                    raise core.transport_error(exc) from exc
                time.sleep(policy.delay(failures))
                continue
            # The server ended the stream: the run finished, or its longest stream passed.
            self.run = core.json(run_call(call))
            if self.run["status"] in FINISHED:
                return
            if not received:  # an active run's stream that ended at once: do not spin
                time.sleep(policy.delay(1))
