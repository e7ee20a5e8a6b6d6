"""A fast local HTTP feed farm for load tests: N distinct feed URLs over H loopback host addresses.

Why: benchmarks of the poller need thousands of real HTTP feeds that answer conditional requests like a
well-behaved server, spread over many hosts so per-host politeness limits matter, and a server that is
never the bottleneck. So the farm serves prebuilt bytes from a raw `asyncio.Protocol` (HTTP/1.1,
keep-alive, pipelining, GET only) in its own process, listening on 127.0.0.2 … 127.0.0.(H+1) (all of
127/8 is loopback on Linux) on one port.

Feed i is served at ``http://<host i mod H>:<port>/f/<i>`` with the body of corpus file ``i mod len(corpus)``
(the real-world corpus in ``../shared/fixtures/realworld``, minus the files whose manifest format is html,
unknown or json-invalid). Every feed has a stable ETag and Last-Modified and answers 304 to a matching
If-None-Match (which takes precedence) or an If-Modified-Since not older than its Last-Modified.

Optional modes, each a fraction of the feeds chosen by a seeded shuffle (so runs are reproducible):

* ``--growing F``: the feed gains one new entry, dated now, on every request (a synthetic RSS 2.0 document holding
  the newest 10 entries; its ETag changes each time, so it never answers 304);
* ``--corpus-growing F``: the feed's corpus file gains one new item, dated now, on every request (inserted
  before its first item or entry; the one of the previous request is gone, so a document holds its corpus
  items plus one); its ETag changes each time. Every poll is a "changed" one: one new item beside
  unchanged real-world ones (JSON and UTF-16 files, where no item can be inserted as ASCII, stay normal);
* ``--errors F``: answers 500;
* ``--slow F``: answers after ``--slow-s`` seconds (later requests on the same connection wait behind it);
* ``--ratelimited F``: answers 429 with ``Retry-After: --retry-after-s``;
* ``--no-validators F``: sends neither ETag nor Last-Modified, so every poll gets the same full body
  (many real servers behave so; it measures the cost of re-parsing unchanged feeds).

``--gzip`` serves gzip bodies to clients that accept them. ``GET /_farm/stats`` (on any farm address)
returns request counters as JSON. The farm only binds loopback addresses and exits by itself after
``--max-lifetime-s`` seconds, on SIGTERM/SIGINT, or when its parent process goes away.

Library use::

    with FeedFarm(FarmConfig(feeds=2000, hosts=100)) as farm:
        farm.urls          # the N feed URLs
        farm.stats()       # {"requests": ..., "status": {"200": ..., "304": ...}, ...}

Script use: ``python bench/feedfarm.py --feeds 2000 --hosts 100 [--urls-out urls.txt] [--opml subs.opml]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import email.utils
import gzip
import hashlib
import ipaddress
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from xml.sax.saxutils import escape, quoteattr

SKIP_FORMATS = frozenset({"html", "unknown", "json-invalid"})
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "realworld"
FIRST_HOST = ipaddress.IPv4Address("127.0.0.2")
MAX_HOSTS = 1000  # one listening socket per address
BASE_LAST_MODIFIED = 1_772_452_800  # 2026-03-02 12:00:00 UTC; feed i is i minutes older
GROWING_WINDOW = 10  # entries in a growing feed's document
MAX_HEADER_BYTES = 64 * 1024
IDLE_CLOSE_S = 120.0  # keep-alive connections idle this long are closed
MODES = ("normal", "growing", "corpus_growing", "error", "slow", "ratelimited", "no_validators")
# Where a corpus-growing feed's new item goes: before its first item/entry element (any prefix).
_FIRST_ITEM = re.compile(rb"<((?:[\w.-]+:)?)(item|entry)[\s>/]")


# -- configuration ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FarmConfig:
    """What the farm serves; fractions are of `feeds` and must add up to at most 1."""

    feeds: int = 2000
    hosts: int = 100
    port: int = 0  # 0 = a free port
    corpus: Path = field(default_factory=lambda: Path(os.environ.get("FEEDFARM_CORPUS", DEFAULT_CORPUS)))
    max_lifetime_s: float = 3600.0
    growing: float = 0.0
    corpus_growing: float = 0.0
    errors: float = 0.0
    slow: float = 0.0
    slow_s: float = 2.0
    ratelimited: float = 0.0
    retry_after_s: int = 120
    no_validators: float = 0.0
    gzip: bool = False
    seed: int = 1

    def validate(self) -> None:
        if self.feeds < 1:
            raise ValueError("feeds must be >= 1")
        if not 1 <= self.hosts <= MAX_HOSTS:
            raise ValueError(f"hosts must be in 1..{MAX_HOSTS}")
        fractions = (
            self.growing,
            self.corpus_growing,
            self.errors,
            self.slow,
            self.ratelimited,
            self.no_validators,
        )
        if any(f < 0 for f in fractions) or sum(fractions) > 1:
            raise ValueError("mode fractions must be >= 0 and add up to at most 1")
        if not 0 < self.max_lifetime_s <= 7 * 24 * 3600:
            raise ValueError("max_lifetime_s must be in (0, 1 week]")

    def argv(self) -> list[str]:
        """The command-line flags that rebuild this config in the farm process."""
        out = [
            f"--feeds={self.feeds}",
            f"--hosts={self.hosts}",
            f"--port={self.port}",
            f"--corpus={self.corpus}",
            f"--max-lifetime-s={self.max_lifetime_s}",
            f"--growing={self.growing}",
            f"--corpus-growing={self.corpus_growing}",
            f"--errors={self.errors}",
            f"--slow={self.slow}",
            f"--slow-s={self.slow_s}",
            f"--ratelimited={self.ratelimited}",
            f"--retry-after-s={self.retry_after_s}",
            f"--no-validators={self.no_validators}",
            f"--seed={self.seed}",
        ]
        return [*out, "--gzip"] if self.gzip else out


def host_address(i: int, hosts: int) -> str:
    """The loopback address that serves feed i."""
    return str(FIRST_HOST + (i % hosts))


def feed_url(i: int, hosts: int, port: int) -> str:
    return f"http://{host_address(i, hosts)}:{port}/f/{i}"


def assign_modes(config: FarmConfig) -> list[str]:
    """Mode of every feed: a seeded shuffle, then the first fractions of it get the special modes."""
    order = list(range(config.feeds))
    random.Random(config.seed).shuffle(order)
    modes = ["normal"] * config.feeds
    start = 0
    for mode, fraction in (
        ("growing", config.growing),
        ("corpus_growing", config.corpus_growing),
        ("error", config.errors),
        ("slow", config.slow),
        ("ratelimited", config.ratelimited),
        ("no_validators", config.no_validators),
    ):
        count = round(fraction * config.feeds)
        for i in order[start : start + count]:
            modes[i] = mode
        start += count
    return modes


# -- corpus ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CorpusFile:
    path: str
    body: bytes
    content_type: str
    items: int


def content_type_for(fmt: str) -> str:
    if fmt.startswith("json") or fmt == "rss-in-json":
        return "application/feed+json" if fmt.startswith("jsonfeed") else "application/json"
    if fmt.startswith("atom"):
        return "application/atom+xml; charset=utf-8"
    if fmt == "rss1.0":
        return "application/rdf+xml"
    return "application/rss+xml"


def load_corpus(root: Path) -> list[CorpusFile]:
    """The servable feeds of the corpus, in manifest order (so feed i maps to the same file every run)."""
    manifest = json.loads((root / "manifest.json").read_text())
    out = []
    for entry in manifest["files"]:
        if entry.get("format") in SKIP_FORMATS:
            continue
        body = (root / entry["path"]).read_bytes()
        out.append(
            CorpusFile(entry["path"], body, content_type_for(entry["format"]), int(entry["items"] or 0))
        )
    if not out:
        raise ValueError(f"no servable feeds in {root}")
    return out


def corpus_index(i: int, corpus_len: int) -> int:
    return i % corpus_len


# -- HTTP ------------------------------------------------------------------------------------------
_REASONS = {
    200: "OK",
    304: "Not Modified",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


def _head(status: int, headers: list[tuple[str, str]], content_length: int | None) -> bytes:
    """Status line and headers; a 304 carries no Content-Length."""
    lines = [f"HTTP/1.1 {status} {_REASONS[status]}"]
    lines += [f"{k}: {v}" for k, v in headers]
    if content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _response(status: int, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    return _head(status, headers, None if status == 304 else len(body)) + body


def _etag_matches(header: str, etag: str) -> bool:
    """Weak comparison (RFC 9110 §13.1.2), as used for If-None-Match."""
    want = etag.removeprefix("W/")
    for token in header.split(","):
        token = token.strip()
        if token == "*" or token.removeprefix("W/") == want:
            return True
    return False


def _not_modified_since(header: str, last_modified_ts: int) -> bool:
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return False
    return when.timestamp() >= last_modified_ts


@dataclass(slots=True)
class _Feed:
    """Prebuilt responses of one feed."""

    mode: str
    etag: str
    last_modified: str
    last_modified_ts: int
    head_200: bytes
    head_200_gz: bytes | None
    body: bytes
    body_gz: bytes | None
    resp_304: bytes
    content_type: str
    version: int = 0  # growing feeds: entries added so far
    times: list[int] = field(default_factory=list)  # growing feeds: publication time of the newest entries


class Farm:
    """The server side: prebuilt responses and the request handler (runs in the farm process)."""

    def __init__(self, config: FarmConfig, corpus: list[CorpusFile]) -> None:
        self.config = config
        self.started = time.monotonic()
        self.counters: dict[str, int] = {
            "requests": 0,
            "connections": 0,
            "bytes_sent": 0,
            "stats_requests": 0,
        }
        self.status: dict[int, int] = {}
        self.by_mode: dict[str, int] = dict.fromkeys(MODES, 0)
        gz = [gzip.compress(c.body, 6, mtime=0) for c in corpus] if config.gzip else None
        self.feeds: list[_Feed] = []
        for i, mode in enumerate(assign_modes(config)):
            k = corpus_index(i, len(corpus))
            cf = corpus[k]
            digest = hashlib.sha256(cf.body).hexdigest()[:12]
            etag = f'"{i:x}-{digest}"'
            ts = BASE_LAST_MODIFIED - 60 * i
            lm = email.utils.formatdate(ts, usegmt=True)
            common = [] if mode == "no_validators" else [("ETag", etag), ("Last-Modified", lm)]
            head = _head(200, [("Content-Type", cf.content_type), *common], len(cf.body))
            head_gz = None
            if gz is not None:
                gz_headers = [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
                head_gz = _head(200, [("Content-Type", cf.content_type), *gz_headers, *common], len(gz[k]))
            self.feeds.append(
                _Feed(
                    mode=mode,
                    etag=etag,
                    last_modified=lm,
                    last_modified_ts=ts,
                    head_200=head,
                    head_200_gz=head_gz,
                    body=cf.body,
                    body_gz=gz[k] if gz is not None else None,
                    resp_304=_response(304, common),
                    content_type=cf.content_type,
                )
            )
        self.resp_500 = _response(500, [("Content-Type", "text/plain")], b"farm: error mode\n")
        self.resp_429 = _response(
            429, [("Content-Type", "text/plain"), ("Retry-After", str(config.retry_after_s))], b"slow down\n"
        )
        self.resp_404 = _response(404, [("Content-Type", "text/plain")], b"no such feed\n")
        self.resp_405 = _response(405, [("Allow", "GET"), ("Content-Type", "text/plain")], b"GET only\n")

    def count(self, status: int, sent: int) -> None:
        self.status[status] = self.status.get(status, 0) + 1
        self.counters["bytes_sent"] += sent

    def stats(self) -> dict[str, Any]:
        return {
            **self.counters,
            "status": {str(k): v for k, v in sorted(self.status.items())},
            "by_mode": self.by_mode,
            "uptime_s": round(time.monotonic() - self.started, 3),
        }

    def handle(self, method: bytes, target: bytes, headers: dict[bytes, bytes]) -> tuple[list[bytes], float]:
        """The response chunks for one request, and how long to hold them back (slow mode)."""
        self.counters["requests"] += 1
        path = target.split(b"?", 1)[0]
        if method != b"GET":
            return [self.resp_405], 0.0
        if path.startswith(b"/f/"):
            try:
                i = int(path[3:])
                feed = self.feeds[i]
            except (ValueError, IndexError):
                return [self.resp_404], 0.0
            self.by_mode[feed.mode] += 1
            if feed.mode == "error":
                return [self.resp_500], 0.0
            if feed.mode == "ratelimited":
                return [self.resp_429], 0.0
            if feed.mode == "growing":
                return [self._grow(i, feed)], 0.0
            if feed.mode == "corpus_growing" and (grown := self._grow_corpus(i, feed)) is not None:
                return [grown], 0.0
            delay = self.config.slow_s if feed.mode == "slow" else 0.0
            return self._conditional(feed, headers), delay
        if path == b"/_farm/stats":  # not counted in `status`, so deltas show only feed traffic
            self.counters["requests"] -= 1
            self.counters["stats_requests"] += 1
            body = json.dumps(self.stats()).encode()
            return [
                _response(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body)
            ], 0.0
        return [self.resp_404], 0.0

    def _conditional(self, feed: _Feed, headers: dict[bytes, bytes]) -> list[bytes]:
        inm = headers.get(b"if-none-match")
        if feed.mode == "no_validators":
            pass  # like the many servers that ignore conditional requests: always the full body
        elif inm is not None:
            if _etag_matches(inm.decode("latin-1"), feed.etag):
                return [feed.resp_304]
        else:
            ims = headers.get(b"if-modified-since")
            if ims is not None and (
                ims.decode("latin-1") == feed.last_modified
                or _not_modified_since(ims.decode("latin-1"), feed.last_modified_ts)
            ):
                return [feed.resp_304]
        if (
            feed.body_gz is not None
            and feed.head_200_gz is not None
            and b"gzip" in headers.get(b"accept-encoding", b"")
        ):
            return [feed.head_200_gz, feed.body_gz]
        return [feed.head_200, feed.body]

    def _grow_corpus(self, i: int, feed: _Feed) -> bytes | None:
        """A corpus-growing feed's next version: its corpus file with one new item; None when none fits."""
        found = _FIRST_ITEM.search(feed.body)
        if found is None or feed.body.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in feed.body[:200]:
            return None
        feed.version += 1
        p, now = found[1].decode(), int(time.time())
        if found[2] == b"item":
            item = (
                f"<{p}item><{p}title>Farm feed {i} entry {feed.version}</{p}title>"
                f"<{p}link>http://farm.invalid/{i}/{feed.version}</{p}link>"
                f'<{p}guid isPermaLink="false">urn:feedfarm:{i}:{feed.version}</{p}guid>'
                f"<{p}pubDate>{email.utils.formatdate(now, usegmt=True)}</{p}pubDate>"
                f"<{p}description>Entry {feed.version} of farm feed {i}.</{p}description></{p}item>"
            )
        else:
            item = (
                f"<{p}entry><{p}title>Farm feed {i} entry {feed.version}</{p}title>"
                f'<{p}link href="http://farm.invalid/{i}/{feed.version}"/>'
                f"<{p}id>urn:feedfarm:{i}:{feed.version}</{p}id>"
                f"<{p}updated>{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))}</{p}updated>"
                f"<{p}content>Entry {feed.version} of farm feed {i}.</{p}content></{p}entry>"
            )
        body = feed.body[: found.start()] + item.encode() + feed.body[found.start() :]
        headers = [("Content-Type", feed.content_type), ("ETag", f'"c{i:x}-{feed.version}"')]
        return _response(200, [*headers, ("Last-Modified", email.utils.formatdate(now, usegmt=True))], body)

    def _grow(self, i: int, feed: _Feed) -> bytes:
        """A growing feed's next version: one more entry than last time; never 304."""
        feed.version += 1
        v = feed.version
        # Each entry is published when it appears (wall clock), so an adaptive scheduler sees a live feed.
        feed.times = [*feed.times[-(GROWING_WINDOW - 1) :], int(time.time())]
        ts = feed.times[-1]
        items = []
        for k in range(v, max(0, v - GROWING_WINDOW), -1):
            items.append(
                f"<item><title>Farm feed {i} entry {k}</title><link>http://farm.invalid/{i}/{k}</link>"
                f'<guid isPermaLink="false">urn:feedfarm:{i}:{k}</guid>'
                f"<pubDate>{email.utils.formatdate(feed.times[k - v - 1], usegmt=True)}</pubDate>"
                f"<description>Entry {k} of growing farm feed {i}.</description></item>"
            )
        body = (
            '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
            f"<title>Growing farm feed {i}</title><link>http://farm.invalid/{i}/</link>"
            f"<description>gains one entry per request</description>{''.join(items)}</channel></rss>"
        ).encode()
        return _response(
            200,
            [
                ("Content-Type", "application/rss+xml"),
                ("ETag", f'"g{i:x}-{v}"'),
                ("Last-Modified", email.utils.formatdate(ts, usegmt=True)),
            ],
            body,
        )


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; requests are answered strictly in order."""

    def __init__(self, farm: Farm, conns: set[_Connection]) -> None:
        self.farm = farm
        self.conns = conns
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a delayed (slow) response is pending
        self.closing = False
        self.last_active = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.conns.add(self)
        self.farm.counters["connections"] += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.conns.discard(self)
        self.closing = True

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        self.buf += data
        self._process()

    def _process(self) -> None:
        while not self.busy and not self.closing and self.transport is not None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > MAX_HEADER_BYTES:
                    self._send([_response(431, [("Connection", "close")])], close=True)
                return
            head = bytes(self.buf[:end])
            del self.buf[: end + 4]
            lines = head.split(b"\r\n")
            try:
                method, target, version = lines[0].split(b" ", 2)
            except ValueError:
                self._send([_response(400, [("Connection", "close")])], close=True)
                return
            headers: dict[bytes, bytes] = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            if headers.get(b"content-length", b"0") not in (b"", b"0") or b"transfer-encoding" in headers:
                self._send([_response(400, [("Connection", "close")])], close=True)  # GET only: no bodies
                return
            conn_hdr = headers.get(b"connection", b"").lower()
            close = conn_hdr == b"close" or (version != b"HTTP/1.1" and conn_hdr != b"keep-alive")
            chunks, delay = self.farm.handle(method, target, headers)
            if target.startswith(b"/_farm/"):
                self._send(chunks, close=close, count=False)
                continue
            if delay > 0:
                self.busy = True
                asyncio.get_running_loop().call_later(delay, self._send_delayed, chunks, close)
                return
            self._send(chunks, close=close)

    def _send_delayed(self, chunks: list[bytes], close: bool) -> None:
        self.busy = False
        if self.closing:
            return
        self._send(chunks, close=close)
        self._process()

    def _send(self, chunks: list[bytes], *, close: bool, count: bool = True) -> None:
        assert self.transport is not None
        if count:
            self.farm.count(int(chunks[0][9:12]), sum(map(len, chunks)))
        self.transport.writelines(chunks)
        if close:
            self.closing = True
            self.transport.close()


async def serve(config: FarmConfig, *, on_ready: Any = None) -> None:
    """Run the farm until its lifetime ends, a signal arrives or the parent process goes away."""
    config.validate()
    corpus = load_corpus(config.corpus)
    farm = Farm(config, corpus)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    addresses = [host_address(h, config.hosts) for h in range(config.hosts)]
    conns: set[_Connection] = set()
    server = None
    for _attempt in range(10):
        port = config.port or _free_port(addresses[0])
        try:
            server = await loop.create_server(
                lambda: _Connection(farm, conns), host=addresses, port=port, backlog=4096, reuse_address=True
            )
            break
        except OSError:
            if config.port:
                raise
    if server is None:
        raise OSError("could not bind a common port on the farm addresses")
    info = {
        "port": port,
        "feeds": config.feeds,
        "hosts": config.hosts,
        "corpus_files": len(corpus),
        "corpus_items": sum(c.items for c in corpus),
        "modes": {m: sum(1 for f in farm.feeds if f.mode == m) for m in MODES},
        "pid": os.getpid(),
    }
    if on_ready is not None:
        on_ready(info)
    parent = os.getppid()
    deadline = loop.time() + config.max_lifetime_s
    try:
        while not stop.is_set() and loop.time() < deadline:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=min(1.0, max(0.0, deadline - loop.time())))
            if os.getppid() != parent:  # orphaned: whoever started us is gone
                break
            idle_before = time.monotonic() - IDLE_CLOSE_S
            for conn in [c for c in conns if c.last_active < idle_before and not c.busy]:
                if conn.transport is not None:
                    conn.transport.close()
    finally:
        server.close()
        for conn in list(conns):
            if conn.transport is not None:
                conn.transport.abort()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), timeout=2)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# -- the client side: run the farm in its own process -------------------------------------------------
class FeedFarm:
    """Starts the farm in a child process (its own event loop and CPU), gives its URLs and counters."""

    def __init__(self, config: FarmConfig | None = None) -> None:
        self.config = config or FarmConfig()
        self.config.validate()
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}

    @property
    def port(self) -> int:
        return int(self.info["port"])

    @property
    def urls(self) -> list[str]:
        return [feed_url(i, self.config.hosts, self.port) for i in range(self.config.feeds)]

    def url(self, i: int) -> str:
        return feed_url(i, self.config.hosts, self.port)

    def start(self, timeout: float = 120.0) -> Self:
        """Spawn the farm and wait until it listens (it prints one JSON line when ready)."""
        cmd = [sys.executable, str(Path(__file__).resolve()), "--ready-json", *self.config.argv()]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.stop()
            raise RuntimeError(
                f"feed farm did not start within {timeout}s (exit code {self.proc.returncode})"
            )
        self.info = json.loads(line)
        return self

    def stats(self, timeout: float = 10.0) -> dict[str, Any]:
        """The farm's request counters (requests, connections, bytes_sent, status, by_mode)."""
        url = f"http://{host_address(0, self.config.hosts)}:{self.port}/_farm/stats"
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data: dict[str, Any] = json.loads(resp.read())
        return data

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


