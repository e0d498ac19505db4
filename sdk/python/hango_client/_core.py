"""What the sync and the async core share: the client's settings, the headers of a request,
reading an answer, and unwrapping an event-stream frame into an :class:`Event`.

The two cores (``_sync.py``, ``_async.py``) differ only where one blocks and the other awaits:
sending with retries, walking pages, following a stream.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from hango_client._endpoint import OMIT, Call
from hango_client.errors import (
    ConfigurationError,
    ConnectionLost,
    NoKey,
    NotAnApi,
    TransportError,
    Unreachable,
)
from hango_client.retry import RetryPolicy
from hango_client.types import Event

DEFAULT_URL = "http://127.0.0.1:8000"
# A live event stream sends a keep-alive comment after 15 s without events: a read that waits
# far longer than that means the connection is gone.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=60.0)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Where the API is and how to talk to it; ``url`` and ``key`` default to the environment's
    ``HANGO_API_URL`` and ``HANGO_API_KEY``, as the ``hango`` command's do."""

    url: str
    key: str | None
    timeout: float
    retry: RetryPolicy

    @classmethod
    def make(cls, url: str | None, key: str | None, timeout: float,
             retry: RetryPolicy | None) -> Settings:
        url = (url or os.environ.get("HANGO_API_URL") or DEFAULT_URL).strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"the API URL {url!r} must start with http:// or https://")
        key = (key if key is not None else os.environ.get("HANGO_API_KEY", "")).strip() or None
        return cls(url=url, key=key, timeout=timeout, retry=retry or RetryPolicy())


class CoreBase:
    settings: Settings

    def headers(self, call: Call, idempotency_key: str | None, *,
                auth: bool = True) -> dict[str, str]:
        headers = {}
        if auth:
            if self.settings.key is None:
                raise NoKey("no API key: pass key= or set HANGO_API_KEY")
            headers["Authorization"] = f"Bearer {self.settings.key}"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    @staticmethod
    def idempotency_key(call: Call, given: str | None = None) -> str | None:
        """One key per call, repeated by each of its retries; POSTs only."""
        if call.method != "POST":
            return None
        return given or str(uuid.uuid4())

    def request_kwargs(self, call: Call, headers: dict[str, str]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"headers": headers, "params": call.params or None}
        if call.body is not OMIT:
            kwargs["json"] = call.body
        if call.timeout is not None:
            kwargs["timeout"] = call.timeout
        return kwargs

    def transport_error(self, exc: httpx.TransportError) -> TransportError:
        if isinstance(exc, httpx.ConnectError):
            return Unreachable(f"cannot connect to the hango API at {self.settings.url} ({exc})")
        return ConnectionLost(f"talking to {self.settings.url} failed: {exc!r}")

    def next_page(self, page: Any) -> Call | None:
        """The call for the page after ``page``, or None on the last one."""
        url = page.get("next") if isinstance(page, dict) else None
        if not url:
            return None
        target, base = httpx.URL(url), httpx.URL(self.settings.url)
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            # The key goes only to the server it was given for.
            raise NotAnApi(f"the server's next-page link points elsewhere: {url} (a proxy in "
                           "front of hango may not forward the Host header)")
        return Call("GET", str(target.copy_with(scheme=None, host=None, port=None)))


def answer(response: httpx.Response) -> Any:
    """An answer's JSON (None for 204 No Content)."""
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise NotAnApi(f"{response.request.url} answered {response.status_code} with "
                       "something other than JSON") from None


def stream_call(call: Call) -> tuple[Call, int]:
    """An event route's call without its cursor, and the cursor (``after``, 0 by default)."""
    params = dict(call.params)
    after = int(params.pop("after", 0) or 0)
    return Call(call.method, call.path, params), after


def stream_params(call: Call, after: int) -> dict[str, Any]:
    """The query of a stream's connection: its cursor sent as ``after`` too (what a proxy that
    drops unknown headers still passes on)."""
    return {**call.params, "after": after}


def run_call(call: Call) -> Call:
    """The run whose event route ``call`` reads (asked for when a stream ends)."""
    return Call("GET", call.path.removesuffix("/events"))


def stream_headers(after: int) -> dict[str, str]:
    return {"Accept": "text/event-stream", "Last-Event-ID": str(after)}


def parse_event(frame: ServerSentEvent) -> Event | None:
    """The event a frame carries, unwrapped: a run event's frame holds the stored event
    (``{seq, type, data, created_at}``); a live delta's holds its bare data. None for a frame
    with nothing in it."""
    if not frame.data:
        return None
    try:
        document = json.loads(frame.data)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("type"), str) and isinstance(document.get("data"), dict):
        seq = document.get("seq")
        return Event(type=document["type"], data=document["data"],
                     seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
                     created_at=document.get("created_at"))
    return Event(type=frame.event, seq=None, data=document)
