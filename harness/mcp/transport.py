"""The HTTP transport of an MCP session: where each request may go, and what comes back.

* Each request passes the session's address policy (the server's SSRF rule: the host is
  resolved, every address must be allowed) and goes to the address checked, the name kept in
  ``Host`` and TLS's SNI, so a name that resolves elsewhere a moment later gains nothing.
* A redirect answer is refused (the SDK would follow one within the same origin; hango follows
  none), and a 401 or 403 ends the session saying the credentials were refused.
* A response's body is read up to :data:`MAX_RESPONSE_BYTES`: past it the response fails, so a
  server cannot fill the memory of a worker shared by every run it holds (a result's text is
  cut far below that anyway). The SDK reports that only as a closed connection, so the session
  keeps why (``refused``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import httpx2

# Raises to refuse ``host:port``; else the address to connect to (the host itself, or one of
# its addresses, so a name that resolves elsewhere a moment later gains nothing). It may wait
# for a resolver on a name, so it is called off the loop; a literal address it answers at once.
AddressPolicy = Callable[[str, int], str]

KEEPALIVE_SECONDS = 2.0
# A body past this fails: the largest result kept is 1,000,000 characters of text (the
# operator's limit at most) and 8 images of 8 MiB of base64 in all (harness.images).
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class RedirectRefused(httpx2.TransportError):
    """A redirect answer: hango follows none to an MCP server."""


class ResponseTooLarge(httpx2.TransportError):
    """A response body past :data:`MAX_RESPONSE_BYTES`."""


class _Capped(httpx2.AsyncByteStream):
    """A response body that fails once it passes ``limit`` bytes, saying so in ``refused`` (the
    SDK reports only that the connection closed)."""

    def __init__(self, body: httpx2.AsyncByteStream, limit: int, refused: list[str]) -> None:
        self._body, self._limit, self._refused = body, limit, refused

    async def __aiter__(self) -> Any:
        seen = 0
        async for chunk in self._body:
            seen += len(chunk)
            if seen > self._limit:
                why = f"its answer passed the {self._limit:,} bytes hango reads"
                self._refused.append(why)
                raise ResponseTooLarge(why)
            yield chunk

    async def aclose(self) -> None:
        await self._body.aclose()


class CredentialsRefused(httpx2.TransportError):
    """A 401 or 403 answer (the SDK would say only "Server returned an error response")."""


@cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every session of the process: building one reads the CA bundle
    (~15 ms of CPU), which per session would cost more than its calls."""
    return ssl.create_default_context()


class Guarded(httpx2.AsyncHTTPTransport):
    """httpx's transport, each request sent to the address its policy allows, and no redirect
    or refusal of the credentials passed on (raised, they end the session, saying why)."""

    def __init__(self, policy: AddressPolicy | None, refused: list[str],
                 trace: Mapping[str, str] | None = None) -> None:
        # An idle connection is dropped before a server would drop it (uvicorn: 5 s): one the
        # server closes as a request reuses it fails that request, and the SDK its session.
        super().__init__(verify=_tls(), limits=httpx2.Limits(keepalive_expiry=KEEPALIVE_SECONDS))
        self._policy, self._refused = policy, refused
        self._trace = trace if trace is not None else {}  # the caller's dict, changed per call

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._trace:  # the trace context of the call under way (harness.mcp.client)
            request.headers.update(self._trace)
        if self._policy is not None:
            host = request.url.host
            port = request.url.port or (443 if request.url.scheme == "https" else 80)
            # A literal address has nothing to resolve: checked here, without a thread's hop
            # (~0.6 ms of CPU a request under gevent).
            address = (self._policy(host, port) if _is_address(host)
                       else await asyncio.to_thread(self._policy, host, port))
            if address != host:  # the Host header keeps the name; TLS checks it too
                request.extensions = {**request.extensions, "sni_hostname": host}
                request.url = request.url.copy_with(host=address)
        response = await super().handle_async_request(request)
        if response.is_redirect or response.status_code in (401, 403):
            await response.aclose()
            if response.is_redirect:
                raise RedirectRefused(f"the server answered {response.status_code} (a redirect); "
                                      "redirects are not followed")
            raise CredentialsRefused(f"the server answered {response.status_code}: it refused "
                                     "the credentials in the request's headers")
        assert isinstance(response.stream, httpx2.AsyncByteStream)  # an async transport's
        response.stream = _Capped(response.stream, MAX_RESPONSE_BYTES, self._refused)
        return response


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True
