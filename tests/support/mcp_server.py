"""An MCP server over Streamable HTTP for the tests, run as a process of its own:
``python -m tests.support.mcp_server --port P [--token T] [--state DIR]``, on 127.0.0.1 only.

Built on the official SDK (``MCPServer``, served by uvicorn). Its tools cover what a client must
handle (:mod:`tests.support.mcp_tools` has them: ``echo``, ``slow``, ``meet``, ``big``, ``fail``,
``image``, ``structured``, ``resource``, ``lookup_order``, ``refund``). ``POST /control/tools`` adds
or removes tools while it runs (``{"add": [name, ...], "remove": [name, ...]}``; an added tool
echoes its ``text``): the next ``tools/list`` shows the change, and listeners of
``subscriptions/listen`` are told.

It serves Streamable HTTP at ``/mcp`` and the older SSE transport at ``/sse``. With
``--token``, an MCP request without ``Authorization: Bearer <token>`` is answered 401 (and
counted as refused). Every call is journaled when it arrives: its tool, arguments,
``_meta`` (the idempotency key, any ``traceparent``) and whether an Authorization header came
and matched (never its value); so is every client session's opening (its ``server/discover``, or
``initialize`` for an older protocol), so a test sees how many sessions carried the calls.
``GET /control/calls`` answers the journal and its counts; with
``--state`` it is also appended to ``calls.jsonl`` there (read again at start), so the counts
outlive whatever happens to the process that made the calls, and a restart on the same state.
The server prints :data:`READY` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.support.mcp_tools import add_tools, added_tool

READY = "mcp test server ready on"
IDEMPOTENCY_KEY = "io.hango/idempotency-key"


# The request each client session opens with: 2026-07-28's, and the handshake before it.
SESSION_OPENINGS = ("server/discover", "initialize")


class Journal:
    """Every call received, in order, the sessions opened, and the requests refused for their
    token."""

    def __init__(self, state: Path | None) -> None:
        self.path = state / "calls.jsonl" if state else None
        self.calls: list[dict[str, Any]] = []
        self.sessions: list[dict[str, Any]] = []
        self.refused = 0
        if self.path is not None and self.path.exists():
            for line in self.path.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("refused"):
                    self.refused += 1
                elif entry.get("opened"):
                    self.sessions.append(entry)
                else:
                    self.calls.append(entry)

    def _append(self, entry: dict[str, Any]) -> None:
        if self.path is not None:
            with self.path.open("a") as out:
                out.write(json.dumps(entry) + "\n")

    def call(self, entry: dict[str, Any]) -> None:
        self.calls.append(entry)
        self._append(entry)

    def open(self, method: str) -> None:
        entry = {"opened": method, "at": time.time()}
        self.sessions.append(entry)
        self._append(entry)

    def refuse(self, *, present: bool) -> None:
        self.refused += 1
        self._append({"refused": True, "authorization": present, "at": time.time()})

    def answer(self) -> dict[str, Any]:
        keys = Counter(c["meta"].get(IDEMPOTENCY_KEY) for c in self.calls)
        keys.pop(None, None)
        return {"calls": self.calls, "sessions": self.sessions, "refused": self.refused,
                "counts": dict(Counter(c["tool"] for c in self.calls)), "keys": dict(keys)}


def build(token: str | None, journal: Journal) -> tuple[MCPServer, InMemorySubscriptionBus]:
    """The MCP server and its change bus, with the test tools and the journaling middleware."""
    bus = InMemorySubscriptionBus()

    async def record(ctx: Any, call_next: Any) -> Any:
        if ctx.method in SESSION_OPENINGS:
            journal.open(ctx.method)
        if ctx.method == "tools/call" and ctx.request_id is not None:
            params = dict(ctx.params or {})
            headers = getattr(ctx.request, "headers", None) or {}
            auth = headers.get("authorization")
            journal.call({
                "tool": params.get("name"), "arguments": params.get("arguments") or {},
                "meta": dict(ctx.meta or params.get("_meta") or {}),
                "authorization": auth is not None,
                "authorized": None if token is None else auth == f"Bearer {token}",
                "traceparent": headers.get("traceparent"), "at": time.time()})
        return await call_next(ctx)

    server = MCPServer("hango-test", subscriptions=bus, middleware=[record],
                       log_level="WARNING", warn_on_duplicate_tools=False)

    add_tools(server)
    return server, bus


class Control:
    """``/control/calls`` and ``/control/tools``; the tool set kept in the state directory."""

    def __init__(self, server: MCPServer, bus: InMemorySubscriptionBus, journal: Journal,
                 state: Path | None) -> None:
        self.server, self.bus, self.journal = server, bus, journal
        self.path = state / "tools.json" if state else None
        if self.path is not None and self.path.exists():
            self.change(json.loads(self.path.read_text()))

    async def calls(self, request: Request) -> JSONResponse:
        return JSONResponse(self.journal.answer())

    async def tools(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.change(body)
        if self.path is not None:
            self.path.write_text(json.dumps(body))
        await self.bus.publish(ToolsListChanged())
        return JSONResponse({"tools": [t.name for t in await self.server.list_tools()]})

    def change(self, body: dict[str, Any]) -> None:
        for name in body.get("remove", []):
            with contextlib.suppress(ToolError):  # not there (any more)
                self.server.remove_tool(name)
        for name in body.get("add", []):  # a tool there already stays as it is
            self.server.add_tool(added_tool(name), name=name)


class BearerCheck:
    """401 for a request to MCP without the right bearer token (``/control`` is open)."""

    def __init__(self, app: ASGIApp, token: str | None, journal: Journal) -> None:
        self.app, self.token, self.journal = app, token, journal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.token is not None and \
                scope["path"].startswith(("/mcp", "/sse", "/messages")):
            got = dict(scope["headers"]).get(b"authorization")
            if got != f"Bearer {self.token}".encode():
                self.journal.refuse(present=got is not None)
                refused = JSONResponse({"error": "invalid_token"}, status_code=401,
                                       headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def app(token: str | None, state: Path | None) -> ASGIApp:
    journal = Journal(state)
    server, bus = build(token, journal)
    control = Control(server, bus, journal, state)
    server.custom_route("/control/calls", methods=["GET"])(control.calls)
    server.custom_route("/control/tools", methods=["POST"])(control.tools)
    served = server.streamable_http_app()
    served.router.routes += [r for r in server.sse_app().routes  # the older transport beside it
                             if getattr(r, "path", "") in ("/sse", "/messages")]
    return BearerCheck(served, token, journal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token")
    parser.add_argument("--state", type=Path)
    args = parser.parse_args()
    if args.state is not None:
        args.state.mkdir(parents=True, exist_ok=True)
    # uvicorn closes a connection idle for 5 s by default; a client that reuses it just then
    # (a session idle while its run's model thinks, under load) loses the session to the race.
    # A minute, as servers behind a proxy usually keep one.
    config = uvicorn.Config(app(args.token, args.state), host="127.0.0.1", port=args.port,
                            log_level="warning", lifespan="on", timeout_keep_alive=60)
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            print(f"{READY} 127.0.0.1:{args.port}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
