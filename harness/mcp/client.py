"""A synchronous MCP client over the official SDK: connect to a server, list its tools, call
one; each session held open on the process's loop (:mod:`harness.mcp.bridge`) until closed.

A :class:`Connection` is one MCP client session (the SDK's ``mcp.Client``), entered and left in
one task of its own on the loop, as anyio requires; calls are tasks beside it, so a run's calls
share its session and several may be under way at once. Three transports: Streamable HTTP, the
older SSE, and stdio (a program the operator names; never one a tenant supplies).

*Where an HTTP session may go.* Each request passes :attr:`Target.check_address` (the server's
SSRF rule: the host is resolved, every address must be allowed, and the request goes to the
address checked, the name kept in ``Host`` and TLS's SNI), a redirect answer is refused — the
SDK would follow one within the same origin; hango follows none — and a body is read up to a
limit (:mod:`harness.mcp.transport`). The request headers carry the server's resolved
credentials: nothing here logs them or puts them on a span.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TextIO, cast

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT, CallToolResult, Implementation, RequestParamsMeta

from harness import telemetry
from harness.mcp import bridge
from harness.mcp.transport import AddressPolicy, Guarded
from harness.mcp.values import McpTool, McpUnavailable
from harness.tools.base import never

__all__ = ["Connection", "McpTool", "McpUnavailable", "Target", "connect", "list_tools_once"]

log = logging.getLogger(__name__)

Transport = Literal["streamable_http", "sse", "stdio"]
TRANSPORTS: tuple[Transport, ...] = ("streamable_http", "sse", "stdio")

CLIENT_INFO = Implementation(name="hango", version="1")
MAX_LIST_PAGES = 100  # a server whose listing never ends cannot hold a run
CLOSE_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where a session goes and how: an HTTP URL with its request headers, or an operator's
    program. ``headers`` hold resolved credentials."""

    transport: Transport
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout_seconds: float = 30.0
    check_address: AddressPolicy | None = field(default=None, repr=False, compare=False)


def _http_client(target: Target, headers: Mapping[str, str] | None = None,
                 timeout: httpx2.Timeout | None = None, auth: Any = None, *,
                 refused: list[str], trace: Mapping[str, str]) -> httpx2.AsyncClient:
    """The HTTP client of one session (also the SSE transport's factory, whose arguments it
    takes and overrides with the target's own)."""
    return httpx2.AsyncClient(
        headers=dict(target.headers), transport=Guarded(target.check_address, refused, trace),
        timeout=httpx2.Timeout(target.timeout_seconds, read=max(target.timeout_seconds, 300.0)),
        follow_redirects=False)


def _server_stderr() -> TextIO:
    """Where a stdio server's stderr goes: this process's own (file descriptor 2), as the
    operator reads it. Not ``sys.stderr``, the SDK's default: a Celery worker replaces it with a
    logging proxy that has no file descriptor, and no program could start."""
    return sys.__stderr__ or sys.stderr


