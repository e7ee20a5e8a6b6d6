"""Serve an ASGI app with uvicorn on a socket we bind ourselves (so port 0 and bind errors are ours)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn

from host.errors import UserError


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the host owns SIGTERM/SIGINT and stops us through should_exit


@dataclass(slots=True)
class Served:
    server: uvicorn.Server
    task: asyncio.Task[None]
    port: int

    async def close(self, timeout: float = 30.0) -> None:
        """uvicorn's graceful stop (open requests get 5 s), then forced: never an error. At load 14 the
        stop once took over the old 10 s bound and `feedeater run` ended in a TimeoutError traceback."""
        self.server.should_exit = True
        await asyncio.wait({self.task}, timeout=timeout)
        if not self.task.done():
            self.server.force_exit = True
            self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def serve(app: object, host: str, port: int) -> Served:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP, not 0: accepted sockets inherit it, and asyncio sets TCP_NODELAY only on sockets whose
        # proto says TCP. Without it every response waits ~40 ms for a delayed ACK (Nagle).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except OSError as exc:
        raise UserError(
            f"cannot serve HTTP on {host}:{port}: {exc.strerror or exc}",
            "set FEEDEATER_HTTP_PORT to a free port (0 picks one)",
        ) from None
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        log_config=None,
        access_log=False,
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=5,
        # uvicorn's 5 s default races clients that reuse a pooled connection after a pause of about that
        # long (requests/urllib3, which reader-app libraries use): the request lands as the server closes
        # it, "Connection reset by peer". 75 s is nginx's default.
        timeout_keep_alive=75,
    )
    server = _Server(config)
    # The socket already listens: connections wait in its backlog until uvicorn's loop accepts them.
    task = asyncio.create_task(server.serve(sockets=[sock]), name="http")
    return Served(server, task, sock.getsockname()[1])
