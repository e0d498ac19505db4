"""Where hango may send a request of its own: the SSRF rule webhooks and MCP servers share.

A URL a tenant gives is http(s) with a host and no credentials in it. A literal address in it
must be public (not loopback, private, link-local, multicast or reserved, nor an IPv6 address
carrying such an IPv4 one) unless the operator's switch allows it; a name is resolved when the
request is made, every address it resolves to must be public, and the request goes to the
address checked, so a name that resolves elsewhere a moment later (DNS rebinding) gains
nothing. Each caller passes its switch's value and its name (``HANGO_WEBHOOK_ALLOW_PRIVATE``,
``HANGO_MCP_ALLOW_PRIVATE``), which a refusal names.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, quote, urlsplit, urlunsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


# What the API's schema says a URL a tenant gives looks like (check_url's rule but what only
# encoding the host can tell): http(s), a host (a name, any script, or an IPv6 literal), a port
# from 0 to 65535.
URL_PATTERN = (r"^[hH][tT][tT][pP][sS]?://(?:[A-Za-z0-9._~!$&'()*+,;=\u0080-\uffff-]+"
               r"|\[[0-9A-Fa-f:.]+\])(?::(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}"
               r"|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(?:[/?#].*)?$")


class Refused(Exception):
    """The URL may not be called (its address, its scheme): no attempt is worth making."""


class Unresolved(Exception):
    """The host did not resolve (the resolver may answer next time)."""


class BadUrl(ValueError):
    """A URL a tenant gave that hango will not call (the message says why, for the caller)."""


def check_url(url: str, *, allow_private: bool, switch: str) -> str:
    """``url`` as a URI (ASCII: a host in IDNA form, other text percent-encoded) if hango may
    be given it: http(s), a host, no userinfo, and a literal address only a public one unless
    ``allow_private``; :class:`BadUrl` otherwise. A name passes: its addresses are checked at
    every request."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (read for the ValueError of a bad port)
        host = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        raise BadUrl("Not a URL hango can call.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadUrl("An http:// or https:// URL with a host.")
    if parts.username or parts.password:
        raise BadUrl("Credentials do not belong in the URL.")
    if not (_REG_NAME.match(host) or ":" in host):  # a name, or an IPv6 literal
        raise BadUrl("Not a URL hango can call.")
    if _NOT_IN_A_URI.search(url) or _BRACKET.search(urlunsplit(parts._replace(netloc=""))):
        url = _as_uri(parts, host)
    try:
        address = ipaddress.ip_address(parts.hostname)
    except ValueError:  # a name: its addresses are checked at every request
        return url
    if not is_public(address) and not allow_private:
        raise BadUrl(f"A non-public address ({switch} allows it).")
    return url


def _as_uri(parts: SplitResult, host: str) -> str:
    """The URL in ASCII, as it is sent and as the API shows it (a ``uri``, not an IRI)."""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    path, query, fragment = (quote(_LONE_PERCENT.sub("%25", text), safe=_URI_SAFE)
                             for text in (parts.path, parts.query, parts.fragment))
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


# What a URI never holds as it is (RFC 3986): a space, a control or non-ASCII character, the
# delimiters it left out, a "%" that starts no escape; nor brackets but around an IPv6 host.
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NOT_IN_A_URI = re.compile(r'[^!-~]|["<>\\^`{|}]|' + _LONE_PERCENT.pattern)
_BRACKET = re.compile(r"[\[\]]")
# A host's name, in IDNA form: RFC 3986's reg-name without escapes.
_REG_NAME = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=-]+$")
# What a URI's path, query and fragment keep as they are (RFC 3986), "%" included: an escape
# already made stays one.
_URI_SAFE = "/?:@!$&'()*+,;=-._~%"


def resolved(name: str, port: int, *, allow_private: bool, switch: str) -> list[Address]:
    """Every address ``name`` resolves to, the first one to use; :class:`Refused` when one is
    not public and ``allow_private`` is off, :class:`Unresolved` when there is none. A literal
    address is its own answer: no resolver is asked (the caller need not wait for one)."""
    try:
        addresses = [ipaddress.ip_address(name.split("%")[0])]
    except ValueError:
        try:
            found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise Unresolved(f"the host {name!r} does not resolve ({exc})") from None
        addresses = [ipaddress.ip_address(str(entry[4][0]).split("%")[0]) for entry in found]
    if not allow_private:
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise Refused(f"the host {name!r} resolves to a non-public address "
                          f"({private[0]}); set {switch} to allow it")
    return addresses


def public_target(url: str, *, allow_private: bool, switch: str) -> tuple[str, str, str]:
    """The URL with its host replaced by an address that may be called, the ``Host`` header's
    value and the TLS name (the host in IDNA form); :class:`Refused` when none may be."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        name = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError) as exc:
        raise Refused(f"the URL cannot be used: {exc}") from None
    if parts.scheme not in ("https", "http") or not name:
        raise Refused(f"a URL hango calls is http(s)://host/…, not {parts.scheme!r}")
    address = resolved(name, port, allow_private=allow_private, switch=switch)[0]
    netloc = f"[{address}]" if address.version == 6 else str(address)
    shown = f"[{name}]" if ":" in name else name
    host = shown if parts.port is None else f"{shown}:{parts.port}"
    target = urlunsplit((parts.scheme, f"{netloc}:{port}", parts.path or "/", parts.query, ""))
    return target, host, name


def address_policy(allow_private: bool, *, switch: str) -> Callable[[str, int], str]:
    """The rule as a connection's check (``harness.mcp.client.AddressPolicy``): given a host
    and port, the address to connect to (the first the host resolves to), or
    :class:`Refused` / :class:`Unresolved`."""

    def policy(host: str, port: int) -> str:
        try:
            name = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise Refused(f"the host {host!r} cannot be used: {exc}") from None
        return str(resolved(name, port, allow_private=allow_private, switch=switch)[0])

    return policy


# IPv6 prefixes that carry an IPv4 address in their last 32 bits: NAT64 (well-known and local
# use) and IPv4-compatible; a 6to4 address carries one after its first 16 bits.
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"),
          ipaddress.ip_network("::/96"))
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")


def is_public(address: Address) -> bool:
    """Global and not multicast, and so is any IPv4 address it carries (a NAT64 or 6to4
    address reaches the IPv4 one; Python calls 64:ff9b::7f00:1 global, and 224.0.0.1 too)."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        carried = address.ipv4_mapped or address.sixtofour
        if carried is None and any(address in net for net in _NAT64):
            carried = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if carried is None and address in _SIX_TO_FOUR:
            carried = ipaddress.IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
        if carried is not None:
            return carried.is_global and not carried.is_multicast
    return True
