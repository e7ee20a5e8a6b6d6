"""A stand-in OpenTelemetry collector (OTLP over HTTP/protobuf) on loopback: keeps what it receives."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    received: list[tuple[str, str, bytes]]


class OtlpCollector:
    """`with OtlpCollector() as c:` → c.url (set OTEL_EXPORTER_OTLP_ENDPOINT to it), c.received (path,
    content type, body per POST), c.resource_spans() (decoded)."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.received = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def received(self) -> list[tuple[str, str, bytes]]:
        return self._server.received

    def resource_spans(self) -> list[ResourceSpans]:
        return [
            rs
            for _, _, body in self.received
            for rs in ExportTraceServiceRequest.FromString(body).resource_spans
        ]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