# -- script ----------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> tuple[FarmConfig, argparse.Namespace]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--feeds", type=int, default=2000, help="number of distinct feed URLs")
    p.add_argument("--hosts", type=int, default=100, help="loopback host addresses, from 127.0.0.2 on")
    p.add_argument("--port", type=int, default=0, help="port on every address (0 = a free one)")
    p.add_argument("--corpus", type=Path, default=FarmConfig().corpus, help="dir with manifest.json")
    p.add_argument("--max-lifetime-s", type=float, default=3600.0, help="exit after this many seconds")
    p.add_argument("--growing", type=float, default=0.0, help="fraction gaining an entry per request")
    p.add_argument(
        "--corpus-growing",
        type=float,
        default=0.0,
        help="fraction whose corpus file gains an item per request",
    )
    p.add_argument("--errors", type=float, default=0.0, help="fraction answering 500")
    p.add_argument("--slow", type=float, default=0.0, help="fraction answering after --slow-s")
    p.add_argument("--slow-s", type=float, default=2.0)
    p.add_argument("--ratelimited", type=float, default=0.0, help="fraction answering 429")
    p.add_argument("--retry-after-s", type=int, default=120)
    p.add_argument(
        "--no-validators", type=float, default=0.0, help="fraction sending no ETag/Last-Modified (never 304)"
    )
    p.add_argument("--gzip", action="store_true", help="gzip bodies for clients that accept it")
    p.add_argument("--seed", type=int, default=1, help="seed of the mode assignment")
    p.add_argument("--urls-out", type=Path, help="write the feed URLs here, one per line")
    p.add_argument("--opml", type=Path, help="write an OPML subscription list here")
    p.add_argument("--ready-json", action="store_true", help="print one JSON line on stdout when listening")
    ns = p.parse_args(argv)
    names = {f.name for f in dataclasses.fields(FarmConfig)}
    config = FarmConfig(**{k: v for k, v in vars(ns).items() if k in names})
    config.validate()
    return config, ns


