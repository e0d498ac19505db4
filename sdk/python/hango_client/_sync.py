"""The sync client's core: sends a :class:`Call` with the retry policy, walks list pages and
follows a run's event stream across reconnections (``Last-Event-ID``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
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
)
from hango_client._endpoint import Call, _SyncMarker
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

    def items(self, call: Call) -> Iterator[Any]:
        page: Call | None = call
        while page is not None:
            document = self.json(page)
            yield from document["results"]
            page = self.next_page(document)

    def events(self, call: Call) -> Iterator[Event]:
        """Every event after the call's ``after``, until the run has finished: a stream that
        breaks is opened again after the last seq seen, so none is missed or repeated."""
        call, after = stream_call(call)
        policy, failures = self.settings.retry, 0
        while True:
            headers = {**self.headers(call, None), **stream_headers(after)}
            try:
                with connect_sse(self.http, "GET", call.path, params=call.params or None,
                                 headers=headers, timeout=STREAM_TIMEOUT) as source:
                    if not source.response.is_success:
                        source.response.read()
                        failures += 1
                        if (source.response.status_code not in policy.statuses
                                or failures >= policy.attempts):
                            raise api_error(source.response)
                        time.sleep(policy.delay(failures, source.response))
                        continue
                    for frame in source.iter_sse():
                        event = parse_event(frame)
                        if event is None:
                            continue
                        failures = 0
                        if event.seq is not None:
                            if event.seq <= after:  # seen before a reconnection
                                continue
                            after = event.seq
                        yield event
            except SSEError as exc:
                raise NotAnApi(f"{self.settings.url}{call.path} did not answer an event "
                               f"stream ({exc})") from exc
            except httpx.TransportError as exc:
                failures += 1
                if failures >= policy.attempts:
                    raise self.transport_error(exc) from exc
                time.sleep(policy.delay(failures))
                continue
            # The server ended the stream: the run finished, or its longest stream passed.
            if self.json(run_call(call))["status"] in FINISHED:
                return
