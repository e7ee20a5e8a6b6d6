"""Where a request comes from and which names it may use (pure): the Host allow-list, the Origin check
for state-changing requests, and forwarding headers believed only from configured proxies.

DNS rebinding gives a hostile page a same-origin view of a loopback port under the attacker's own
name, so the Host header is checked on every request: IP literals and `localhost` (no name an attacker
controls can be one), the bind name, the machine's own name and the names in
FEEDEATER_HTTP_PUBLIC_HOSTS. A request that came through a reverse proxy (it carries forwarding
headers) is never treated as local, whoever the proxy is; the headers' values (client address, scheme,
host) are believed only when the TCP peer is one of FEEDEATER_HTTP_TRUSTED_PROXIES.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
FORWARDING_HEADERS = (
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
    "via",
)
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_PORT = re.compile(r":\d{1,5}$")


@dataclass(frozen=True, slots=True)
class Names:
    """The host names this server answers to besides IP literals and `localhost`."""

    public: frozenset[str]  # FEEDEATER_HTTP_PUBLIC_HOSTS (lowercase, no port)
    own: frozenset[str]  # the bind name and the machine's name

    @classmethod
    def build(cls, public: Iterable[str], own: Iterable[str]) -> Names:
        """Names as configured: `feeds.example.org`, with a port, or written as a URL."""

        def names(entries: Iterable[str]) -> frozenset[str]:
            return frozenset(
                filter(None, (hostname(e.split("://", 1)[-1].split("/", 1)[0]) for e in entries))
            )

        return cls(names(public), names(own))

    def allows(self, name: str) -> bool:
        return is_ip(name) or name == "localhost" or name in self.public or name in self.own


@dataclass(frozen=True, slots=True)
class Client:
    """The request's origin as far as it can be believed."""

    address: str  # the client's IP: the TCP peer, or the forwarded one behind a trusted proxy
    scheme: str  # http or https (a trusted proxy's proto)
    host: str  # the Host header, or a trusted proxy's forwarded host (lowercase, with port)
    via_proxy: bool  # forwarding headers present: some proxy stands between the browser and us
    peer_loopback: bool

    @property
    def local(self) -> bool:
        """A direct connection from this machine (what a loopback bind's open reads and writes assume)."""
        return self.peer_loopback and not self.via_proxy


def hostname(host: str) -> str:
    """`Example.ORG:8443` → `example.org`, `[::1]:80` → `::1`; a trailing dot dropped."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool((mapped or ip).is_loopback)


def networks(specs: Iterable[str]) -> tuple[IPNetwork, ...]:
    """FEEDEATER_HTTP_TRUSTED_PROXIES entries (addresses or CIDR ranges); ValueError names a bad one."""
    out = []
    for spec in specs:
        spec = spec.strip()
        if spec:
            out.append(ipaddress.ip_network(spec, strict=False))
    return tuple(out)


def _trusted(address: str, proxies: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in proxies)


def _forwarded(value: str) -> list[dict[str, str]]:
    """RFC 7239 `Forwarded` elements, in order (quoted values unquoted, names lowercase)."""
    elements = []
    for element in value.split(","):
        pairs: dict[str, str] = {}
        for pair in element.split(";"):
            name, _, raw = pair.partition("=")
            if name.strip():
                pairs[name.strip().lower()] = raw.strip().strip('"')
        elements.append(pairs)
    return elements


def _node(value: str) -> str:
    """A forwarded node (`"[2001:db8::1]:4711"`, `192.0.2.1:80`, `unknown`) → its address."""
    value = value.strip()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else ""
    return _PORT.sub("", value) if value.count(":") == 1 else value


def client(
    peer: str | None, scheme: str, headers: Mapping[str, str], proxies: tuple[IPNetwork, ...]
) -> Client:
    """Who asked, from the TCP peer and (only from trusted proxies) the forwarding headers.

    Behind a chain of trusted proxies the client is the last address that is not one of them: every
    hop appends, so only the entries added by our own proxies can be believed.
    """
    peer = peer or ""
    host = headers.get("host", "").lower()
    via = any(h in headers for h in FORWARDING_HEADERS)
    address = peer
    if via and _trusted(peer, proxies):
        if "forwarded" in headers:
            elements = _forwarded(headers["forwarded"])
            # The element of the client's hop was written by the first trusted proxy: its proto and host
            # are what the browser used.
            at = _client_hop([_node(e.get("for", "")) for e in elements], proxies)
            hop = elements[at] if at is not None else {}
            address = _node(hop.get("for", "")) or peer
            proto, forwarded_host = hop.get("proto", ""), hop.get("host", "")
        else:
            hops = [_node(h) for h in headers.get("x-forwarded-for", "").split(",")]
            at = _client_hop(hops, proxies)
            address = hops[at] if at is not None else peer
            proto = headers.get("x-forwarded-proto", "").split(",")[-1].strip()
            forwarded_host = headers.get("x-forwarded-host", "").split(",")[-1].strip()
        scheme = proto.lower() if proto.lower() in ("http", "https") else scheme
        host = forwarded_host.lower() or host
    return Client(address, scheme, host, via, is_loopback_address(peer))


def _client_hop(hops: list[str], proxies: tuple[IPNetwork, ...]) -> int | None:
    """Index of the rightmost hop that is not one of our proxies (every hop appends, so only what our
    own proxies added can be believed); the leftmost named hop when all are ours; None when none is."""
    named = [i for i, hop in enumerate(hops) if hop]
    for i in reversed(named):
        if not _trusted(hops[i], proxies):
            return i
    return named[0] if named else None


def host_problem(host: str, names: Names) -> str | None:
    """Why a request for this Host may not be answered (None: it may). No Host: not from a browser."""
    name = hostname(host)
    if not host or names.allows(name):
        return None
    return f"this server does not answer to the name {name!r}"


def origin_problem(method: str, headers: Mapping[str, str], host: str, names: Names) -> str | None:
    """Why a state-changing request looks cross-site (None: it does not). Browsers say where a request
    comes from (Sec-Fetch-Site, Origin); clients that say neither are not browsers, and a page can
    only make a browser send what browsers send."""
    if method.upper() not in UNSAFE_METHODS:
        return None
    site = headers.get("sec-fetch-site", "").lower()
    if site in ("cross-site", "same-site"):
        return f"a {site} request may not change anything here"
    origin = headers.get("origin")
    if origin is None:
        return None
    given = origin.strip().lower()
    if given == "null" or "://" not in given:
        return "a request from an opaque origin may not change anything here"
    netloc = given.split("://", 1)[1].split("/", 1)[0]
    if netloc == host.lower() or hostname(netloc) in names.public:
        return None
    return f"a request from {origin!r} may not change anything here"
