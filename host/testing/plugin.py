"""The pytest plugin of the test kit (entry point `pytest11`: loaded by pytest wherever feedeater is
installed). Fixtures on real services, started on free loopback ports:

- `pg_server` (session): an embedded PostgreSQL with pgvector; `database_url`: a fresh, empty database on it
  per test (dropped after).
- `nats_url` (session): an embedded NATS JetStream; `own_nats` / `own_pg`: servers for one test, which it may
  stop and start again on the same port.
- `host`: a `Host` opened on `database_url` and `nats_url` (migrations applied, bus streams created; the
  streams of earlier tests deleted first), closed after. Run it in process with `host.testing.running`.
- `bus`: a `BusReader` on that host's JetStream (what really reached the streams).
- `feed_server`: a started `FeedServer` (programmable HTTP feeds on 127.0.0.1).
- `host_process`: starts `feedeater run` processes (`HostProcess`) on the test's database and NATS; each
  is stopped after the test.

A test project that defines fixtures of these names in its conftest.py overrides them (pytest's rule).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from host.runtime import Host
from host.services import PG_SYSTEM_USER, EmbeddedNats, EmbeddedPostgres, ensure_system_user, free_port
from host.testing.feedserver import FeedServer
from host.testing.services import BusReader, HostProcess, fresh_database, make_host, reset_stream


def pytest_configure(config: pytest.Config) -> None:
    """Under root, create PostgreSQL's service user once, in the controller before any xdist worker
    starts a server (the workers would also agree on it, under ensure_system_user's lock)."""
    if os.geteuid() == 0 and not hasattr(config, "workerinput"):
        ensure_system_user(PG_SYSTEM_USER)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres]:
    pg = EmbeddedPostgres(tmp_path_factory.mktemp("pg"))
    pg.start()
    yield pg
    pg.stop()


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedNats(tmp_path_factory.mktemp("nats"))
    url = server.start()
    yield url
    server.stop()


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A NATS server for this test alone, which the test may stop and restart on the same port."""
    server = EmbeddedNats(tmp_path / "own-nats", port=free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_pg(tmp_path: Path) -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL for this test alone, restartable on the same port (the session server stays up)."""
    pg = EmbeddedPostgres(tmp_path / "own-pg", port=free_port())
    pg.start()
    yield pg
    pg.stop()


@pytest_asyncio.fixture
async def database_url(pg_server: EmbeddedPostgres) -> AsyncIterator[str]:
    async with fresh_database(pg_server) as url:
        yield url


@pytest_asyncio.fixture
async def host(tmp_path: Path, database_url: str, nats_url: str) -> AsyncIterator[Host]:
    await reset_stream(nats_url)
    h = make_host(tmp_path, database_url, nats_url)
    await h.open()
    yield h
    await h.close()


@pytest_asyncio.fixture
async def bus(host: Host) -> BusReader:
    assert host.js is not None
    return BusReader(host.js)


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """A started FeedServer on 127.0.0.1 (fresh routes and request log per test)."""
    with FeedServer() as server:
        yield server


@pytest.fixture
def host_process(tmp_path: Path, database_url: str, nats_url: str) -> Iterator[Callable[..., HostProcess]]:
    """`host_process(host_id="a", **env)` starts a `feedeater run` on this test's database and NATS
    (`await proc.wait_ready()`, `proc.stop()`, `proc.kill()`); all are stopped after the test."""
    started: list[HostProcess] = []

    def start(host_id: str = "host-1", **env: str) -> HostProcess:
        extra: dict[str, Any] = env  # only environment variables: HostProcess's options stay defaults
        proc = HostProcess(tmp_path / f"run-{host_id}", database_url, nats_url, host_id, **extra)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()
