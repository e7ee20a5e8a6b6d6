"""The fetcher against a real HTTP server, plus its pure decision helpers."""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import socket
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import brotli
import pytest

from host.net.fetcher import (
    FEED_ACCEPT,
    BodyDecoder,
    Fetcher,
    FetchError,
    parse_retry_after,
    resolve_redirect,
)
from host.net.netguard import AddressPolicy, BlockedURLError, IPAddress
from tests.feedserver import FeedServer, Route, self_signed_tls

UA = "feedeater-test/1.0 (+https://example.invalid/bot)"
LAST_MODIFIED = "Sat, 07 Sep 2002 09:42:31 GMT"
FEED = b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title></channel></rss>'
MIB = 1024 * 1024


def fetcher(**options: Any) -> Fetcher:
    """A fetcher that may talk to the loopback test server unless a test says otherwise."""
    options.setdefault("allow_private_networks", True)
    options.setdefault("timeout_s", 10.0)
    return Fetcher(user_agent=UA, **options)


def zeros(total: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    block = b"\0" * chunk
    for _ in range(total // chunk):
        yield block


async def finished(server: FeedServer, path: str) -> None:
    """Wait until the server is done with every request to `path` (the client may have hung up)."""
    for record in server.requests_to(path):
        assert await asyncio.to_thread(record.done.wait, 10)


# --- conditional GET, headers ---------------------------------------------------------------------------


async def test_200_then_conditional_get_gives_304(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=FEED, etag='"v1"', last_modified=LAST_MODIFIED))
    async with fetcher() as f:
        first = await f.fetch(feed_server.url("/feed"))
        second = await f.fetch(feed_server.url("/feed"), etag=first.etag, last_modified=first.last_modified)

    assert (first.status, first.body, first.error, first.error_kind) == (200, FEED, None, None)
    assert (first.etag, first.last_modified) == ('"v1"', LAST_MODIFIED)
    assert first.headers["etag"] == '"v1"'
    assert (second.status, second.body, second.error) == (304, None, None)
    assert second.etag == '"v1"'

    sent_first, sent_second = (r.headers for r in feed_server.requests_to("/feed"))
    assert sent_first["user-agent"] == UA
    assert sent_first["accept"] == FEED_ACCEPT
    assert sent_first["accept-encoding"] == "gzip, deflate, br"
    assert "if-none-match" not in sent_first and "if-modified-since" not in sent_first
    assert sent_second["if-none-match"] == '"v1"'
    assert sent_second["if-modified-since"] == LAST_MODIFIED


async def test_if_modified_since_alone_gives_304(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=FEED, last_modified=LAST_MODIFIED))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"), last_modified=LAST_MODIFIED)
    assert (result.status, result.body, result.etag) == (304, None, None)


@pytest.mark.parametrize("etag", ['"caf\u00e9"', '"v1"\r\nX-Injected: 1'])
async def test_unsendable_validators_are_dropped(feed_server: FeedServer, etag: str) -> None:
    feed_server.route("/feed", Route(body=FEED, etag='"v1"'))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"), etag=etag)
    assert (result.status, result.body) == (200, FEED)
    sent = feed_server.requests_to("/feed")[0].headers
    assert "if-none-match" not in sent and "x-injected" not in sent


async def test_custom_accept_and_no_cookies_kept(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=FEED, headers={"Set-Cookie": "session=abc; Path=/"}))
    async with fetcher() as f:
        await f.fetch(feed_server.url("/feed"), accept="text/html")
        await f.fetch(feed_server.url("/feed"))
    first, second = feed_server.requests_to("/feed")
    assert first.headers["accept"] == "text/html"
    assert "cookie" not in second.headers


# --- redirects ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "permanent"), [(301, True), (308, True), (302, False), (307, False), (303, False)]
)
async def test_single_redirect(feed_server: FeedServer, status: int, permanent: bool) -> None:
    feed_server.route("/old", Route(status=status, location="/feed", body=b"moved"))
    feed_server.route("/feed", Route(body=FEED))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/old"))
    assert (result.status, result.body) == (200, FEED)
    assert result.url == feed_server.url("/feed")
    assert result.redirects == (feed_server.url("/feed"),)
    assert result.permanent_url == (feed_server.url("/feed") if permanent else None)


async def test_permanent_chain_to_another_host_by_absolute_url(feed_server: FeedServer) -> None:
    final = feed_server.url("/feed", host="localhost")
    feed_server.route("/a", Route(status=301, location="/b"))
    feed_server.route("/b", Route(status=308, location=final))
    feed_server.route("/feed", Route(body=FEED))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/a"))
    assert (result.status, result.url, result.permanent_url) == (200, final, final)
    assert result.redirects == (feed_server.url("/b"), final)
    assert [r.host for r in feed_server.requests] == ["127.0.0.1", "127.0.0.1", "localhost"]


