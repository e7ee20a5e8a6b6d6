"""The polite, bounded HTTP fetcher for feeds.

I/O stays in `Fetcher`; the decisions it makes (redirect targets, Retry-After, body decoding under a size
cap, error classification) are plain functions and classes that can be tested without a network.

Politeness: conditional GET, compression, a global concurrency cap, a per-host cap, optional per-host
spacing, an optional per-host request rate (token bucket, `ratelimit.py`) and a per-host circuit breaker
(`host/breaker.py`): a host that keeps failing (network errors, 5xx, 429) is left alone for a cool-down,
then probed with one request, so a dead server with a thousand feeds costs one timeout, not a thousand.
Safety: every URL (including each redirect hop) passes `check_url`, every connection goes through
the address guard of `netguard`, bodies are capped while streaming (raw and decoded, so gzip bombs stop
early), and each fetch has an overall network-time deadline that a trickling server cannot stretch.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import socket
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from types import TracebackType
from typing import Protocol, Self

import aiohttp
import brotli
import httpx
from prometheus_client import Counter, Gauge
from yarl import URL

from host.breaker import Admission, BreakerParams, BreakerState, admit, record
from host.net.netguard import (
    AddressPolicy,
    BlockedURLError,
    GuardedResolver,
    check_url,
    is_public_address,
    refuse_literal,
)
from host.net.ratelimit import TokenBucket

log = logging.getLogger("feedeater.fetch")

FEED_ACCEPT = (
    "application/rss+xml, application/atom+xml, application/feed+json, application/rdf+xml;q=0.9, "
    "application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5"
)
_ACCEPT_ENCODING = "gzip, deflate, br"  # exactly what BodyDecoder can decode
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PERMANENT_REDIRECTS = frozenset({301, 308})
_SUCCESS = frozenset({200, 304})
_DRAIN_LIMIT = 64 * 1024  # small error/redirect bodies are read so the connection can be reused
_HOST_FAILURE_KINDS = frozenset({"network", "dns", "tls", "timeout"})
_HOST_FAILURE_STATUSES = frozenset({429, 500, 502, 503, 504})
_KEEPALIVE_S = 5.0  # idle connections are kept this long: reused within a burst, never piling up file handles
_MAX_HEADER_LINE = 16 * 1024  # real servers send long Link / Content-Security-Policy headers

HOST_CIRCUIT = Counter(
    "feedeater_fetch_host_circuit_transitions_total", "Per-host circuit breaker openings and closings", ["to"]
)
HOSTS_OPEN = Gauge("feedeater_fetch_hosts_circuit_open", "Hosts whose circuit is open in this process")


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of one fetch.

    `status` is non-zero exactly when a final (non-redirect) HTTP response arrived; then `headers` holds it.
    `error_kind` is "http" for every final status other than 200/304. Validators (`etag`, `last_modified`)
    are only reported for 200/304, so a caller can store them without checking the status again.
    """

    status: int
    url: str  # the last URL requested or attempted: the final URL after the redirects followed
    permanent_url: str | None  # set when every hop was 301/308 and the fetch succeeded (200/304)
    body: bytes | None  # decoded body for 200, else None
    headers: dict[str, str]  # lower-cased names
    etag: str | None
    last_modified: str | None
    retry_after_s: float | None
    error: str | None
    error_kind: str | None  # network dns tls timeout too_large blocked redirects http circuit_open
    elapsed_s: float  # wall time of the fetch() call, including waiting for concurrency slots
    redirects: tuple[str, ...]  # each redirect target followed, in order
    wire_bytes: int = 0  # bytes of the 200 body as received (before Content-Encoding decoding)
    request_headers: Mapping[str, str] = field(default_factory=dict)  # what the last request sent


