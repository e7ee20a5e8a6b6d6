"""SSRF guard for the feed fetcher: which URLs may be fetched and which addresses may be connected to.

Feed URLs come from users and from redirects chosen by remote servers, so without a guard the fetcher
is a proxy into the host's private network (metadata services, admin panels, databases on localhost).

Two layers:

* `check_url` (pure): scheme, host and port sanity, credentials, and canonical spelling of numeric hosts.
* `GuardedBackend` (an httpcore network backend): resolves the host itself, judges *every* resolved address
  with an `AddressPolicy` and connects to the vetted address. Judging the address actually connected to
  closes DNS-rebinding gaps and catches public names that resolve to private addresses. TLS is unaffected:
  httpcore calls `start_tls` after `connect_tcp` with the request's host name for SNI and certificate checks.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
"""Decides whether the fetcher may connect to an address; `is_public_address` is the default."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
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
    if any(c <= " " or c == "\x7f" for c in text):
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
    try:
        return str(httpx.URL(urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))))
    except httpx.InvalidURL as exc:
        raise BlockedURLError(f"malformed URL: {exc}") from exc


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore backend that connects only to addresses the policy accepts.

    It resolves the host itself and refuses the connection if *any* resolved address is refused (a name
    that mixes public and private records is an attack or a misconfiguration), then connects to the vetted
    addresses in resolver order. `policy=None` turns the address check off and delegates directly.
    """

    def __init__(self, policy: AddressPolicy | None) -> None:
        self._policy = policy
        self._inner = httpcore.AnyIOBackend()  # what httpcore's AutoBackend picks under asyncio

    async def _resolve(self, host: str, port: int, wait_s: float | None) -> list[IPAddress]:
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(wait_s):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"DNS lookup timed out for {host}") from exc
        except socket.gaierror as exc:
            raise httpcore.ConnectError(f"DNS lookup failed for {host}: {exc}") from exc
        return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._policy is None:
            return await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        addresses = await self._resolve(host, port, timeout)
        for ip in addresses:
            if not self._policy(ip):
                via = "" if host == str(ip) else f" ({host} resolves to it)"
                raise BlockedAddressError(f"address {ip} is not allowed{via}")
        error: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None, "getaddrinfo returns at least one address or raises"
        raise error

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool rebuilt on a GuardedBackend.

    httpx exposes no network_backend option, so the pool that the parent constructor built is replaced;
    everything else (request conversion, exception mapping, response streams) stays httpx's own.
    """

    def __init__(
        self,
        policy: AddressPolicy | None,
        *,
        verify: ssl.SSLContext | bool = True,
        http2: bool = True,
        limits: httpx.Limits = httpx.Limits(),
    ) -> None:
        ssl_context = (
            verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
        )
        super().__init__(verify=ssl_context, http2=http2, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=GuardedBackend(policy),
        )
