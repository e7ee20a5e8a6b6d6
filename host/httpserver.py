"""A tiny loopback HTTP endpoint for `/healthz` and Prometheus `/metrics` (no web framework needed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from host.errors import UserError

HealthCheck = Callable[[], Awaitable[dict[str, Any]]]


async def serve(host: str, port: int, health: HealthCheck) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), timeout=5)
            while (await asyncio.wait_for(reader.readline(), timeout=5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.decode("latin-1").split()
            path = parts[1] if len(parts) >= 2 else "/"
            if path == "/metrics":
                status, ctype, body = 200, CONTENT_TYPE_LATEST, generate_latest()
            elif path == "/healthz":
                report = await health()
                status = 200 if report.get("ok") else 503
                ctype, body = "application/json", json.dumps(report, default=str).encode()
            else:
                status, ctype, body = 404, "text/plain", b"not found\n"
            head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: {ctype}\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    try:
        return await asyncio.start_server(handle, host, port)
    except OSError as exc:
        raise UserError(
            f"cannot serve /healthz and /metrics on {host}:{port}: {exc.strerror or exc}",
            "set FEEDEATER_HTTP_PORT to a free port (0 picks one)",
        ) from None