class FetchError(Exception):
    """A fetch failure the fetcher detects itself; `kind` is a FetchResult.error_kind. Never escapes fetch()."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date); past dates give 0."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def resolve_redirect(base: str, location: str) -> str:
    """The checked absolute URL a Location header points to (relative references resolve against `base`)."""
    try:
        target = str(httpx.URL(base).join(location.strip()))
    except httpx.InvalidURL as exc:
        raise BlockedURLError(f"malformed redirect target {location!r}: {exc}") from exc
    return check_url(target)


class _Stage(Protocol):
    def feed(self, data: bytes, limit: int) -> bytes: ...
    def finish(self) -> bytes: ...


class _ZlibStage:
    """gzip or deflate; deflate falls back to raw DEFLATE, which many servers send instead of zlib."""

    def __init__(self, wbits: int) -> None:
        self._decompressor = zlib.decompressobj(wbits)
        self._raw_fallback = wbits == zlib.MAX_WBITS
        self._started = False

    def feed(self, data: bytes, limit: int) -> bytes:
        try:
            out = self._decompressor.decompress(data, limit)
        except zlib.error:
            if not self._raw_fallback or self._started:
                raise
            self._decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._decompressor.decompress(data, limit)
        self._started = True
        return out

    def finish(self) -> bytes:
        if not self._decompressor.eof:
            raise zlib.error("compressed stream is truncated")
        return self._decompressor.flush()


class _BrotliStage:
    def __init__(self) -> None:
        self._decompressor = brotli.Decompressor()

    def feed(self, data: bytes, limit: int) -> bytes:
        out: bytes = self._decompressor.process(data, output_buffer_limit=limit)
        return out

    def finish(self) -> bytes:
        if not self._decompressor.is_finished():
            raise brotli.error("compressed stream is truncated")
        return b""


def _stage(coding: str) -> _Stage:
    if coding in ("gzip", "x-gzip"):
        return _ZlibStage(16 + zlib.MAX_WBITS)
    if coding == "deflate":
        return _ZlibStage(zlib.MAX_WBITS)
    if coding == "br":
        return _BrotliStage()
    raise FetchError("network", f"unsupported Content-Encoding: {coding}")


@contextmanager
def _decoding() -> Iterator[None]:
    try:
        yield
    except (zlib.error, brotli.error) as exc:
        raise FetchError("network", f"undecodable body: {exc}") from exc


class BodyDecoder:
    """Decodes a Content-Encoding'd body incrementally and refuses to hold more than `max_bytes`.

    Both the raw byte count and the decoded byte count are capped, and every decompression step is asked
    for at most one byte more than the remaining budget, so a gzip or brotli bomb costs at most
    `max_bytes` of memory before FetchError("too_large") is raised.
    """

    def __init__(self, content_encoding: str | None, max_bytes: int) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
        self._stages = [_stage(c) for c in reversed(codings) if c and c != "identity"]
        self._max_bytes = max_bytes
        self._raw = 0
        self._size = 0
        self._chunks: list[bytes] = []

    @property
    def raw_bytes(self) -> int:
        """Bytes fed in so far, as they came off the wire."""
        return self._raw

    def _too_large(self) -> FetchError:
        return FetchError("too_large", f"body larger than {self._max_bytes} bytes")

    def _run(self, data: bytes, first_stage: int) -> None:
        """Push `data` through the stages from `first_stage` on and keep what comes out."""
        with _decoding():
            for stage in self._stages[first_stage:]:
                if not data:
                    return
                data = stage.feed(data, self._max_bytes - self._size + 1)
        if self._size + len(data) > self._max_bytes:
            raise self._too_large()
        self._size += len(data)
        self._chunks.append(data)

    def feed(self, chunk: bytes) -> None:
        self._raw += len(chunk)
        if self._raw > self._max_bytes:
            raise self._too_large()
        self._run(chunk, 0)

    def finish(self) -> bytes:
        """The whole decoded body; raises when a compressed stream was cut short."""
        if self._raw:
            for i, stage in enumerate(self._stages):
                with _decoding():
                    tail = stage.finish()
                self._run(tail, i + 1)
        return b"".join(self._chunks)


def _sendable(validator: str) -> bool:
    """Stored validators go back verbatim; one that cannot go in a header (non-ASCII, CR/LF) is dropped instead
    of failing every future fetch of the feed. The server then answers 200 and supplies a fresh one."""
    return validator.isascii() and validator.isprintable()


_MESSAGE_CHARS = 240  # aiohttp quotes the offending bytes of a malformed response in its messages


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


def classify_error(exc: BaseException) -> tuple[str, str]:
    """(error_kind, one-line message) for an exception raised while fetching."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    for cause in chain:
        if isinstance(cause, FetchError):
            return cause.kind, _one_line(cause)
        if isinstance(cause, BlockedURLError):
            return "blocked", f"blocked: {_one_line(cause)}"
    for cause in chain:
        if isinstance(cause, TimeoutError):
            return "timeout", _one_line(exc)
        if isinstance(cause, socket.gaierror | aiohttp.ClientConnectorDNSError):
            return "dns", f"DNS lookup failed: {_one_line(cause)}"
        if isinstance(cause, ssl.SSLError):
            return "tls", f"TLS error: {_one_line(cause)}"
        if isinstance(cause, ConnectionRefusedError):
            return "network", f"connection refused: {_one_line(cause)}"
    return "network", f"{type(exc).__name__}: {_one_line(exc)}"