@pytest.mark.parametrize("chain", [(301, 302), (302, 301), (308, 307, 301)])
async def test_any_temporary_hop_means_no_permanent_url(
    feed_server: FeedServer, chain: tuple[int, ...]
) -> None:
    for i, status in enumerate(chain):
        feed_server.route(f"/{i}", Route(status=status, location=f"/{i + 1}"))
    feed_server.route(f"/{len(chain)}", Route(body=FEED))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/0"))
    assert (result.status, result.permanent_url) == (200, None)
    assert len(result.redirects) == len(chain)


async def test_permanent_redirect_to_an_error_is_not_stored(feed_server: FeedServer) -> None:
    feed_server.route("/old", Route(status=301, location="/missing"))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/old"))
    assert (result.status, result.error_kind, result.permanent_url) == (404, "http", None)
    assert result.url == feed_server.url("/missing")


async def test_conditional_headers_follow_the_redirect(feed_server: FeedServer) -> None:
    feed_server.route("/old", Route(status=301, location="/feed"))
    feed_server.route("/feed", Route(body=FEED, etag='"v2"'))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/old"), etag='"v2"')
    assert (result.status, result.permanent_url) == (304, feed_server.url("/feed"))
    assert feed_server.requests_to("/feed")[0].headers["if-none-match"] == '"v2"'


async def test_redirect_loop(feed_server: FeedServer) -> None:
    feed_server.route("/a", Route(status=302, location="/b"))
    feed_server.route("/b", Route(status=301, location="/a"))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/a"))
    assert (result.status, result.error_kind, result.body) == (0, "redirects", None)
    assert "loop" in (result.error or "")
    assert len(feed_server.requests) == 2


@pytest.mark.parametrize(("hops", "ok"), [(5, True), (6, False)])
async def test_max_redirects(feed_server: FeedServer, hops: int, ok: bool) -> None:
    for i in range(hops):
        feed_server.route(f"/{i}", Route(status=302, location=f"/{i + 1}"))
    feed_server.route(f"/{hops}", Route(body=FEED))
    async with fetcher(max_redirects=5) as f:
        result = await f.fetch(feed_server.url("/0"))
    if ok:
        assert (result.status, result.body) == (200, FEED)
    else:
        assert (result.status, result.error_kind) == (0, "redirects")
        assert len(feed_server.requests) == 6  # the sixth redirect is not followed


async def test_redirect_without_location_is_an_http_error(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(status=302))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.error_kind, result.redirects) == (302, "http", ())


def test_resolve_redirect() -> None:
    assert resolve_redirect("http://example.com/a/b", "c") == "http://example.com/a/c"
    assert resolve_redirect("http://example.com/a/b", "/c d") == "http://example.com/c%20d"
    assert resolve_redirect("https://example.com/a", "//other.example/x") == "https://other.example/x"
    assert resolve_redirect("https://example.com/a", "HTTP://Other.Example:80/") == "http://other.example/"
    with pytest.raises(BlockedURLError):
        resolve_redirect("https://example.com/a", "file:///etc/passwd")


# --- statuses and Retry-After ---------------------------------------------------------------------------


async def test_gone(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(status=410, body=b"gone", etag='"x"'))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.error_kind, result.body, result.etag) == (410, "http", None, None)
    assert result.error == "HTTP 410 Gone"


async def test_429_with_retry_after_seconds(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(status=429, retry_after="120"))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.error_kind, result.retry_after_s) == (429, "http", 120.0)


async def test_503_with_retry_after_date(feed_server: FeedServer) -> None:
    when = datetime.now(UTC) + timedelta(seconds=90)
    feed_server.route("/feed", Route(status=503, retry_after=format_datetime(when, usegmt=True)))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.error_kind) == (503, "http")
    assert result.retry_after_s is not None and 80 <= result.retry_after_s <= 90


async def test_503_without_retry_after(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(status=503, body=b"busy"))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.retry_after_s, result.error) == (503, None, "HTTP 503 Service Unavailable")


