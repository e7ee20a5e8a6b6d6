"""The host's HTTP server (host/web/server.py): its stop is bounded and never an error."""

from __future__ import annotations

import asyncio
from typing import Any

from host.web.server import serve
from tests.services import WAIT_S


async def test_a_request_that_never_ends_cannot_stop_the_stop() -> None:
    """uvicorn waits for requests in flight before it stops; past the bound the server is forced down
    quietly (a busy machine once outlasted the old bound and the stop ended in a TimeoutError)."""
    started = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        started.set()
        await asyncio.sleep(3600)  # a stuck handler, or a loop starved by a busy machine

    served = await serve(app, "127.0.0.1", 0)
    _, writer = await asyncio.open_connection("127.0.0.1", served.port)
    try:
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await asyncio.wait_for(started.wait(), WAIT_S)
        await asyncio.wait_for(served.close(timeout=0.5), WAIT_S)
        assert served.task.done()
    finally:
        writer.close()
