"""Where a request comes from (host.web.network, pure): the names the server answers to, cross-site
writes, and forwarding headers believed only from trusted proxies."""

from __future__ import annotations

import pytest

from host.console.throttle import LoginThrottle, client_key
from host.web import network

NAMES = network.Names.build(["Feeds.Example.org.", "https://news.example.net:8443/feeds"], own=["box"])
PROXIES = network.networks(["127.0.0.1", "10.0.0.0/8"])


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:9464", True),
        ("127.0.0.2", True),
        ("[::1]:9464", True),
        ("192.168.1.5:9464", True),  # an IP literal: no name an attacker controls
        ("localhost:9464", True),
        ("LOCALHOST.", True),
        ("box:9464", True),  # the machine's own name
        ("feeds.example.org", True),
        ("feeds.example.org:443", True),
        ("news.example.net", True),  # configured as a URL
        ("", True),  # HTTP/1.0 without Host: not a browser
        ("rebind.attacker.example:9464", False),
        ("127.0.0.1.nip.io:9464", False),
        ("localhost.attacker.example", False),
        ("feeds.example.org.attacker.example", False),
    ],
)
def test_host_names(host: str, allowed: bool) -> None:
    assert (network.host_problem(host, NAMES) is None) is allowed


@pytest.mark.parametrize(
    ("method", "headers", "ok"),
    [
        (
            "GET",
            {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
            True,
        ),  # reads: not judged here
        ("POST", {}, True),  # curl, a hub, a script: not a browser
        ("POST", {"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:9464"}, True),
        ("POST", {"sec-fetch-site": "none"}, True),  # typed into the address bar
        ("POST", {"origin": "https://feeds.example.org"}, True),  # through the proxy: Host is 127.0.0.1:9464
        ("DELETE", {"origin": "http://evil.example"}, False),
        ("POST", {"origin": "http://127.0.0.1:8080"}, False),  # another port is another origin
        ("POST", {"origin": "null"}, False),
        ("PATCH", {"sec-fetch-site": "same-site"}, False),
        ("PUT", {"sec-fetch-site": "cross-site", "origin": "http://127.0.0.1:9464"}, False),
    ],
)
def test_cross_site_writes(method: str, headers: dict[str, str], ok: bool) -> None:
    lowered = {k.lower(): v for k, v in headers.items()}
    assert (network.origin_problem(method, lowered, "127.0.0.1:9464", NAMES) is None) is ok


def test_forwarding_headers_are_believed_only_from_trusted_proxies() -> None:
    direct = network.client("127.0.0.1", "http", {"host": "127.0.0.1:9464"}, PROXIES)
    assert direct.local and direct.address == "127.0.0.1"
    forged = {"host": "127.0.0.1:9464", "x-forwarded-for": "1.2.3.4", "x-forwarded-proto": "https"}
    untrusted = network.client("192.0.2.9", "http", forged, PROXIES)
    assert (untrusted.address, untrusted.scheme, untrusted.via_proxy) == ("192.0.2.9", "http", True)
    # The rightmost address our proxies did not add is the client; what the client wrote itself is not.
    chain = {"x-forwarded-for": "6.6.6.6, 203.0.113.7, 10.1.2.3", "x-forwarded-host": "feeds.example.org"}
    trusted = network.client("127.0.0.1", "http", chain, PROXIES)
    assert (trusted.address, trusted.host, trusted.local) == ("203.0.113.7", "feeds.example.org", False)
    # RFC 7239: the client's element (written by our first proxy) says the scheme and name it used; an
    # element the client wrote itself further left is not believed.
    rfc = {
        "forwarded": "for=6.6.6.6;proto=http;host=evil.example, "
        'for="[2001:db8::1]:4711";proto=https;host=feeds.example.org, for=10.0.0.2'
    }
    seen = network.client("127.0.0.1", "http", rfc, PROXIES)
    assert (seen.address, seen.scheme, seen.host) == ("2001:db8::1", "https", "feeds.example.org")
    ours = network.client("127.0.0.1", "http", {"forwarded": "for=10.0.0.3;proto=https"}, PROXIES)
    assert (ours.address, ours.scheme) == ("10.0.0.3", "https")  # only our proxies: the first of them
    unknown = network.client("127.0.0.1", "https", {"forwarded": "for=unknown", "host": "h"}, PROXIES)
    assert (unknown.address, unknown.scheme, unknown.host) == ("unknown", "https", "h")
    via = network.client("::ffff:127.0.0.1", "http", {"via": "1.1 nginx"}, ())
    assert via.peer_loopback and not via.local  # a proxy nobody configured: still not local


def test_bad_proxy_ranges_are_named() -> None:
    with pytest.raises(ValueError, match="10.0.0.0/33"):
        network.networks(["10.0.0.0/33"])


def test_login_throttle_per_client_overall_and_bounded() -> None:
    now = [0.0]
    throttle = LoginThrottle(lambda: now[0])
    assert [throttle.admit("192.0.2.1") for _ in range(6)] == [0.0] * 5 + [20.0]
    now[0] = 20.0
    assert throttle.admit("192.0.2.1") == 0.0  # one more every 20 s
    assert client_key("2001:db8::1") == client_key("2001:db8::ffff") == "2001:db8::/64"
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1"
    for i in range(30):
        throttle.admit(f"198.51.100.{i}")
    assert throttle.admit("203.0.113.1") > 0  # everybody together: 20 at once, then one a second