def test_parse_retry_after() -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after(None, now) is None
    assert parse_retry_after("0", now) == 0.0
    assert parse_retry_after(" 3600 ", now) == 3600.0
    assert parse_retry_after("Wed, 01 May 2024 12:02:00 GMT", now) == 120.0
    assert parse_retry_after("Wed, 01 May 2024 11:00:00 GMT", now) == 0.0  # in the past
    assert parse_retry_after("Wed, 01 May 2024 12:00:30 -0000", now) == 30.0
    assert parse_retry_after("Wed, 01 May 2024 12:00:30 GMT", now.replace(tzinfo=None)) == 30.0
    for junk in ("soon", "-5", "1.5", "²", ""):
        assert parse_retry_after(junk, now) is None


# --- bodies: encodings and size caps --------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
async def test_compressed_bodies_are_decoded(feed_server: FeedServer, encoding: str) -> None:
    body = FEED * 500
    feed_server.route("/feed", Route(body=body, encoding=encoding))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.body) == (200, body)
    assert result.headers["content-encoding"] == encoding


async def test_raw_deflate_is_decoded(feed_server: FeedServer) -> None:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw = packer.compress(FEED) + packer.flush()
    feed_server.route("/feed", Route(body=raw, headers={"Content-Encoding": "deflate"}))
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert result.body == FEED


async def test_streamed_body_over_the_cap_is_abandoned_early(feed_server: FeedServer) -> None:
    total = 200 * MIB
    feed_server.route("/big", Route(body=lambda: zeros(total)))  # chunked, no Content-Length
    async with fetcher(max_bytes=MIB) as f:
        result = await f.fetch(feed_server.url("/big"))
        assert (result.status, result.error_kind, result.body) == (0, "too_large", None)
        await finished(feed_server, "/big")
    record = feed_server.requests_to("/big")[0]
    assert record.aborted and record.bytes_sent < total // 4


async def test_huge_content_length_is_refused_before_reading(feed_server: FeedServer) -> None:
    total = 200 * MIB
    feed_server.route("/big", Route(body=lambda: zeros(total), content_length=10**12))
    async with fetcher(max_bytes=MIB) as f:
        result = await f.fetch(feed_server.url("/big"))
        assert (result.status, result.error_kind) == (0, "too_large")
        assert "Content-Length" in (result.error or "")
        await finished(feed_server, "/big")
    assert feed_server.requests_to("/big")[0].bytes_sent < total // 4


async def test_content_length_lying_low_is_enforced_by_framing(feed_server: FeedServer) -> None:
    """The bytes past Content-Length never become part of the body. When they arrive in the same read as
    the response, aiohttp rejects the response as malformed (a network error, its message kept short)."""
    feed_server.route("/feed", Route(body=b"0123456789" * 1000, content_length=10))
    outcomes = set()
    async with fetcher() as f:
        for _ in range(5):
            result = await f.fetch(feed_server.url("/feed"))
            if result.status == 200:
                assert result.body == b"0123456789"
            else:
                assert (result.status, result.error_kind, result.body) == (0, "network", None)
                assert result.error is not None and len(result.error) <= 300
            outcomes.add(result.status)
    assert outcomes <= {0, 200}


@pytest.mark.parametrize(
    "route",
    [
        Route(body=FEED, content_length=len(FEED) + 100),  # claims more than it sends, then hangs up
        Route(body=FEED, truncate_at=10),
        Route(drop=True),
    ],
    ids=["content-length-lying-high", "truncated", "dropped"],
)
async def test_broken_responses_are_network_errors(feed_server: FeedServer, route: Route) -> None:
    feed_server.route("/feed", route)
    async with fetcher() as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.error_kind, result.body, result.etag) == (0, "network", None, None)
    assert result.error


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    zeros_50mb = b"\0" * (50 * MIB)
    return {"gzip": gzip.compress(zeros_50mb, 6), "br": brotli.compress(zeros_50mb, quality=5)}


@pytest.mark.parametrize("encoding", ["gzip", "br"])
async def test_compression_bomb_stops_at_the_cap(
    feed_server: FeedServer, bombs: dict[str, bytes], encoding: str
) -> None:
    bomb = bombs[encoding]
    assert len(bomb) < MIB  # the raw size alone would pass the cap
    feed_server.route("/bomb", Route(body=bomb, headers={"Content-Encoding": encoding}))
    async with fetcher(max_bytes=MIB) as f:
        result = await f.fetch(feed_server.url("/bomb"))
    assert (result.status, result.error_kind, result.body) == (0, "too_large", None)


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_body_decoder_never_inflates_a_bomb_past_the_cap(bombs: dict[str, bytes], encoding: str) -> None:
    decoder = BodyDecoder(encoding, max_bytes=MIB)
    tracemalloc.start()
    try:
        with pytest.raises(FetchError) as caught:
            decoder.feed(bombs[encoding])  # one chunk that inflates to 50 MiB
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.kind == "too_large"
    assert peak < 4 * MIB


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "deflate, gzip"])
def test_body_decoder_byte_by_byte(encoding: str) -> None:
    body = FEED * 50
    packed = body
    for coding in encoding.split(", "):
        packed = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}[coding](packed)
    decoder = BodyDecoder(encoding, max_bytes=len(body))
    for i in range(len(packed)):
        decoder.feed(packed[i : i + 1])
    assert decoder.finish() == body


