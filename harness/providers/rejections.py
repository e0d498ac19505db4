"""Telling a request the server refused as invalid from a server in trouble, before the SDK
retries it.

The SDKs retry every 5xx. A server built on FastAPI and pydantic (llama-cpp-python, some
proxies) answers a request body it cannot validate with a 500 whose body is pydantic's
``{"detail": [{"loc", "msg", "type"}, ...]}``: the same request is refused the same way each
time, so retrying it only multiplies the wait and the server's log. The adapters' HTTP client
(:mod:`harness.providers.http`) marks such a response ``x-should-retry: false`` — the header
both SDKs obey before their own status rules — so it fails at once; the adapters then map it to
:class:`~harness.errors.ProviderBadRequest`, which a resume does not retry either.

A 4xx other than 408, 409 and 429 is not retried by the SDKs already; those three are.
"""

from __future__ import annotations

import json

# Phrases of a validation failure in a 5xx body that is no pydantic ``detail`` list (a proxy
# that passes the message on as text, a server on another framework).
VALIDATION_PHRASES = ("validation error", "input should be", "field required",
                      "extra inputs are not permitted")


def is_invalid(status: int | None, body: object) -> bool:
    """Whether a 5xx answered with ``body`` (decoded JSON, or text) refuses the request itself."""
    if status is None or status < 500:
        return False
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        return True
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return any(phrase in text.lower() for phrase in VALIDATION_PHRASES)


def summary(body: object) -> str | None:
    """A pydantic ``detail`` list in one line: its first telling error's field and message,
    and how many more there are; None for any other body. A message that matched none of a
    union's members fails each one; the members whose role (a literal) did not match say
    nothing, so an error of another kind is shown first."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, list) or not detail or not isinstance(detail[0], dict):
        return None
    first = next((e for e in detail if isinstance(e, dict) and e.get("type") != "literal_error"),
                 detail[0])
    where = ".".join(str(part) for part in first.get("loc") or () if part != "body")
    line = f"the request is invalid: {where + ': ' if where else ''}{first.get('msg', '')}"
    return line + (f" (and {len(detail) - 1} more)" if len(detail) > 1 else "")
