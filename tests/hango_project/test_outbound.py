"""The SSRF rule webhooks and MCP servers share: which URLs a tenant may give, which addresses a
request may go to, and the address a connection is made to."""

from __future__ import annotations

import ipaddress
import re

import pytest

from hango_project import outbound

SWITCH = "HANGO_TEST_ALLOW_PRIVATE"


@pytest.mark.parametrize(("address", "public"), [
    ("93.184.216.34", True), ("2606:2800:220:1::1", True), ("10.0.0.5", False),
    ("127.0.0.1", False), ("169.254.169.254", False), ("192.168.1.1", False),
    ("::1", False), ("::ffff:127.0.0.1", False), ("64:ff9b::7f00:1", False),
    ("64:ff9b::5db8:d822", True), ("2002:7f00:1::1", False), ("2002:5db8:d822::1", True),
    ("::127.0.0.1", False), ("fe80::1", False), ("fc00::1", False),
    # Multicast: Python's is_global says yes; no request of hango's goes there.
    ("224.0.0.1", False), ("239.1.2.3", False), ("ff0e::1", False), ("::ffff:224.0.0.1", False),
])
def test_an_address_is_public_only_if_whatever_it_carries_is(address, public):
    assert outbound.is_public(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize(("url", "problem"), [
    ("ftp://example.com/", "An http:// or https:// URL with a host."),
    ("https:///path", "An http:// or https:// URL with a host."),
    ("http://user:pw@example.com/", "Credentials do not belong in the URL."),
    ("http://example.com:99999/", "Not a URL hango can call."),
    ("http://a%62c/", "Not a URL hango can call."),  # no escapes in a host hango sends
    ("not a url", "An http:// or https:// URL with a host."),
    ("http://127.0.0.1:9/x", f"A non-public address ({SWITCH} allows it)."),
    ("http://[::1]/x", f"A non-public address ({SWITCH} allows it)."),
    ("http://[64:ff9b::a00:1]/", f"A non-public address ({SWITCH} allows it)."),
])
def test_a_url_a_tenant_gives_is_checked(url, problem):
    with pytest.raises(outbound.BadUrl) as refused:
        outbound.check_url(url, allow_private=False, switch=SWITCH)
    assert str(refused.value) == problem


def test_a_private_literal_passes_when_allowed_and_a_name_always_passes():
    assert outbound.check_url("http://127.0.0.1:9/x", allow_private=True,
                              switch=SWITCH) == "http://127.0.0.1:9/x"
    # A name's addresses are checked at every request, not when it is given.
    assert outbound.check_url("https://localhost/mcp", allow_private=False,
                              switch=SWITCH) == "https://localhost/mcp"
    assert outbound.check_url("https://93.184.216.34/", allow_private=False,
                              switch=SWITCH) == "https://93.184.216.34/"


@pytest.mark.parametrize("url, kept", [
    ("https://bücher.example/päth?q=ü#f", "https://xn--bcher-kva.example/p%C3%A4th?q=%C3%BC#f"),
    ("http://example.com:8080/a b/{c}", "http://example.com:8080/a%20b/%7Bc%7D"),
    ("HTTPS://Example.com/A%20b", "HTTPS://Example.com/A%20b"),  # a URI already: as given
    ("http://a.example/%zz/[x]?q=|^", "http://a.example/%25zz/%5Bx%5D?q=%7C%5E"),
])
def test_a_url_is_kept_as_a_uri(url, kept):
    assert re.match(outbound.URL_PATTERN, url)
    # The API says a URL is a `uri`; an IRI kept as given broke that (the schema fuzz).
    assert outbound.check_url(url, allow_private=False, switch=SWITCH) == kept


def test_a_request_goes_to_the_checked_address_with_the_name_kept():
    target, host, sni = outbound.public_target("https://93.184.216.34:8443/hook?a=1",
                                               allow_private=False, switch=SWITCH)
    assert (target, host, sni) == ("https://93.184.216.34:8443/hook?a=1",
                                   "93.184.216.34:8443", "93.184.216.34")
    with pytest.raises(outbound.Refused, match=f"non-public address.*set {SWITCH}"):
        outbound.public_target("http://localhost:8080/", allow_private=False, switch=SWITCH)
    target, host, _ = outbound.public_target("http://[::1]:8080/", allow_private=True,
                                             switch=SWITCH)
    assert (target, host) == ("http://[::1]:8080/", "[::1]:8080")


def test_the_address_policy_resolves_and_refuses_what_is_not_public():
    policy = outbound.address_policy(False, switch=SWITCH)
    assert policy("93.184.216.34", 443) == "93.184.216.34"
    for host in ("localhost", "127.0.0.1", "::1", "169.254.169.254"):
        with pytest.raises(outbound.Refused, match=f"non-public address .*set {SWITCH}"):
            policy(host, 80)
    allowed = outbound.address_policy(True, switch=SWITCH)
    assert ipaddress.ip_address(allowed("localhost", 80)).is_loopback
    assert allowed("127.0.0.1", 8000) == "127.0.0.1"
    # A literal is answered without a resolver, as a resolver would: a zone left out.
    assert (allowed("::1", 80), allowed("fe80::1%lo", 80)) == ("::1", "fe80::1")
    with pytest.raises(outbound.Refused, match=r"'fe80::1%lo' resolves to a non-public address"
                                               r" \(fe80::1\)"):
        policy("fe80::1%lo", 80)


def test_a_name_that_does_not_resolve_is_unresolved_not_refused():
    with pytest.raises(outbound.Unresolved, match="does not resolve"):
        outbound.address_policy(False, switch=SWITCH)("no-such-host.invalid", 443)
