"""One real host per test module, serving the API on a free loopback port, and an httpx client for it.

The host runs `Host.run` (scheduler, services, the one ASGI app) against its own database, so tests in
the module share it (and the feeds they add) instead of starting a host each.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from host import tokens
from host.runtime import Host
from host.services import EmbeddedPostgres
from tests.feedserver import FeedServer
from tests.services import WAIT_S, fresh_database, make_host, until


@dataclass
class Api:
    host: Host
    base: str  # http://127.0.0.1:PORT
    token: str  # a valid API token
    client: httpx.AsyncClient  # no credentials

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
async def module_db(pg_server: EmbeddedPostgres) -> AsyncIterator[str]:
    """A database for this test module's host (tests in a module share the host and its data)."""
    async with fresh_database(pg_server, "api") as url:
        yield url


async def running(
    home: Path, database_url: str, nats_url: str, *, http_host: str = "127.0.0.1", **config: Any
) -> tuple[Host, asyncio.Event, asyncio.Task[None]]:
    """A host running `run` (as `feedeater run` does) on a free port of `http_host`, once it serves;
    `config`: other HostConfig fields (public_hosts, trusted_proxies)."""
    # No embedding model: search answers from full text, and nothing spends CPU embedding test entries.
    h = make_host(
        home, database_url, nats_url, host_id=f"api-{home.name}", env={"FEEDEATER_HOST_EMBEDDER": "none"}
    )
    h.config = dataclasses.replace(h.config, http_host=http_host, **config)
    await h.open(connect_bus=False)
    stop = asyncio.Event()
    task = asyncio.create_task(h.run(stop))
    await until(lambda: _served(h, task), what="the host serves HTTP")
    return h, stop, task


async def _served(h: Host, task: asyncio.Task[None]) -> bool:
    if task.done():
        task.result()  # a host that failed to start: raise its error here
    return h.http_port is not None


async def stopped(h: Host, stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    stop.set()
    await asyncio.wait_for(task, timeout=WAIT_S)
    await h.close()


@pytest.fixture(scope="module")
def feeds() -> Iterator[FeedServer]:
    with FeedServer() as server:
        yield server


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory, module_db: str, nats_url: str) -> AsyncIterator[Api]:
    h, stop, task = await running(tmp_path_factory.mktemp("api-host"), module_db, nats_url)
    async with h.require_pool().acquire() as conn:
        token = (await tokens.create(conn, "tests"))["token"]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{h.http_port}", timeout=30) as client:
        yield Api(h, str(client.base_url).rstrip("/"), token, client)
    await stopped(h, stop, task)