def write_opml(path: Path, urls: list[str]) -> None:
    outlines = "\n".join(
        f"    <outline type={quoteattr('rss')} text={quoteattr(f'farm {i}')} xmlUrl={quoteattr(u)}/>"
        for i, u in enumerate(urls)
    )
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<opml version="2.0"><head><title>'
        f"{escape('feed farm')}</title></head>\n  <body>\n{outlines}\n  </body>\n</opml>\n"
    )


def main(argv: list[str] | None = None) -> None:
    config, ns = parse_args(argv)

    def ready(info: dict[str, Any]) -> None:
        if ns.ready_json:
            sys.stdout.write(json.dumps(info) + "\n")
            sys.stdout.flush()
            return
        urls = [feed_url(i, config.hosts, info["port"]) for i in range(config.feeds)]
        if ns.urls_out:
            ns.urls_out.write_text("\n".join(urls) + "\n")
        if ns.opml:
            write_opml(ns.opml, urls)
        print(
            f"feed farm: {config.feeds} feeds on {config.hosts} hosts "
            f"({host_address(0, config.hosts)}…{host_address(config.hosts - 1, config.hosts)}) port {info['port']}, "
            f"{info['corpus_files']} corpus files, modes {info['modes']}; stops after {config.max_lifetime_s:g}s",
            file=sys.stderr,
        )
        print(
            f"  e.g. {urls[0]}  stats: http://{host_address(0, config.hosts)}:{info['port']}/_farm/stats",
            file=sys.stderr,
        )

    asyncio.run(serve(config, on_ready=ready))


if __name__ == "__main__":
    main()