_FETCH_ERRORS = (aiohttp.ClientError, OSError, BlockedURLError, FetchError)  # TimeoutError is an OSError


@dataclass(slots=True)
class _Hop:
    status: int
    headers: dict[str, str]  # lower-cased names; repeated headers joined with ", "
    body: bytes | None
    elapsed_s: float
    wire_bytes: int


def host_failed(status: int, error_kind: str | None) -> bool:
    """Whether a fetch says something about the *host* (down, overloaded) rather than about one URL."""
    return error_kind in _HOST_FAILURE_KINDS or status in _HOST_FAILURE_STATUSES


@dataclass(slots=True)
class _HostCircuit:
    state: BreakerState = field(default_factory=BreakerState)
    retry_at: float = 0.0
    probing: bool = False


class _HostGate:
    """Per-host concurrency, spacing and rate; exists only while the host has users, a spacing wait
    pending or a bucket that is not full again."""

    __slots__ = ("bucket", "next_start", "semaphore", "users")

    def __init__(self, limit: int, bucket: TokenBucket | None) -> None:
        self.semaphore = asyncio.Semaphore(limit)
        self.users = 0
        self.next_start = 0.0
        self.bucket = bucket

    def idle_from(self) -> float:
        """When forgetting this gate loses nothing (loop time)."""
        return max(self.next_start, self.bucket.full_at() if self.bucket else 0.0)