class Connection:
    """One MCP client session, open from :func:`connect` until :meth:`close`."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.refused: list[str] = []  # why the transport refused a response, if it did
        # The trace context of the call under way, which its HTTP requests carry: set by the
        # caller's thread, read on the loop's (whose tasks hold the session's context, not the
        # call's). A session serves one run's calls, one at a time.
        self.trace: dict[str, str] = {}
        self._client: Client | None = None
        self._closing: asyncio.Event | None = None
        self._held: asyncio.Task[None] | None = None

    @property
    def open(self) -> bool:
        return self._held is not None and not self._held.done()

    # -- on the loop --------------------------------------------------------------------------

    async def _enter(self) -> None:
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._held = asyncio.get_running_loop().create_task(self._hold(opened))
        await asyncio.wait({opened, self._held}, return_when=asyncio.FIRST_COMPLETED)
        if not opened.done():
            self._held.result()  # the session ended before it opened: its error
            raise McpUnavailable("the session closed while it opened")

    async def _hold(self, opened: asyncio.Future[None]) -> None:
        """The session's life: entered, held until :meth:`close`, left, in this one task."""
        assert self._closing is not None
        try:
            async with AsyncExitStack() as stack:
                self._client = await stack.enter_async_context(Client(
                    await self._transport(stack), mode="auto", client_info=CLIENT_INFO,
                    read_timeout_seconds=self.target.timeout_seconds, cache=None))
                opened.set_result(None)
                await self._closing.wait()
        except Exception as exc:  # once open, no one awaits this task: its end is said here
            if not opened.done():
                raise
            log.info("an MCP session ended: %s", describe(exc))

    async def _transport(self, stack: AsyncExitStack) -> Any:
        target = self.target
        match target.transport:
            case "streamable_http":
                http = await stack.enter_async_context(_http_client(
                    target, refused=self.refused, trace=self.trace))
                return streamable_http_client(target.url, http_client=http)
            case "sse":
                return sse_client(target.url, timeout=target.timeout_seconds,
                                  httpx_client_factory=partial(
                                      _http_client, target, refused=self.refused,
                                      trace=self.trace))
            case "stdio":
                return stdio_client(StdioServerParameters(
                    command=target.command, args=list(target.args), env=dict(target.env) or None),
                    errlog=_server_stderr())
        raise McpUnavailable(f"unknown transport {target.transport!r}")

    async def _leave(self) -> None:
        if self._closing is not None:
            self._closing.set()
        if self._held is not None:
            await asyncio.wait({self._held}, timeout=CLOSE_SECONDS)

    # -- the caller's side --------------------------------------------------------------------

    def list_tools(self) -> tuple[McpTool, ...]:
        """Every tool the server lists (following its pages)."""
        tools: tuple[McpTool, ...] = self._run(self._list(), what="could not list its tools")
        return tools

    async def _list(self) -> tuple[McpTool, ...]:
        assert self._client is not None
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await self._client.list_tools(cursor=cursor)
            tools += [McpTool(name=t.name, description=t.description or "",
                              input_schema=dict(t.input_schema)) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                return tuple(tools)
        raise McpUnavailable(f"the tool listing ran past {MAX_LIST_PAGES} pages")

    def call_tool(self, name: str, arguments: Mapping[str, Any], *,
                  meta: Mapping[str, Any] | None = None,
                  cancel_requested: Callable[[], bool] = never) -> CallToolResult:
        """The server's result; :class:`MCPError` when it answered with a protocol error,
        :class:`TimeoutError` past the target's timeout, :class:`bridge.Cancelled` when the run
        was cancelled meanwhile, and :class:`McpUnavailable` when the session is gone (the
        call was not sent)."""
        if not self.open or self._client is None:
            raise McpUnavailable("the session to the server has ended")
        client = self._client
        # The HTTP requests carry the call's trace context (the SDK puts its own span's, a
        # child of the call's, in the request's _meta: bridge.run hands it the caller's context).
        self.trace.clear()
        self.trace.update(telemetry.trace_headers())
        sent = cast(RequestParamsMeta, dict(meta)) if meta else None
        try:
            return bridge.run(
                client.call_tool(name, dict(arguments), meta=sent),
                timeout=self.target.timeout_seconds + 1, cancel_requested=cancel_requested)
        except MCPError as exc:
            if exc.code != REQUEST_TIMEOUT:
                raise
            # The SDK's own clock (the session's read timeout) ran out first: no answer, not
            # the server's error; whether the call ran is unknown.
            raise TimeoutError(f"no answer within {self.target.timeout_seconds:g} s") from None
        finally:
            self.trace.clear()

    def close(self) -> None:
        """Leave the session (a server that does not answer is left after a few seconds)."""
        if self._held is None:
            return
        try:
            bridge.run(self._leave(), timeout=CLOSE_SECONDS + 1)
        except Exception:  # noqa: BLE001 (a session that fails to close is gone anyway)
            log.debug("an MCP session did not close cleanly", exc_info=True)
        self._held = None

    def _abandon(self) -> None:
        """A session that did not open in time: its task is cancelled, so that it neither opens
        later, held by no one, nor keeps its connection waiting for an answer."""
        held, self._held = self._held, None
        if held is not None:
            bridge.loop().call_soon_threadsafe(held.cancel)

    def _run(self, coro: Any, *, what: str) -> Any:
        try:
            return bridge.run(coro, timeout=self.target.timeout_seconds + 1)
        except (McpUnavailable, bridge.Cancelled):
            raise
        except TimeoutError:
            raise McpUnavailable(f"{what}: no answer within "
                                 f"{self.target.timeout_seconds:g} s") from None
        except Exception as exc:  # noqa: BLE001 (whatever it was, the server is not usable)
            raise McpUnavailable(f"{what}: {describe(exc)}") from None


def connect(target: Target) -> Connection:
    """An open session to ``target``; :class:`McpUnavailable` saying why there is none."""
    connection = Connection(target)
    try:
        connection._run(connection._enter(), what="could not connect")
    except BaseException:
        connection._abandon()
        raise
    return connection


def list_tools_once(target: Target) -> tuple[McpTool, ...]:
    """Connect, list the tools, close: what the API's listing does."""
    connection = connect(target)
    try:
        return connection.list_tools()
    finally:
        connection.close()


def describe(exc: BaseException) -> str:
    """A failure as a short sentence, the innermost of an exception group: never a request's
    headers (httpx's messages name the URL at most)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"the server answered error {exc.code}: {exc.error.message}"
    if isinstance(exc, httpx2.LocalProtocolError):  # h11's text quotes a header's value
        return f"{type(exc).__name__}: the request's headers could not be sent as they are"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:500]
