"""The CLI's view of hango's API: the SDK's client (``hango_client``, sdk/python) with every
failure turned into a :class:`CliError` carrying the exit code the command ends with: 1 when the
API answered with an error, 2 when the command could not talk to the API at all.

One client, not two: requests, the error shape, list pages and the event stream are the SDK's;
this module adds what a person at a terminal needs, a hint after each error. The CLI retries no
request (it reports at once, and a person runs the command again); a followed event stream is
opened again after a break, as the SDK does for every caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote

import hango_client
from hango_client import EventStream, RetryPolicy

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8000"
BOOTSTRAP_COMMAND = "python manage.py hango_bootstrap --tenant NAME --email EMAIL"
NOT_HANGO_HINT = "Is HANGO_API_URL / --url the address of a hango server?"
# Requests are tried once; a broken stream is opened again up to 6 times in a row.
CLI_RETRY = RetryPolicy(attempts=1, backoff=0.4, stream_reconnects=6)


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
    """Nothing answers at the API's address."""


class StreamInterrupted(SetupError):
    """An event stream broke off, and kept breaking when it was opened again."""


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
        # "" rather than None: the SDK would read HANGO_API_KEY, which the options did already.
        self.sdk = hango_client.Client(url, (key or "").strip(), timeout=timeout,
                                       retry=CLI_RETRY)

    def close(self) -> None:
        self.sdk.close()

    def get(self, path: str, *, params: dict[str, Any] | None = None) -> Any:
        with self._translated():
            return self.sdk.request_json("GET", path, params=params)

    def post(self, path: str, body: dict[str, Any], *, timeout: float | None = None) -> Any:
        """``timeout``: this request's, for a call slower than the client's default."""
        with self._translated():
            return self.sdk.request_json("POST", path, json=body, timeout=timeout)

    def put(self, path: str, body: Any, *, params: dict[str, Any] | None = None) -> Any:
        with self._translated():
            return self.sdk.request_json("PUT", path, json=body, params=params)

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        with self._translated():
            return self.sdk.request_json("PATCH", path, json=body)

    def delete(self, path: str, *, params: dict[str, Any] | None = None) -> None:
        with self._translated():
            self.sdk.request("DELETE", path, params=params)

    def health(self) -> tuple[int, dict[str, Any]]:
        """``GET /healthz`` (no key needed): its status (200 up, 503 down) and body."""
        with self._translated():
            return self.sdk.health()

    def pages(
        self, path: str, *, params: dict[str, Any] | None = None, follow: bool = False
    ) -> Iterator[dict[str, Any]]:
        """The first page of a list and, with ``follow``, every page its ``next`` links lead to
        (on the same server only: the key goes nowhere else)."""
        with self._translated():
            if not follow:
                yield self.sdk.request_json("GET", path, params=params)
                return
            yield from self.sdk.pages(path, params=params)

    def call(self, route: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """One of the SDK's routes, its errors as the CLI reports them:
        ``client.call(client.sdk.evals.runs.get, eval_run_id)``."""
        with self._translated():
            return route(*args, **kwargs)

    @contextmanager
    def events(self, run_id: str, *, after: int) -> Iterator[EventStream]:
        """A run's events after seq ``after`` until it has finished (the SDK's stream, which
        reopens itself after a break); left at once when the block ends."""
        stream = self.sdk.runs.events(run_id, after=after)
        try:
            with self._translated(stream=True):
                yield stream
        finally:
            stream.close()

    @contextmanager
    def _translated(self, *, stream: bool = False) -> Iterator[None]:
        """The SDK's errors as the CLI reports them, each with its hint."""
        try:
            yield
        except hango_client.ApiError as exc:
            raise ApiError(status=exc.status, code=exc.code, message=exc.message,
                           detail=exc.detail) from exc
        except hango_client.NoKey as exc:
            raise SetupError("error: no API key. Pass --key or set HANGO_API_KEY.",
                             hint=f"To make one, run on the server: {BOOTSTRAP_COMMAND}",
                             ) from exc
        except hango_client.Unreachable as exc:
            raise Unreachable(
                f"error: cannot connect to the hango server at {self.url} ({exc.__cause__})",
                hint="Is it running? Start one with `make quickstart`, or point HANGO_API_URL "
                "or --url at it.") from exc
        except hango_client.ConnectionLost as exc:
            if stream:
                raise StreamInterrupted(f"error: the event stream from {self.url} broke off: "
                                        f"{exc.__cause__!r}") from exc
            raise SetupError(f"error: {exc}") from exc
        except hango_client.HangoError as exc:  # NotAnApi: something else answered
            raise SetupError(f"error: {exc}", hint=NOT_HANGO_HINT) from exc
