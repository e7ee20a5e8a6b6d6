"""The SSRF guard: URL policy, address classification and the connect-time resolver."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import aiohttp
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.net.netguard import (
    BlockedAddressError,
    BlockedURLError,
    GuardedResolver,
    check_url,
    is_public_address,
    parse_ip_host,
    refuse_literal,
)
from tests.feedserver import FeedServer, Route, self_signed_tls

NON_PUBLIC = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
    "0.1.2.3",
    "100.64.0.1",
    "100.127.255.254",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.0.8",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "198.18.0.1",
    "::",
    "::1",
    "::127.0.0.1",  # deprecated IPv4-compatible
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",
    "ff02::1",
    "2001:db8::1",
    "2001::1",  # Teredo
    "100::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "2002:7f00:1::1",  # 6to4 wrapping 127.0.0.1
    "2002:c0a8:101::1",  # 6to4 wrapping 192.168.1.1
    "64:ff9b::7f00:1",  # NAT64 wrapping 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 wrapping 10.0.0.1
    "64:ff9b:1::1",  # local-use NAT64
    "fe80::1%eth0",
]
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",  # just above 172.16/12
    "100.128.0.1",  # just above CGNAT
    "192.0.3.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "2002:808:808::1",  # 6to4 wrapping 8.8.8.8
    "64:ff9b::808:808",  # NAT64 wrapping 8.8.8.8
]


@pytest.mark.parametrize("address", NON_PUBLIC)
def test_non_public_addresses(address: str) -> None:
    assert not is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address: str) -> None:
    assert is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),  # decimal
        ("0177.0.0.1", "127.0.0.1"),  # octal
        ("0x7f.0.0.1", "127.0.0.1"),  # hex
        ("0x7F000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),  # short form
        ("10.1", "10.0.0.1"),
        ("0", "0.0.0.0"),
        ("8.8.8.8", "8.8.8.8"),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
        ("example.com", None),
        ("cafe", None),  # hex digits without 0x are a name
        ("1.2.3.4.5", None),
        ("08.0.0.1", None),  # not valid octal
        ("127.0.0.1 x", None),
    ],
)
def test_parse_ip_host_reads_like_inet_aton(host: str, expected: str | None) -> None:
    parsed = parse_ip_host(host)
    assert parsed == (ipaddress.ip_address(expected) if expected else None)


@pytest.mark.parametrize(
    "spelling", ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"]
)
def test_numeric_spellings_of_loopback_are_judged_as_loopback(spelling: str) -> None:
    host = httpx.URL(check_url(f"http://{spelling}:8080/feed")).host
    assert not is_public_address(ipaddress.ip_address(host))


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("HTTP://Example.COM:80/a?b=1#frag", "http://example.com/a?b=1"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com:443/x", "https://example.com/x"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("  http://example.com/feed.xml \n", "http://example.com/feed.xml"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0x7f.1:8080/x", "http://127.0.0.1:8080/x"),
        ("http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
        ("http://bücher.de/feed", "http://xn--bcher-kva.de/feed"),
        ("http://feeds.example.com/a%20b", "http://feeds.example.com/a%20b"),
        ("http://under_score.example.com/", "http://under_score.example.com/"),
    ],
)
def test_check_url_normalizes(url: str, normalized: str) -> None:
    assert check_url(url) == normalized


_URL_CHARS = "aZ09-._~!$&'()*+,;=:@/?%#|^`{}[]\"<>\\é 2fFe"


@settings(max_examples=2000, deadline=None)
@given(rest=st.text(alphabet=_URL_CHARS, max_size=24))
def test_check_url_always_answers_in_httpx_spelling(rest: str) -> None:
    """The fast path (a URL already in httpx's spelling skips the httpx parse) must agree with httpx."""
    try:
        checked = check_url(f"https://feeds.example.com:8443/{rest}")
    except BlockedURLError:
        return
    assert str(httpx.URL(checked)) == checked


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "data:text/plain,hello",
        "ftp://example.com/feed",
        "javascript:alert(1)",
        "gopher://example.com/",
        "mailto:someone@example.com",
        "//example.com/feed",
        "example.com/feed",
        "http:///feed",
        "http://user:secret@example.com/feed",
        "http://example.com@evil.example/feed",
        "http://example.com:99999/",
        "http://example.com:0/",
        "http://example.com:port/",
        "http://exa mple.com/",
        "http://example.com/a\nb",
        "http://ex%41mple.com/",
        "http://[fe80::1%25eth0]/",
        "http://[::1/",
        "http://[not-ipv6]/",
    ],
)
def test_check_url_refuses(url: str) -> None:
    with pytest.raises(BlockedURLError):
        check_url(url)


async def test_resolver_refuses_a_name_that_resolves_to_loopback() -> None:
    with pytest.raises(BlockedAddressError, match=r"127\.0\.0\.1 is not allowed \(localhost resolves"):
        await GuardedResolver(is_public_address).resolve("localhost", 80)


async def test_resolver_returns_only_vetted_addresses() -> None:
    judged: list[str] = []

    def policy(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        judged.append(str(ip))
        return ip.is_loopback

    results = await GuardedResolver(policy).resolve("localhost", 80)
    assert [r["host"] for r in results] == judged
    assert judged and all(ipaddress.ip_address(a).is_loopback for a in judged)


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]", "10.0.0.1", "[::ffff:7f00:1]"])
def test_ip_literals_are_judged_without_a_resolver(host: str) -> None:
    """aiohttp never asks the resolver about IP literals, so they are judged on their own."""
    with pytest.raises(BlockedAddressError):
        refuse_literal(host, is_public_address)


def test_public_literals_and_names_pass_the_literal_check() -> None:
    refuse_literal("93.184.216.34", is_public_address)
    refuse_literal("example.com", is_public_address)  # a name: the resolver judges it


async def test_a_session_on_the_resolver_connects_only_where_the_policy_allows(
    feed_server: FeedServer,
) -> None:
    feed_server.route("/feed", Route(body=b"<rss/>"))
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(lambda ip: ip.is_loopback))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(feed_server.url("/feed", host="localhost")) as response,
    ):
        assert response.status == 200
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(is_public_address))
    async with aiohttp.ClientSession(connector=connector) as session:
        with pytest.raises(BlockedAddressError):
            await session.get(feed_server.url("/feed", host="localhost"))
    assert len(feed_server.requests_to("/feed")) == 1


async def test_tls_uses_the_url_host_while_tcp_uses_the_vetted_ip(tmp_path: Path) -> None:
    """The certificate names only "localhost": verification and SNI must use the name, not 127.0.0.1."""
    server_tls, client_tls = self_signed_tls(tmp_path)
    with FeedServer(tls=server_tls) as server:
        server.route("/feed", Route(body=b"<rss/>"))
        connector = aiohttp.TCPConnector(resolver=GuardedResolver(lambda ip: ip.is_loopback), ssl=client_tls)
        async with aiohttp.ClientSession(connector=connector) as session:
            async with session.get(server.url("/feed", host="localhost")) as response:
                assert response.status == 200
                assert await response.read() == b"<rss/>"
            assert server.sni_names == ["localhost"]
            # The same server by IP fails verification: the check really is against the URL's host.
            with pytest.raises(aiohttp.ClientConnectorCertificateError, match="CERTIFICATE_VERIFY_FAILED"):
                await session.get(server.url("/feed", host="127.0.0.1"))
