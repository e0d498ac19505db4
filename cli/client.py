"""A small client of hango's public API: one httpx client, the one error shape, list pages.

Every failure is a :class:`CliError` carrying the exit code the command ends with: 1 when the
API answered with an error, 2 when the command could not talk to the API at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import ServerSentEvent, SSEError, connect_sse

DEFAULT_URL = "http://127.0.0.1:8000"
BOOTSTRAP_COMMAND = "python manage.py hango_bootstrap --tenant NAME --email EMAIL"
# A live event stream sends a keep-alive comment after 15 s without events: a read that waits
# far longer than that means the connection is gone.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=60.0)


class CliError(Exception):
    """A failure reported on stderr as ``str(self)`` (then ``hint``, if any)."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class ApiError(CliError):
    """The API answered ``{"error": {"code", "message", "detail"}}`` with a 4xx/5xx status."""

    exit_code = 1

    def __init__(self, *, status: int, code: str, message: str, detail: Any = None) -> None:
        hint = ""
        if status == 401:
            hint = f"Check HANGO_API_KEY / --key; to make a new key, run {BOOTSTRAP_COMMAND}"
        super().__init__(f"error {status} {code}: {message}", hint=hint)
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail


class SetupError(CliError):
    """The command cannot talk to the API: no key, a bad URL, no server there."""

    exit_code = 2


class Unreachable(SetupError):
    """Nothing answers at the API's address (a follower tries again: a server restarts)."""


class StreamInterrupted(SetupError):
    """An event stream broke off before the server ended it (a follower reconnects)."""


def path_id(value: str) -> str:
    """An id as one path segment, so a stray ``/`` or ``?`` cannot reach another route."""
    return quote(value, safe="")


class Client:
    """The API at ``url``, authenticated with ``key`` (checked only when a route needs it)."""

    def __init__(self, *, url: str, key: str | None, timeout: float = 30.0) -> None:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise SetupError(
                f"error: the API URL {url!r} must start with http:// or https://",
                hint="Set HANGO_API_URL or pass --url.",
            )
        self.url = url
        self._key = (key or "").strip() or None
        self._http = httpx.Client(
            base_url=url, timeout=timeout, headers={"Accept": "application/json"}
        )

    def close(self) -> None:
        self._http.close()

    def get(self, path: str, *, params: dict[str, Any] | None = None) -> Any:
        return _json(self._send("GET", path, params=params))

    def post(self, path: str, body: dict[str, Any], *, timeout: float | None = None) -> Any:
        """``timeout``: this request's, for a call slower than the client's default."""
        extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        return _json(self._send("POST", path, json=body, **extra))

    def put(self, path: str, body: Any, *, params: dict[str, Any] | None = None) -> Any:
        return _json(self._send("PUT", path, json=body, params=params))

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        return _json(self._send("PATCH", path, json=body))

    def delete(self, path: str, *, params: dict[str, Any] | None = None) -> None:
        self._send("DELETE", path, params=params)

    def health(self) -> tuple[int, dict[str, Any]]:
        """``GET /healthz`` (no key needed): its status (200 up, 503 down) and body."""
        response = self._send("GET", "/healthz", auth=False, also_ok=(503,))
        return response.status_code, _json(response)

    def pages(
        self, path: str, *, params: dict[str, Any] | None = None, follow: bool = False
    ) -> Iterator[dict[str, Any]]:
        """The first page of a list and, with ``follow``, every page its ``next`` links lead to."""
        page = self.get(path, params=params)
        yield page
        while follow and page.get("next"):
            url = page["next"]
            if not self._same_origin(url):
                # The key goes only to the server it was given for.
                raise SetupError(
                    f"error: the server's next-page link points elsewhere: {url}",
                    hint="A proxy in front of hango may not forward the Host header.",
                )
            page = self.get(url)
            yield page

    @contextmanager
    def sse(self, path: str, *, params: dict[str, Any] | None = None,
            ) -> Iterator[Iterator[ServerSentEvent]]:
        """A server-sent-event stream of ``path``: its events, parsed by httpx-sse (the SSE
        line rules, multi-line data, comments) as they arrive."""
        try:
            with connect_sse(self._http, "GET", path, params=params, headers=self._headers(),
                             timeout=STREAM_TIMEOUT) as source:
                if not source.response.is_success:
                    source.response.read()
                    raise _api_error(source.response)
                yield source.iter_sse()
        except httpx.ConnectError as exc:
            raise self._unreachable(exc) from exc
        except SSEError as exc:  # a 200 that is no event stream: not hango's event route
            raise SetupError(f"error: {self.url}{path} did not answer an event stream ({exc})",
                             hint="Is HANGO_API_URL / --url the address of a hango server?",
                             ) from exc
        except httpx.TransportError as exc:
            raise StreamInterrupted(f"error: the event stream from {self.url} broke off: "
                                    f"{exc!r}") from exc

    def _same_origin(self, url: str) -> bool:
        target, base = httpx.URL(url), self._http.base_url
        return (target.scheme, target.host, target.port) == (base.scheme, base.host, base.port)

    def _send(
        self, method: str, path: str, *, auth: bool = True, also_ok: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> httpx.Response:
        headers = self._headers() if auth else {}
        try:
            response = self._http.request(method, path, headers=headers, **kwargs)
        except httpx.ConnectError as exc:
            raise self._unreachable(exc) from exc
        except httpx.TransportError as exc:
            raise SetupError(f"error: talking to {self.url} failed: {exc!r}") from exc
        if response.is_success or response.status_code in also_ok:
            return response
        raise _api_error(response)

    def _headers(self) -> dict[str, str]:
        if self._key is None:
            raise SetupError(
                "error: no API key. Pass --key or set HANGO_API_KEY.",
                hint=f"To make one, run on the server: {BOOTSTRAP_COMMAND}",
            )
        return {"Authorization": f"Bearer {self._key}"}

    def _unreachable(self, exc: Exception) -> Unreachable:
        return Unreachable(
            f"error: cannot connect to the hango server at {self.url} ({exc})",
            hint="Is it running? Start one with `make quickstart`, or point HANGO_API_URL "
            "or --url at it.",
        )


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise SetupError(
            f"error: {response.request.url} answered {response.status_code} with something "
            "other than JSON",
            hint="Is HANGO_API_URL / --url the address of a hango server?",
        ) from None


def _error_document(response: httpx.Response) -> Any:
    """The error body: JSON, or on the event route one ``event: error`` frame holding it."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines()
                if line.startswith("data:")]
        return json.loads("\n".join(data))
    return response.json()


def _api_error(response: httpx.Response) -> ApiError:
    try:
        error = _error_document(response)["error"]
        code, message, detail = str(error["code"]), str(error["message"]), error.get("detail")
    except (ValueError, KeyError, TypeError):
        # Not hango's error shape: a proxy's error page, or not a hango server at all.
        code, message, detail = "http_error", response.reason_phrase or "Request failed.", None
    return ApiError(status=response.status_code, code=code, message=message, detail=detail)
