"""One exception tree for everything the client raises.

``HangoError`` is the root: catch it to catch all. ``ApiError`` is the API's one error shape,
``{"error": {"code", "message", "detail"}}``, with the HTTP status; ``TransportError`` means no
answer was had at all (nothing listening, a connection dropped, a timeout) after the retry
policy gave up; the ``Run*`` errors are how :meth:`Client.run` says a run ended without an
answer.
"""

from __future__ import annotations

import json
from typing import Any

import httpx


class HangoError(Exception):
    """Anything the client raises."""


class ConfigurationError(HangoError):
    """The client cannot be used as made: an API URL that is no http(s) URL."""


class NoKey(ConfigurationError):
    """A route that needs a key was called by a client that has none."""


class ApiError(HangoError):
    """The API answered an error: ``status`` (HTTP), ``code`` (``not_found``, ``conflict``,
    ``validation_error``, …), ``message`` (for people) and ``detail`` (for programs: the fields
    at fault, an active run's id, …)."""

    def __init__(self, *, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail


class TransportError(HangoError):
    """No answer from the API: it cannot be reached, or the connection broke (a subclass of
    the builtin ``ConnectionError`` too, so code catching that catches this)."""


class Unreachable(TransportError, ConnectionError):
    """Nothing answers at the API's address."""


class ConnectionLost(TransportError, ConnectionError):
    """The connection broke, or the answer was not had in time."""


class NotAnApi(HangoError):
    """Something answered that is not hango's API (a proxy's page, another server)."""


class RunError(HangoError):
    """A run that :meth:`Client.run` drove ended without an answer; ``run`` is its JSON."""

    def __init__(self, message: str, *, run: Any) -> None:
        super().__init__(message)
        self.run = run


class RunFailed(RunError):
    """The run failed (``run["error"]`` says why); a crash-failed run may be resumed."""


class RunCancelled(RunError):
    """The run was cancelled (it may be resumed)."""


class ApprovalRequired(RunError):
    """The run waits for an approval (``awaiting_approval``) and no ``on_approval`` was given."""


class RunTimedOut(RunError):
    """The run did not end within :meth:`Client.run`'s ``timeout`` (it goes on: cancel it, or
    wait on it again)."""



class EvalRunTimedOut(RunTimedOut):
    """An eval run was still running when ``evals.runs.wait``'s ``timeout`` was spent (it goes
    on: cancel it, or wait on it again); ``run`` is the eval run as last read."""

def api_error(response: httpx.Response) -> ApiError:
    """The error an answer with a 4xx/5xx status stands for. The event route answers its
    errors as one ``event: error`` frame holding the same document."""
    try:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in response.text.splitlines()
                    if line.startswith("data:")]
            document = json.loads("\n".join(data))
        else:
            document = response.json()
        error = document["error"]
        code, message, detail = str(error["code"]), str(error["message"]), error.get("detail")
    except (ValueError, KeyError, TypeError):
        # Not hango's shape: a proxy's error page, or not hango at all.
        code, message, detail = "http_error", response.reason_phrase or "Request failed.", None
    return ApiError(status=response.status_code, code=code, message=message, detail=detail)
