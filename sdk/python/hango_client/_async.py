"""The async client's core: sends a :class:`Call` with the retry policy, walks list pages and
follows a run's event stream across reconnections (``Last-Event-ID``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

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
from hango_client._endpoint import Call, _AsyncMarker
from hango_client.errors import NotAnApi, api_error
from hango_client.types import FINISHED, Event


class AsyncCore(CoreBase, _AsyncMarker):
    def __init__(self, settings: Settings, http: httpx.AsyncClient) -> None:
        self.settings, self.http = settings, http

    async def json(self, call: Call) -> Any:
        return answer(await self.send(call))

    async def send(self, call: Call, *, auth: bool = True, also_ok: tuple[int, ...] = (),
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
                response = await self.http.request(call.method, call.path, **kwargs)
            except httpx.TransportError as exc:
                if not retry:
                    raise self.transport_error(exc) from exc
                await asyncio.sleep(policy.delay(attempt))
                continue
            if response.is_success or response.status_code in also_ok:
                return response
            if retry and response.status_code in policy.statuses:
                await asyncio.sleep(policy.delay(attempt, response))
                continue
            raise api_error(response)

    async def items(self, call: Call) -> AsyncIterator[Any]:
        page: Call | None = call
        while page is not None:
            document = await self.json(page)
            for item in document["results"]:
                yield item
            page = self.next_page(document)

    async def events(self, call: Call) -> AsyncIterator[Event]:
        """Every event after the call's ``after``, until the run has finished: a stream that
        breaks is opened again after the last seq seen, so none is missed or repeated."""
        call, after = stream_call(call)
        policy, failures = self.settings.retry, 0
        while True:
            headers = {**self.headers(call, None), **stream_headers(after)}
            try:
                async with aconnect_sse(self.http, "GET", call.path,
                                        params=call.params or None, headers=headers,
                                        timeout=STREAM_TIMEOUT) as source:
                    if not source.response.is_success:
                        await source.response.aread()
                        failures += 1
                        if (source.response.status_code not in policy.statuses
                                or failures >= policy.attempts):
                            raise api_error(source.response)
                        await asyncio.sleep(policy.delay(failures, source.response))
                        continue
                    async for frame in source.aiter_sse():
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
                await asyncio.sleep(policy.delay(failures))
                continue
            # The server ended the stream: the run finished, or its longest stream passed.
            if (await self.json(run_call(call)))["status"] in FINISHED:
                return