def test_body_decoder_caps_decoded_and_raw_size() -> None:
    body = FEED * 50
    decoder = BodyDecoder("gzip", max_bytes=len(body) - 1)
    with pytest.raises(FetchError) as caught:
        decoder.feed(gzip.compress(body))
    assert caught.value.kind == "too_large"
    plain = BodyDecoder(None, max_bytes=10)
    plain.feed(b"0123456789")
    with pytest.raises(FetchError):
        plain.feed(b"x")


@pytest.mark.parametrize(
    ("encoding", "data"),
    [("gzip", gzip.compress(FEED)[:-12]), ("gzip", b"not gzip at all"), ("br", brotli.compress(FEED)[:-3])],
    ids=["truncated-gzip", "not-gzip", "truncated-br"],
)
def test_body_decoder_rejects_corrupt_streams(encoding: str, data: bytes) -> None:
    decoder = BodyDecoder(encoding, max_bytes=MIB)
    with pytest.raises(FetchError) as caught:
        decoder.feed(data)
        decoder.finish()
    assert caught.value.kind == "network"


def test_body_decoder_identity_empty_and_unknown() -> None:
    assert BodyDecoder("identity", max_bytes=10).finish() == b""
    assert BodyDecoder("gzip", max_bytes=10).finish() == b""  # empty body labelled gzip
    with pytest.raises(FetchError, match="zstd"):
        BodyDecoder("zstd", max_bytes=10)


# --- timeouts and network errors ------------------------------------------------------------------------


async def test_trickling_server_hits_the_overall_deadline(feed_server: FeedServer) -> None:
    # One byte every 50 ms never trips a per-read timeout; only the overall deadline stops it.
    feed_server.route("/slow", Route(body=FEED, trickle=(1, 0.05)))
    async with fetcher(timeout_s=0.5) as f:
        result = await f.fetch(feed_server.url("/slow"))
    # The whole body would take len(FEED) × 50 ms; a timeout (not a 200) proves the overall deadline.
    assert len(FEED) * 0.05 > 8 * 0.5
    assert (result.status, result.error_kind, result.body) == (0, "timeout", None)


async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once the socket is closed
    async with fetcher() as f:
        result = await f.fetch(f"http://127.0.0.1:{port}/feed")
    assert (result.status, result.error_kind) == (0, "network")
    assert "refused" in (result.error or "")


@pytest.mark.parametrize("allow_private", [True, False])
async def test_dns_failure(allow_private: bool) -> None:
    async with fetcher(allow_private_networks=allow_private) as f:
        result = await f.fetch("http://no-such-host.invalid/feed")
    assert (result.status, result.error_kind) == (0, "dns")
    assert result.url == "http://no-such-host.invalid/feed"


async def test_untrusted_certificate_is_a_tls_error(tmp_path: Path) -> None:
    server_tls, _ = self_signed_tls(tmp_path)
    with FeedServer(tls=server_tls) as server:
        server.route("/feed", Route(body=FEED))
        async with fetcher() as f:
            result = await f.fetch(server.url("/feed", host="localhost"))
    assert (result.status, result.error_kind) == (0, "tls")
    assert "CERTIFICATE_VERIFY_FAILED" in (result.error or "")


# --- politeness: concurrency and spacing ----------------------------------------------------------------


async def test_per_host_limit_while_other_hosts_proceed(feed_server: FeedServer) -> None:
    # Answers wait until both hosts have two requests in flight (had one host held up the other, that
    # would never happen: 503s); the delay then gives a third request per host time to show up.
    feed_server.route(
        "/slow", Route(body=FEED, delay_s=0.25, hold_until=lambda: feed_server.peak_concurrency() >= 4)
    )
    urls = [feed_server.url("/slow", host=h) for h in ("127.0.0.1", "localhost") for _ in range(6)]
    async with fetcher(per_host_limit=2) as f:
        results = await asyncio.gather(*(f.fetch(u) for u in urls))
        assert f._gates == {}  # idle hosts leave nothing behind
    assert all(r.status == 200 for r in results)
    assert feed_server.peak_concurrency("127.0.0.1") == 2
    assert feed_server.peak_concurrency("localhost") == 2
    assert feed_server.peak_concurrency() == 4  # one busy host does not hold up the other


