"""SSRF guard for the feed fetcher: which URLs may be fetched and which addresses may be connected to.

Feed URLs come from users and from redirects chosen by remote servers, so without a guard the fetcher
is a proxy into the host's private network (metadata services, admin panels, databases on localhost).

Two layers:

* `check_url` (pure): scheme, host and port sanity, credentials, and canonical spelling of numeric hosts.
* `GuardedResolver` (an aiohttp resolver) judges *every* resolved address with an `AddressPolicy`, and
  `refuse_literal` judges IP-literal hosts, which aiohttp never resolves. The connector connects to the
  vetted address, which closes DNS-rebinding gaps and catches public names that resolve to private
  addresses. TLS is unaffected: aiohttp uses the URL's host name for SNI and certificate checks.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import httpx
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
"""Decides whether the fetcher may connect to an address; `is_public_address` is the default."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]")
# A URL that is already in httpx's spelling: only characters it never percent-encodes, escapes that are
# complete, and (checked apart) no "." or ".." path segment. Most feed URLs are; they skip the httpx parse,
# a tenth of the CPU of a conditional GET.
_SPELLED_AS_HTTPX_RE = re.compile(r"https?://[^/?#]+/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*")
_DOT_SEGMENT_RE = re.compile(r"(?:^|/)\.{1,2}(?:/|$)")
_HOSTNAME_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_.])?")
# Characters a resolver's inet_aton() may read as an IPv4 address: 2130706433, 0177.0.0.1, 0x7f.1, 127.1.
_INET_ATON_RE = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)

_NON_PUBLIC_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, incl. cloud metadata 169.254.169.254
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, incl. broadcast
    )
)
_NON_PUBLIC_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/96",  # unspecified, loopback and deprecated IPv4-compatible addresses
        "::ffff:0:0:0/96",  # IPv4-translated
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard
        "2001::/23",  # IETF protocol assignments, incl. Teredo
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # deprecated site-local
        "ff00::/8",  # multicast
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class BlockedURLError(Exception):
    """The URL or the address it leads to may not be fetched; the message says why."""


class BlockedAddressError(BlockedURLError):
    """A host resolved to an address the policy refuses; raised at connect time, before any byte is sent."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a v6 address carries (mapped, 6to4, NAT64): it is judged as that IPv4 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(ip: IPAddress) -> bool:
    """True when `ip` is globally routable unicast, i.e. not loopback, private, link-local, reserved etc."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return is_public_address(embedded)
        if ip.scope_id is not None or any(ip in net for net in _NON_PUBLIC_V6):
            return False
    elif any(ip in net for net in _NON_PUBLIC_V4):
        return False
    # The explicit tables keep behaviour stable across Python versions; is_global adds ranges IANA adds later.
    return ip.is_global


def parse_ip_host(host: str) -> IPAddress | None:
    """The address a URL host denotes when it is an IP literal in any spelling the OS resolver accepts.

    IPv4 hosts are read with inet_aton() semantics (decimal, octal, hex and short forms), as getaddrinfo()
    does; IPv6 hosts are given without brackets. Returns None for host names.
    """
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    if not _INET_ATON_RE.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _normalize_host(host: str) -> str:
    ip = parse_ip_host(host)
    if ip is not None:
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.scope_id is not None:
                raise BlockedURLError(f"IPv6 zone in URL host: {host}")
            return f"[{ip.compressed}]"
        return str(ip)
    if ":" in host:
        raise BlockedURLError(f"invalid IPv6 host: {host}")
    if host.isascii() and not _HOSTNAME_RE.fullmatch(host):
        raise BlockedURLError(f"invalid host name: {host!r}")
    return host


def check_url(url: str) -> str:
    """Normalize a URL for fetching, or raise BlockedURLError.

    Only http(s) with a host is allowed; user:password@ is refused (it hides the real host from a casual
    reader and would send credentials to whoever the URL points at). Numeric hosts are rewritten to their
    canonical address so the host that gets judged is the host that gets connected to. The result is in
    httpx's own spelling (IDNA host, percent-encoded path), without fragment or default port.
    """
    text = url.strip()
    if _CONTROL_RE.search(text):
        raise BlockedURLError("whitespace or control character in URL")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BlockedURLError(f"malformed URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise BlockedURLError(f"scheme not allowed: {scheme or '(none)'}")
    if "@" in parts.netloc:
        raise BlockedURLError("credentials in URL")
    if not parts.hostname:
        raise BlockedURLError("URL has no host")
    if port == 0:
        raise BlockedURLError("invalid port 0")
    host = _normalize_host(parts.hostname)
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    joined = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    if host.isascii() and _SPELLED_AS_HTTPX_RE.fullmatch(joined) and not _DOT_SEGMENT_RE.search(parts.path):
        return joined  # httpx would return it unchanged (tests/host/test_netguard.py checks that claim)
    try:
        return str(httpx.URL(joined))
    except httpx.InvalidURL as exc:
        raise BlockedURLError(f"malformed URL: {exc}") from exc


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that hands the connector only addresses the policy accepts.

    The connector connects to exactly the addresses returned here, so the address judged is the address
    connected to (no DNS-rebinding gap). A name is refused as a whole if *any* of its addresses is refused:
    a name that mixes public and private records is an attack or a misconfiguration. aiohttp does not ask
    the resolver about IP literals; `refuse_literal` covers those.
    """

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._inner = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        for result in results:
            ip = ipaddress.ip_address(result["host"])
            if not self._policy(ip):
                raise BlockedAddressError(f"address {ip} is not allowed ({host} resolves to it)")
        return results

    async def close(self) -> None:
        await self._inner.close()


def refuse_literal(host: str, policy: AddressPolicy) -> None:
    """Raise BlockedAddressError when a URL host that is an IP literal is one the policy refuses."""
    ip = parse_ip_host(host.strip("[]"))
    if ip is not None and not policy(ip):
        raise BlockedAddressError(f"address {ip} is not allowed")
