"""The feed_server fixture, as for the RSS tests, and `web`: a host serving HTTP as `feedeater run` does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from host import tokens
from host.runtime import Host
from host.services import EmbeddedPostgres
from tests.api.conftest import running, stopped
from tests.feedserver import FeedServer
from tests.services import fresh_database


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """A started FeedServer on 127.0.0.1 (fresh routes and request log per test)."""
    with FeedServer() as server:
        yield server


@dataclass
class Web:
    """A running host (API, console, WebSub callbacks) on a free loopback port, as `feedeater run` serves
    them: 127.0.0.1 is a trusted proxy and feeds.example.org a public name, so tests can speak as a
    browser, as a proxy, or as a DNS-rebinding page."""

    host: Host
    port: int
    token: str  # a write token

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, timeout=60, follow_redirects=False, **kwargs)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


PUBLIC_HOST = "feeds.example.org"


@pytest.fixture(scope="module")
async def web(
    pg_server: EmbeddedPostgres, nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Web]:
    async with fresh_database(pg_server, "sec") as database_url:
        h, stop, task = await running(
            tmp_path_factory.mktemp("sec-host"),
            database_url,
            nats_url,
            public_hosts=(PUBLIC_HOST,),
            trusted_proxies=("127.0.0.1",),
        )
        async with h.require_pool().acquire() as conn:
            token = (await tokens.create(conn, "security-tests"))["token"]
        assert h.http_port is not None
        try:
            yield Web(h, h.http_port, token)
        finally:
            await stopped(h, stop, task)