async def test_global_limit(feed_server: FeedServer) -> None:
    # Three in flight before any answer (a fixed delay alone left them apart on a busy machine).
    feed_server.route(
        "/slow", Route(body=FEED, delay_s=0.2, hold_until=lambda: feed_server.peak_concurrency() >= 3)
    )
    urls = [feed_server.url("/slow", host=h) for h in ("127.0.0.1", "localhost") for _ in range(4)]
    async with fetcher(global_limit=3, per_host_limit=2) as f:
        results = await asyncio.gather(*(f.fetch(u) for u in urls))
    assert all(r.status == 200 for r in results)
    assert feed_server.peak_concurrency() == 3


async def test_per_host_spacing(feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=FEED))
    spaced = [feed_server.url("/feed") for _ in range(4)]
    async with fetcher(per_host_delay_s=0.3) as f:
        sent = time.monotonic()
        *results, other = await asyncio.gather(
            *(f.fetch(u) for u in [*spaced, feed_server.url("/feed", host="localhost")])
        )
        # Nothing is left behind once the last spacing window (0.3 s after the last start) has passed.
        await asyncio.sleep(0.35)
        assert f._gates == {}
    assert all(r.status == 200 for r in [*results, other])
    starts = sorted(r.received_at for r in feed_server.requests if r.host == "127.0.0.1")
    # Spacing is per host: the localhost request did not queue behind 127.0.0.1's spaced requests.
    (other_start,) = [r.received_at for r in feed_server.requests if r.host == "localhost"]
    assert other_start < starts[-1]
    # The k-th request to 127.0.0.1 reached the server no sooner than k spacings after the fetches began.
    # (A lower bound only: under load a request may arrive late, which shortens the gap after it.)
    assert len(starts) == 4
    assert all(start - sent >= k * 0.3 - 0.01 for k, start in enumerate(starts)), [s - sent for s in starts]


# --- the private-network guard --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "[::ffff:127.0.0.1]"],
)
async def test_private_addresses_are_refused_before_connecting(feed_server: FeedServer, host: str) -> None:
    feed_server.route("/feed", Route(body=FEED))
    async with fetcher(allow_private_networks=False) as f:
        result = await f.fetch(feed_server.url("/feed", host=host))
    assert (result.status, result.error_kind, result.body) == (0, "blocked", None)
    assert feed_server.requests == []


@pytest.mark.parametrize("allow_private", [True, False])
async def test_scheme_check_always_applies(allow_private: bool) -> None:
    async with fetcher(allow_private_networks=allow_private) as f:
        result = await f.fetch("file:///etc/passwd")
    assert (result.status, result.error_kind) == (0, "blocked")


def only(address: str) -> AddressPolicy:
    """An address policy that treats one loopback address as if it were public, and nothing else."""
    allowed = ipaddress.ip_address(address)

    def policy(ip: IPAddress) -> bool:
        return ip == allowed

    return policy


async def test_redirect_to_a_private_address_is_refused(feed_server: FeedServer) -> None:
    with FeedServer(host="127.0.0.2") as internal:
        internal.route("/admin", Route(body=b"secret"))
        feed_server.route("/feed", Route(status=302, location=internal.url("/admin")))
        feed_server.route("/ok", Route(body=FEED))
        async with fetcher(allow_private_networks=False, address_policy=only("127.0.0.1")) as f:
            allowed = await f.fetch(feed_server.url("/ok"))
            result = await f.fetch(feed_server.url("/feed"))
        assert allowed.status == 200  # the policy really admits the first hop
        assert (result.status, result.error_kind, result.body) == (0, "blocked", None)
        assert "127.0.0.2" in (result.error or "")
        assert result.url == internal.url("/admin")  # attempted, refused at connect time
        assert internal.requests == []


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://127.0.0.3/",
        "http://[::1]/",
        "file:///etc/passwd",
    ],
)
async def test_redirects_into_the_private_network_are_refused(feed_server: FeedServer, location: str) -> None:
    feed_server.route("/feed", Route(status=301, location=location))
    async with fetcher(allow_private_networks=False, address_policy=only("127.0.0.1")) as f:
        result = await f.fetch(feed_server.url("/feed"))
    assert (result.status, result.error_kind, result.permanent_url) == (0, "blocked", None)
    assert len(feed_server.requests) == 1
