"""``Client`` and ``AsyncClient``: the API's routes (declared once, in ``resources/``), a raw
request for anything else, and :meth:`run`, which drives a message to its answer."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx

from hango_client import _run
from hango_client._async import AsyncCore
from hango_client._core import Settings, answer
from hango_client._endpoint import OMIT, Call, Ref, ref_id
from hango_client._sync import SyncCore
from hango_client.errors import RunTimedOut
from hango_client.resources import (
    Account,
    Agents,
    Context,
    Credentials,
    Evals,
    McpServers,
    Prices,
    Runs,
    Schedules,
    Sessions,
    Skills,
    Usage,
    Webhooks,
)
from hango_client.retry import RetryPolicy
from hango_client.types import FINISHED, PARKED, Answer, Run, ToolCall, ToolResult

WAIT_SECONDS = 30  # each wait of run(): the server answers at once when the run ends or parks


def _attach(client: Client | AsyncClient, core: SyncCore | AsyncCore) -> None:
    """The route groups, on ``core``."""
    for name, group in (("agents", Agents), ("sessions", Sessions), ("runs", Runs),
                        ("context", Context), ("usage", Usage), ("prices", Prices),
                        ("schedules", Schedules), ("webhooks", Webhooks),
                        ("mcp_servers", McpServers), ("credentials", Credentials),
                        ("skills", Skills), ("account", Account), ("evals", Evals)):
        setattr(client, name, group(core))


class Client:
    """hango's API at ``url`` with ``key`` (default: ``HANGO_API_URL``, ``HANGO_API_KEY``).
    ``retry``: when a request is tried again (:class:`RetryPolicy`); ``transport``: an httpx
    transport to send through (a test's ``MockTransport``, a proxy's)."""

    agents: Agents[SyncCore]
    sessions: Sessions[SyncCore]
    runs: Runs[SyncCore]
    context: Context[SyncCore]
    usage: Usage[SyncCore]
    prices: Prices[SyncCore]
    schedules: Schedules[SyncCore]
    webhooks: Webhooks[SyncCore]
    mcp_servers: McpServers[SyncCore]
    credentials: Credentials[SyncCore]
    skills: Skills[SyncCore]
    account: Account[SyncCore]
    evals: Evals[SyncCore]

    def __init__(self, url: str | None = None, key: str | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        settings = Settings.make(url, key, timeout, retry)
        http = httpx.Client(base_url=settings.url, timeout=timeout, transport=transport,
                            headers={"Accept": "application/json"})
        self._core = SyncCore(settings, http)
        self.url = settings.url
        _attach(self, self._core)

    def close(self) -> None:
        self._core.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, *, json: Any = OMIT,
                params: Mapping[str, Any] | None = None, auth: bool = True,
                also_ok: tuple[int, ...] = (), timeout: float | None = None) -> httpx.Response:
        """Any route, with the client's key, retries and errors: the answer as httpx read it
        (``also_ok``: error statuses answered instead of raised)."""
        call = Call(method.upper(), path, dict(params or {}), json, timeout)
        response: httpx.Response = self._core.send(call, auth=auth, also_ok=also_ok)
        return response

    def request_json(self, method: str, path: str, *, json: Any = OMIT,
                     params: Mapping[str, Any] | None = None,
                     timeout: float | None = None) -> Any:
        """:meth:`request`, answering the JSON (None for 204 No Content)."""
        return answer(self.request(method, path, json=json, params=params, timeout=timeout))

    def pages(self, path: str, *, params: Mapping[str, Any] | None = None,
              ) -> Iterator[dict[str, Any]]:
        """Every page of any list route, following ``next`` (on the same server only)."""
        return self._core.pages(Call("GET", path, dict(params or {})))

    def health(self) -> tuple[int, Any]:
        """``GET /healthz`` (no key needed): its status (200 up, 503 down) and body."""
        response = self.request("GET", "/healthz", auth=False, also_ok=(503,))
        return response.status_code, answer(response)

    def wait(self, run: Ref, *, timeout: float | None = None) -> Run:
        """The run once it has ended or parks for its caller (``awaiting_approval``,
        ``requires_action``), waiting on the server (``?wait=``) as long as it takes, or up to
        ``timeout`` seconds (then :class:`RunTimedOut`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        current = self.runs.get(run, wait=_wait(run, deadline))
        while current["status"] not in FINISHED | PARKED:
            current = self.runs.get(current, wait=_wait(current, deadline))
        return current

    def run(self, session: Ref, content: str | list[Mapping[str, Any]], *,
            tools: Mapping[str, _run.ToolFunction] | None = None,
            on_approval: _run.ApprovalHandler | None = None,
            timeout: float | None = None) -> Answer:
        """Post ``content`` to ``session`` and drive its run to the answer: the client tools it
        calls are run with ``tools[name](**input)`` and their results submitted (an exception
        is submitted as a failed result, and so is a tool with no function here); an approval
        is decided by ``on_approval(run)``, or raises :class:`ApprovalRequired`. Raises
        :class:`RunFailed`, :class:`RunCancelled`, or :class:`RunTimedOut` after ``timeout``
        seconds."""
        tools = tools or {}
        run: Run = self.sessions.send(session, content)["run"]
        answered: set[str] = set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = _run.next_step(run, answered=answered, can_approve=on_approval is not None)
            match step:
                case Answer():
                    return step
                case _run.CallTools(calls):
                    results = [self._call_tool(call, tools) for call in calls]
                    answered.update(call["tool_use_id"] for call in calls)
                    run = self.runs.submit_tool_results(run, results=results)
                case _run.Approve():
                    assert on_approval is not None
                    run = self.runs.approve(run, decisions=on_approval(run))
                case _run.Wait(pause):
                    time.sleep(pause)
                    run = self.runs.get(run, wait=_wait(run, deadline))

    @staticmethod
    def _call_tool(call: ToolCall, tools: Mapping[str, _run.ToolFunction]) -> ToolResult:
        function = _run.tool_function(call, tools)
        if function is None:
            return _run.missing_tool(call, tools)
        try:
            value = function(**_run.arguments(call))
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        except Exception as exc:  # the model hears of it; the run goes on
            return _run.error_of(call, exc)
        return _run.result_of(call, value)


class AsyncClient:
    """:class:`Client`, for asyncio: every route answers an awaitable, lists and events are
    async iterators, and :meth:`run` awaits the tools' coroutine functions (calling a batch's
    tools concurrently)."""

    agents: Agents[AsyncCore]
    sessions: Sessions[AsyncCore]
    runs: Runs[AsyncCore]
    context: Context[AsyncCore]
    usage: Usage[AsyncCore]
    prices: Prices[AsyncCore]
    schedules: Schedules[AsyncCore]
    webhooks: Webhooks[AsyncCore]
    mcp_servers: McpServers[AsyncCore]
    credentials: Credentials[AsyncCore]
    skills: Skills[AsyncCore]
    account: Account[AsyncCore]
    evals: Evals[AsyncCore]

    def __init__(self, url: str | None = None, key: str | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        settings = Settings.make(url, key, timeout, retry)
        http = httpx.AsyncClient(base_url=settings.url, timeout=timeout, transport=transport,
                                 headers={"Accept": "application/json"})
        self._core = AsyncCore(settings, http)
        self.url = settings.url
        _attach(self, self._core)

    async def close(self) -> None:
        await self._core.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(self, method: str, path: str, *, json: Any = OMIT,
                      params: Mapping[str, Any] | None = None, auth: bool = True,
                      also_ok: tuple[int, ...] = (), timeout: float | None = None,
                      ) -> httpx.Response:
        call = Call(method.upper(), path, dict(params or {}), json, timeout)
        response: httpx.Response = await self._core.send(call, auth=auth, also_ok=also_ok)
        return response

    async def request_json(self, method: str, path: str, *, json: Any = OMIT,
                           params: Mapping[str, Any] | None = None,
                           timeout: float | None = None) -> Any:
        return answer(await self.request(method, path, json=json, params=params,
                                         timeout=timeout))

    def pages(self, path: str, *, params: Mapping[str, Any] | None = None,
              ) -> AsyncIterator[dict[str, Any]]:
        return self._core.pages(Call("GET", path, dict(params or {})))

    async def health(self) -> tuple[int, Any]:
        response = await self.request("GET", "/healthz", auth=False, also_ok=(503,))
        return response.status_code, answer(response)

    async def wait(self, run: Ref, *, timeout: float | None = None) -> Run:
        """:meth:`Client.wait`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        current = await self.runs.get(run, wait=_wait(run, deadline))
        while current["status"] not in FINISHED | PARKED:
            current = await self.runs.get(current, wait=_wait(current, deadline))
        return current

    async def run(self, session: Ref, content: str | list[Mapping[str, Any]], *,
                  tools: Mapping[str, _run.ToolFunction] | None = None,
                  on_approval: _run.ApprovalHandler | None = None,
                  timeout: float | None = None) -> Answer:
        """:meth:`Client.run`; ``on_approval`` may be a coroutine function too."""
        tools = tools or {}
        run: Run = (await self.sessions.send(session, content))["run"]
        answered: set[str] = set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = _run.next_step(run, answered=answered, can_approve=on_approval is not None)
            match step:
                case Answer():
                    return step
                case _run.CallTools(calls):
                    results = await asyncio.gather(
                        *(self._call_tool(call, tools) for call in calls))
                    answered.update(call["tool_use_id"] for call in calls)
                    run = await self.runs.submit_tool_results(run, results=list(results))
                case _run.Approve():
                    assert on_approval is not None
                    decisions = on_approval(run)
                    if inspect.isawaitable(decisions):
                        decisions = await decisions
                    run = await self.runs.approve(run, decisions=decisions)
                case _run.Wait(pause):
                    await asyncio.sleep(pause)
                    run = await self.runs.get(run, wait=_wait(run, deadline))

    @staticmethod
    async def _call_tool(call: ToolCall,
                         tools: Mapping[str, _run.ToolFunction]) -> ToolResult:
        function = _run.tool_function(call, tools)
        if function is None:
            return _run.missing_tool(call, tools)
        try:
            value = function(**_run.arguments(call))
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # the model hears of it; the run goes on
            return _run.error_of(call, exc)
        return _run.result_of(call, value)


def _wait(run: Ref, deadline: float | None) -> int:
    """Seconds for the next wait: the default, or what is left of ``timeout`` (which, spent,
    raises :class:`RunTimedOut`)."""
    if deadline is None:
        return WAIT_SECONDS
    left = deadline - time.monotonic()
    if left <= 0:
        status = run.get("status") if isinstance(run, Mapping) else None
        raise RunTimedOut(f"run {ref_id(run)} did not end in time ({status})", run=run)
    return max(1, min(WAIT_SECONDS, int(left)))


async def _awaited(value: Any) -> Any:
    return await value
