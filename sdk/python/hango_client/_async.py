"""The async client's core: sends a :class:`Call` with the retry policy, walks list pages and
follows a run's event stream across reconnections (``Last-Event-ID``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
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
    stream_params,
)
from hango_client._endpoint import Call, _AsyncMarker
from hango_client._waits import Poll
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

    async def pages(self, call: Call) -> AsyncIterator[Any]:
        page: Call | None = call
        while page is not None:
            document = await self.json(page)
            yield document
            page = self.next_page(document)

    async def items(self, call: Call) -> AsyncIterator[Any]:
        async for page in self.pages(call):
            for item in page["results"]:
                yield item

    async def poll(self, call: Call, poll: Poll) -> Any:
        """``call``'s object, read again until ``poll`` says it is done (or its wait is
        spent)."""
        current = await self.json(call)
        while not poll.done(current):
            await asyncio.sleep(poll.pause(current))
            current = await self.json(call)
        return current

    def events(self, call: Call) -> AsyncEventStream:
        return AsyncEventStream(self, call)


class AsyncEventStream:
    """A run's events after the call's ``after``, until the run has finished: a stream that
    breaks, or that the server ends while the run goes on, is opened again after the last seq
    seen (``Last-Event-ID``), so no stored event is missed or repeated. ``after`` is the last
    seq seen; ``run``, the run as read when the stream ended. Iterate it once; ``await
    close()`` (or ``async with``) leaves the stream at once."""

    def __init__(self, core: AsyncCore, call: Call) -> None:
        self._core = core
        self._call, self.after = stream_call(call)
        self.run: Any = None
        self._events = self._follow()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events

    async def __anext__(self) -> Event:
        return await anext(self._events)

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._events.aclose()

    async def _follow(self) -> AsyncGenerator[Event, None]:
        core, call = self._core, self._call
        policy, failures = core.settings.retry, 0
        while True:
            received = False
            try:
                headers = {**core.headers(call, None), **stream_headers(self.after)}
                async with aconnect_sse(core.http, "GET", call.path, headers=headers,
                                        params=stream_params(call, self.after),
                                        timeout=STREAM_TIMEOUT) as source:
                    if not source.response.is_success:
                        await source.response.aread()
                        failures += 1
                        if (source.response.status_code not in policy.statuses
                                or failures >= policy.stream_reconnects):
                            raise api_error(source.response)
                        await asyncio.sleep(policy.delay(failures, source.response))
                        continue
                    async for frame in source.aiter_sse():
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
                await asyncio.sleep(policy.delay(failures))
                continue
            # The server ended the stream: the run finished, or its longest stream passed.
            self.run = await core.json(run_call(call))
            if self.run["status"] in FINISHED:
                return
            if not received:  # an active run's stream that ended at once: do not spin
                await asyncio.sleep(policy.delay(1))