class Fetcher:
    """Fetches feeds over one pooled aiohttp session. `fetch` never raises for network or HTTP problems.

    `timeout_s` bounds the network time of a whole fetch (all redirect hops, connect, headers and body);
    time spent waiting for a concurrency slot is not counted, so a long queue for one host does not turn
    into timeouts. `per_host_rate` (requests/s, 0 = unlimited) with `per_host_burst` caps how fast
    requests to one host name start, however many feeds live there. `host_circuit` (None = off) opens a
    host's circuit; while it is open, fetches to it return error_kind "circuit_open" at once, with
    `retry_after_s` = the rest of the cool-down (`clock` measures it). `address_policy` decides which
    resolved addresses may be connected to;
    `allow_private_networks=True` switches the address check off (the URL check stays).
    """

    def __init__(
        self,
        *,
        user_agent: str,
        timeout_s: float = 30.0,
        max_bytes: int = 10 * 1024 * 1024,
        global_limit: int = 50,
        per_host_limit: int = 2,
        per_host_delay_s: float = 0.0,
        per_host_rate: float = 0.0,
        per_host_burst: int = 1,
        host_circuit: BreakerParams | None = None,
        clock: Callable[[], float] = time.monotonic,
        allow_private_networks: bool = False,
        max_redirects: int = 5,
        address_policy: AddressPolicy = is_public_address,
    ) -> None:
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._per_host_limit = per_host_limit
        self._per_host_delay_s = per_host_delay_s
        self._per_host_rate = per_host_rate
        self._per_host_burst = per_host_burst
        self._host_circuit = host_circuit
        self._circuits: dict[str, _HostCircuit] = {}
        self._clock = clock
        self._max_redirects = max_redirects
        self._global = asyncio.Semaphore(global_limit)
        self._gates: dict[str, _HostGate] = {}
        self._policy = None if allow_private_networks else address_policy
        self._user_agent = user_agent
        self._global_limit = global_limit
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        """The shared aiohttp session, made on first use (aiohttp binds it to the running event loop).

        aiohttp rather than httpx on this path: a conditional GET costs 0.4 ms of CPU through it against
        2.4 ms through httpx/httpcore/anyio (bench/fetch_cost.py), and the 304 poll is bound by that cost.
        """
        if self._http is None:
            resolver = GuardedResolver(self._policy) if self._policy is not None else None
            self._http = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self._global_limit, resolver=resolver, keepalive_timeout=_KEEPALIVE_S
                ),
                headers={"User-Agent": self._user_agent, "Accept-Encoding": _ACCEPT_ENCODING},
                # Bodies are decoded by BodyDecoder under the size cap; the deadline is asyncio.timeout.
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None),
                # No env proxies (they would bypass the address guard), no ~/.netrc credentials, and no
                # cookies shared between unrelated feeds.
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                max_line_size=_MAX_HEADER_LINE,
                max_field_size=_MAX_HEADER_LINE,
            )
        return self._http

    @property
    def user_agent(self) -> str:
        """The User-Agent every request sends (robots.txt rules are matched against it)."""
        return self._user_agent

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def fetch(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        accept: str = FEED_ACCEPT,
    ) -> FetchResult:
        started = time.monotonic()
        headers = {"Accept": accept}
        if etag and _sendable(etag):
            headers["If-None-Match"] = etag
        if last_modified and _sendable(last_modified):
            headers["If-Modified-Since"] = last_modified
        host = _host_of(url) if self._host_circuit is not None else None
        if host is None:
            return await self._fetch(url, headers, started)
        admission = self._admit(host)
        if admission == "refuse":
            return self._refusal(host, url)
        try:
            result = await self._fetch(url, headers, started)
        finally:
            if admission == "probe" and (circuit := self._circuits.get(host)) is not None:
                circuit.probing = False  # also when cancelled: the next fetch may probe instead
        self._record(host, host_failed(result.status, result.error_kind), probe=admission == "probe")
        return result

    async def _fetch(self, url: str, headers: dict[str, str], started: float) -> FetchResult:
        current = url
        redirects: list[str] = []
        permanent = True
        try:
            current = check_url(url)
            seen = {current}
            spent = 0.0
            while True:
                hop = await self._exchange(current, headers, self._timeout_s - spent)
                spent += hop.elapsed_s
                location = hop.headers.get("location")
                if hop.status not in _REDIRECTS or location is None:
                    break
                target = resolve_redirect(current, location)
                if target in seen:
                    raise FetchError("redirects", f"redirect loop: {current} -> {target}")
                if len(redirects) >= self._max_redirects:
                    raise FetchError("redirects", f"more than {self._max_redirects} redirects")
                permanent = permanent and hop.status in _PERMANENT_REDIRECTS
                redirects.append(target)
                seen.add(target)
                current = target
        except _FETCH_ERRORS as exc:
            kind, message = classify_error(exc)
            if kind == "timeout":
                message = f"no complete response within {self._timeout_s:g}s ({message})"
            return _failed(current, kind, message, started, tuple(redirects))
        ok = hop.status in _SUCCESS
        retry_after = hop.headers.get("retry-after")
        return FetchResult(
            status=hop.status,
            url=current,
            permanent_url=current if ok and permanent and redirects else None,
            body=hop.body,
            headers=hop.headers,
            etag=hop.headers.get("etag") if ok else None,
            last_modified=hop.headers.get("last-modified") if ok else None,
            retry_after_s=parse_retry_after(retry_after, datetime.now(UTC)) if retry_after else None,
            error=None if ok else f"HTTP {hop.status} {_reason(hop.status)}".rstrip(),
            error_kind=None if ok else "http",
            elapsed_s=time.monotonic() - started,
            redirects=tuple(redirects),
            wire_bytes=hop.wire_bytes,
            request_headers={
                "user-agent": self._user_agent,
                "accept-encoding": _ACCEPT_ENCODING,
                **{name.lower(): value for name, value in headers.items()},
            },
        )

    def _admit(self, host: str) -> Admission:
        circuit = self._circuits.get(host)
        if circuit is None:
            return "pass"
        admission = admit(
            circuit.state, now=self._clock(), retry_at=circuit.retry_at, probing=circuit.probing
        )
        circuit.probing = circuit.probing or admission == "probe"
        return admission

    def _refusal(self, host: str, url: str) -> FetchResult:
        """The result of a fetch the open circuit refused: no request was made."""
        wait = max(self._circuits[host].retry_at - self._clock(), 1.0)
        message = f"host {host} is failing; circuit open, next try in {wait:.0f}s"
        return _failed(url, "circuit_open", message, time.monotonic(), (), retry_after_s=wait)

    def _record(self, host: str, failed: bool, *, probe: bool) -> None:
        """Count a finished fetch; one that started before the circuit opened no longer counts."""
        assert self._host_circuit is not None
        circuit = self._circuits.get(host)
        if circuit is None:
            if not failed:
                return  # the common case: a healthy host needs no entry
            circuit = self._circuits[host] = _HostCircuit()
        if circuit.state.phase == "open" and not probe:
            return
        verdict = record(circuit.state, failed, self._host_circuit)
        circuit.state = verdict.state
        if verdict.cooldown_s is not None:
            circuit.retry_at = self._clock() + verdict.cooldown_s
        if verdict.transition == "opened":
            HOSTS_OPEN.inc()
            log.warning("host %s: failing; circuit open, one probe in %.0fs", host, verdict.cooldown_s)
        elif verdict.transition == "closed":
            HOSTS_OPEN.dec()
            log.info("host %s: probe succeeded; circuit closed", host)
        if verdict.transition is not None:
            HOST_CIRCUIT.labels(verdict.transition).inc()
        if circuit.state == BreakerState():
            del self._circuits[host]

    async def post_form(self, url: str, form: Mapping[str, str]) -> tuple[int, str]:
        """POST a form (a WebSub hub request) under the same address guard, host slots and deadline as a
        fetch; no redirects. Returns (status, the start of the reply) or (0, the error) without a reply."""
        try:
            target = self._target(check_url(url))
            async with (
                self._slot(target.host or ""),
                asyncio.timeout(self._timeout_s),
                self._session().post(target, data=dict(form), allow_redirects=False) as response,
            ):
                reply = b""
                async for chunk in response.content.iter_any():
                    reply += chunk
                    if len(reply) >= 1024:
                        break
        except _FETCH_ERRORS as exc:
            return 0, classify_error(exc)[1]
        return response.status, reply[:1024].decode("utf-8", "replace").strip()

    def _target(self, url: str) -> URL:
        """A checked URL as aiohttp takes it (already encoded by check_url), its IP literal judged."""
        target = URL(url, encoded=True)
        if self._policy is not None:
            refuse_literal(target.raw_host or "", self._policy)
        return target

    async def _exchange(self, url: str, headers: dict[str, str], budget_s: float) -> _Hop:
        """One request/response inside the concurrency slots and the remaining time budget."""
        target = self._target(url)
        async with self._slot(target.host or ""):
            started = time.monotonic()
            async with asyncio.timeout(budget_s):
                async with self._session().get(target, headers=headers, allow_redirects=False) as response:
                    if response.status == 200:
                        body, wire = await self._read_body(response)
                    else:
                        body, wire = None, 0
                        await _drain(response)
            return _Hop(response.status, _header_dict(response), body, time.monotonic() - started, wire)

    async def _read_body(self, response: aiohttp.ClientResponse) -> tuple[bytes, int]:
        """The decoded body and its size on the wire."""
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise FetchError("too_large", f"Content-Length {declared} exceeds {self._max_bytes} bytes")
        decoder = BodyDecoder(response.headers.get("content-encoding"), self._max_bytes)
        async for chunk in response.content.iter_any():
            decoder.feed(chunk)
        return decoder.finish(), decoder.raw_bytes

    @asynccontextmanager
    async def _slot(self, host: str) -> AsyncIterator[None]:
        """Per-host slot (with spacing and rate limit between request starts), then a global slot.

        The host slot is taken first so requests queued for one busy host never sit on global slots. Start
        times are reserved before the global slot is taken, so spacing and rate are exact unless the global
        limit is saturated (then a delayed request may start closer to the next one; never earlier).
        """
        gate = self._gates.get(host)
        if gate is None:
            loop_now = asyncio.get_running_loop().time()
            bucket = (
                TokenBucket(self._per_host_rate, self._per_host_burst, loop_now)
                if self._per_host_rate > 0
                else None
            )
            gate = self._gates[host] = _HostGate(self._per_host_limit, bucket)
        gate.users += 1
        try:
            async with gate.semaphore:
                if self._per_host_delay_s > 0 or gate.bucket is not None:
                    now = asyncio.get_running_loop().time()
                    start = gate.bucket.reserve(now) if gate.bucket is not None else now
                    start = max(start, gate.next_start)
                    gate.next_start = start + self._per_host_delay_s
                    if start > now:
                        await asyncio.sleep(start - now)
                async with self._global:
                    yield
        finally:
            gate.users -= 1
            self._retire(host, gate)

    def _retire(self, host: str, gate: _HostGate) -> None:
        """Forget an idle host's gate, once its spacing window has passed, so memory doesn't grow with hosts."""
        if gate.users or self._gates.get(host) is not gate:
            return
        loop = asyncio.get_running_loop()
        idle_from = gate.idle_from()
        if idle_from <= loop.time():
            del self._gates[host]
        else:
            loop.call_at(idle_from, self._retire, host, gate)


def _host_of(url: str) -> str | None:
    try:
        return URL(url, encoded=True).host or None
    except ValueError:
        return None


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _header_dict(response: aiohttp.ClientResponse) -> dict[str, str]:
    """Response headers with lower-cased names; a repeated header's values joined with ", " (RFC 9110 5.3)."""
    headers: dict[str, str] = {}
    for name, value in response.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def _failed(
    url: str,
    kind: str,
    message: str,
    started: float,
    redirects: tuple[str, ...],
    retry_after_s: float | None = None,
) -> FetchResult:
    """A fetch that got no final HTTP response."""
    return FetchResult(
        status=0,
        url=url,
        permanent_url=None,
        body=None,
        headers={},
        etag=None,
        last_modified=None,
        retry_after_s=retry_after_s,
        error=message,
        error_kind=kind,
        elapsed_s=time.monotonic() - started,
        redirects=redirects,
    )


async def _drain(response: aiohttp.ClientResponse) -> None:
    """Read a small unwanted body so the connection goes back to the pool; give up on large ones."""
    received = 0
    async for chunk in response.content.iter_any():
        received += len(chunk)
        if received > _DRAIN_LIMIT:
            return
