"""A real, programmable HTTP/1.1 server on a free loopback port, for tests that need a network peer.

It runs `http.server.ThreadingHTTPServer` in a background thread (one thread per connection, keep-alive on),
so the code under test talks real TCP (and optionally TLS) to it.

Usage::

    with FeedServer() as server:                      # or: server = FeedServer().start(); ...; server.stop()
        server.route("/feed", Route(body=b"<rss/>", etag='"v1"', last_modified="Sat, 07 Sep 2002 09:42:31 GMT"))
        server.route("/old", Route(status=301, location="/feed"))       # path or absolute URL
        url = server.url("/feed")                     # http://127.0.0.1:PORT/feed
        other = server.url("/feed", host="localhost") # same server under another host name
        ...
        server.requests                               # every RecordedRequest, in arrival order
        server.requests_to("/feed")                   # those for one path (query string ignored)
        server.peak_concurrency("localhost")          # most simultaneous requests seen for a Host (None: all)

`FeedServer(host="127.0.0.2")` binds another loopback address; `FeedServer(tls=ssl_context)` serves HTTPS.
Unknown paths answer 404. The pytest fixture `feed_server` (tests/rss/conftest.py) yields a started server.

`Route` fields (all optional):

* `status`, `body`, `headers`: the response (a list value sends that header once per item). `body` may be a
  callable returning an iterable of byte chunks;
  it is then streamed with chunked transfer encoding (unless `content_length` is set), e.g. to send more data
  than fits in memory.
* `etag`, `last_modified`: sent as headers; a matching If-None-Match (which takes precedence) or an
  If-Modified-Since not older than `last_modified` gets a 304 without body.
* `encoding`: "gzip", "deflate" or "br": compress `body` and send Content-Encoding.
* `location`: the Location header (for 3xx). `retry_after`: the Retry-After header.
* `delay_s`: wait before answering. `trickle`: (chunk_bytes, interval_s) sends the body slowly.
* `hold_until`: answer only once this returns true (checked every 10 ms), e.g.
  `lambda: server.peak_concurrency() >= 4`: order by causality, not by a delay that a busy machine outlasts.
  After `HOLD_LIMIT_S` (60 s) the server answers 503 instead, so a condition never met fails the test.
* `content_length`: the Content-Length to claim (a lie if it differs from the body); the connection is closed
  after such a response. `truncate_at`: send only that many body bytes, then close. `drop`: close the
  connection without sending anything.

`RecordedRequest` has `method`, `path`, `host` (Host header without port), `headers` (lower-cased names),
`received_at` (time.monotonic()), `bytes_sent` (body bytes written), `aborted` (the client went away
mid-response) and `done`, a `threading.Event` set once the server has finished with the request.

`self_signed_tls(directory)` makes a certificate for "localhost" with the openssl CLI and returns
`(server_context, client_context)`; the client context trusts only that certificate. `sni_names` on a
TLS server lists the SNI host names clients sent.
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import socket
import ssl
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import brotli

__all__ = ["BackgroundHTTPServer", "FeedServer", "Item", "Route", "ago", "rss", "self_signed_tls"]

_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
}


@dataclass(frozen=True)
class Route:
    status: int = 200
    body: bytes | Callable[[], Iterable[bytes]] = b""
    headers: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    etag: str | None = None
    last_modified: str | None = None
    encoding: str | None = None
    location: str | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    hold_until: Callable[[], bool] | None = None
    trickle: tuple[int, float] | None = None
    content_length: int | None = None
    truncate_at: int | None = None
    drop: bool = False


@dataclass
class RecordedRequest:
    method: str
    path: str
    host: str
    headers: dict[str, str]
    received_at: float = field(default_factory=time.monotonic)
    bytes_sent: int = 0
    aborted: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    left: bool = False  # no longer counted in flight (see FeedServer._leave)


def _not_modified(route: Route, headers: Mapping[str, str]) -> bool:
    if_none_match = headers.get("if-none-match")
    if if_none_match is not None:
        tags = [t.strip() for t in if_none_match.split(",")]
        return route.etag is not None and ("*" in tags or route.etag in tags)
    if_modified_since = headers.get("if-modified-since")
    if if_modified_since is None or route.last_modified is None:
        return False
    try:
        return parsedate_to_datetime(route.last_modified) <= parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False


HOLD_LIMIT_S = 60.0


def _held_until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    timeout = 30  # an idle keep-alive connection frees its thread eventually
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on `requests`, not on stderr."""

    def do_GET(self) -> None:
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest(
            method=self.command,
            path=self.path,
            host=headers.get("host", "").rsplit(":", 1)[0],
            headers=headers,
        )
        owner._begin(record)
        try:
            self._respond(owner.route_for(self.path), record)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            record.aborted = True
            self.close_connection = True
        finally:
            owner._end(record)

    def _write(self, data: bytes, record: RecordedRequest) -> None:
        self.wfile.write(data)
        record.bytes_sent += len(data)

    def _respond(self, route: Route, record: RecordedRequest) -> None:
        if route.drop:
            self.close_connection = True
            return
        if route.delay_s:
            time.sleep(route.delay_s)
        if route.hold_until is not None and not _held_until(route.hold_until):
            route = Route(status=503, body=b"hold_until: the condition was not met in time")
        if _not_modified(route, record.headers):
            self.send_response(304)
            self._send_validators(route)
            self.server.owner._leave(record)
            self.end_headers()
            return
        body = route.body
        self.send_response(route.status)
        for name, value in route.headers.items():
            for one in [value] if isinstance(value, str) else value:
                self.send_header(name, one)
        self._send_validators(route)
        if route.location is not None:
            self.send_header("Location", route.location)
        if route.retry_after is not None:
            self.send_header("Retry-After", route.retry_after)
        if isinstance(body, bytes) and route.encoding is not None:
            body = _COMPRESSORS[route.encoding](body)
            self.send_header("Content-Encoding", route.encoding)
        if route.content_length is not None:
            self.send_header("Content-Length", str(route.content_length))
            self.close_connection = True
        elif isinstance(body, bytes):
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if isinstance(body, bytes):
            self._send_bytes(body, route, record)
        elif route.content_length is not None:
            for chunk in body():
                self._write(chunk, record)
        else:
            for chunk in body():
                self._write(b"%x\r\n%s\r\n" % (len(chunk), chunk), record)
            self._write(b"0\r\n\r\n", record)

    def _send_validators(self, route: Route) -> None:
        if route.etag is not None:
            self.send_header("ETag", route.etag)
        if route.last_modified is not None:
            self.send_header("Last-Modified", route.last_modified)

    def _send_bytes(self, body: bytes, route: Route, record: RecordedRequest) -> None:
        if route.truncate_at is not None:
            body = body[: route.truncate_at]
            self.close_connection = True
        if route.trickle is None:
            self.server.owner._leave(record)
            self._write(body, record)
            return
        size, interval = route.trickle
        for start in range(0, len(body), size):
            self._write(body[start : start + size], record)
            time.sleep(interval)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, owner: FeedServer, host: str, tls: ssl.SSLContext | None) -> None:
        self.owner = owner
        self._tls = tls
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        super().__init__((host, 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._connections.discard(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (or fail TLS) mid-connection are expected in these tests."""

    def close_connections(self) -> None:
        with self._lock:
            for sock in self._connections:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class BackgroundHTTPServer:
    """Serves an `http.server` in a daemon thread; start/stop and `with` support shared by test servers."""

    _httpd: ThreadingHTTPServer

    def _serve_in_thread(self, httpd: ThreadingHTTPServer, name: str) -> None:
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, name=name, daemon=True
        )

    def _drop_connections(self) -> None:
        """Hook: close connections still open at stop (keep-alive clients would hold threads)."""

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._drop_connections()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class FeedServer(BackgroundHTTPServer):
    """See the module docstring."""

    def __init__(self, host: str = "127.0.0.1", *, tls: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.scheme = "https" if tls is not None else "http"
        self.requests: list[RecordedRequest] = []
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()
        self._in_flight: dict[str | None, int] = {}
        self._peak: dict[str | None, int] = {}
        self.sni_names: list[str | None] = []
        if tls is not None:
            tls.sni_callback = lambda _sock, name, _ctx: self.sni_names.append(name)
        httpd = _HTTPServer(self, host, tls)
        self._serve_in_thread(httpd, "feedserver")
        self.port: int = httpd.server_address[1]

    def _drop_connections(self) -> None:
        assert isinstance(self._httpd, _HTTPServer)
        self._httpd.close_connections()

    def url(self, path: str = "/", *, host: str | None = None) -> str:
        return f"{self.scheme}://{host or self.host}:{self.port}{path}"

    def route(self, path: str, route: Route) -> None:
        self._routes[path] = route

    def route_for(self, path: str) -> Route:
        return self._routes.get(path.split("?", 1)[0], Route(status=404, body=b"not found"))

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.split("?", 1)[0] == path]

    def peak_concurrency(self, host: str | None = None) -> int:
        with self._lock:
            return self._peak.get(host, 0)

    def _begin(self, record: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(record)
            for key in (None, record.host):
                self._in_flight[key] = self._in_flight.get(key, 0) + 1
                self._peak[key] = max(self._peak.get(key, 0), self._in_flight[key])

    def _leave(self, record: RecordedRequest) -> None:
        """Stop counting the request in flight, just before its last bytes go out: a client that has read
        them may send its next request before this thread runs again, and the peak then counted one
        request too many (a global limit of 3 measured as 4)."""
        with self._lock:
            if record.left:
                return
            record.left = True
            for key in (None, record.host):
                self._in_flight[key] -= 1

    def _end(self, record: RecordedRequest) -> None:
        self._leave(record)
        record.done.set()


def self_signed_tls(directory: Path, hostname: str = "localhost") -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server_context, client_context) for a fresh self-signed certificate naming only `hostname`."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the openssl command is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    request = f"req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN={hostname} -addext subjectAltName=DNS:{hostname}"
    subprocess.run(
        [openssl, *request.split(), "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


Item = tuple[str, str, datetime | None, str]  # guid, title, published, description


def rss(items: Sequence[Item], *, title: str = "Test Feed", ttl: int | None = None) -> bytes:
    """A small RSS 2.0 document; `items` are (guid, title, published, description)."""
    parts = [f"<title>{title}</title><link>http://example.org/</link><description>d</description>"]
    if ttl:
        parts.append(f"<ttl>{ttl}</ttl>")
    for guid, item_title, published, desc in items:
        date = f"<pubDate>{format_datetime(published)}</pubDate>" if published else ""
        parts.append(
            f"<item><guid isPermaLink='false'>{guid}</guid><title>{item_title}</title>"
            f"<link>http://example.org/{guid}</link>{date}<description>{desc}</description>"
            "<author>ann@example.org (Ann)</author></item>"
        )
    return f"<?xml version='1.0'?><rss version='2.0'><channel>{''.join(parts)}</channel></rss>".encode()


def ago(**kw: float) -> datetime:
    return (datetime.now(UTC) - timedelta(**kw)).replace(microsecond=0)
