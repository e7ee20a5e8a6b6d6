"""`feedeater run` starting while NATS or PostgreSQL is unreachable (real processes, real servers)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import asyncpg
import nats
import pytest
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from host.services import EmbeddedNats, EmbeddedPostgres, free_port
from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import (
    HostProcess,
    assert_exactly_once,
    feedeater,
    feedeater_env,
    health,
    make_host,
    pending_events,
    reset_stream,
    until,
)

RUN_ENV = {"FEEDEATER_JOB_RSS_POLL": "1s", "FEEDEATER_RSS_PARSE_WORKERS": "0"}
BASE = ago(hours=5)


async def stored(pool: asyncpg.Pool, want: int) -> bool:
    return int(await pool.fetchval("SELECT count(*) FROM mod_rss.entries")) == want


@pytest.mark.timeout(900)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_run_ingests_while_nats_is_down_and_attaches_when_it_returns(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    await reset_stream(url)
    own_nats.stop()
    setup = make_host(tmp_path / "setup", database_url, url)
    await setup.open(with_bus=False)
    pool = setup.require_pool()
    port = free_port()
    proc: HostProcess | None = None
    try:
        with FeedServer() as server:
            for i in range(3):
                body = rss(
                    [(f"{i}-{r}", f"solar entry {r}", BASE + timedelta(minutes=r), "text") for r in range(3)]
                )
                server.route(f"/f/{i}", Route(body=body))
                async with pool.acquire() as conn:
                    await store.add_feed(conn, url=server.url(f"/f/{i}"))
            proc = HostProcess(
                tmp_path / "h", database_url, url, "host-1", FEEDEATER_HTTP_PORT=str(port), **RUN_ENV
            )

            await until(lambda: stored(pool, 9), timeout=120, what="ingest without NATS")
            assert await pending_events(pool) == 9  # the events wait in the outbox
            status, report = await until(lambda: health(port), timeout=120, what="/healthz answers")
            assert status == 503 and report["status"] == "degraded", report
            assert any("NATS not attached" in p for p in report["degraded"]), report
            search = next(u for u in report["units"] if u["module"] == "rss" and u["name"] == "search")
            assert search["state"] == "waiting for bus"

            own_nats.start()
            nc = await nats.connect(url)
            try:
                assert len(await assert_exactly_once(pool, nc.jetstream())) == 9
                await until(lambda: _healthy(port), timeout=180, what="/healthz ok once NATS is back")
                reply = await until(lambda: _search(nc), timeout=120, what="the search service answering")
                assert "results" in json.loads(reply.data), reply.data  # the search service attached
                env = feedeater_env(tmp_path / "cli", database_url, url)
                res = await asyncio.to_thread(feedeater, env, "status", "--json")
                units = {(u["module"], u["name"]): u for u in json.loads(res.stdout)["units"]}
                assert units[("rss", "search")]["state"] == "running" and units[("rss", "search")]["live"]
                assert units[("host", "outbox-relay")]["host_id"] == "host-1"
                text = await asyncio.to_thread(feedeater, env, "status")
                assert "service rss.search on host-1: running" in text.stdout, text
            finally:
                await nc.close()
    finally:
        if proc is not None:
            proc.stop()
        await setup.close()
    assert proc is not None and "Traceback" not in proc.output(), proc.output()[-3000:]
    assert "NATS not available" in proc.output()  # it said why it was waiting


@pytest.mark.timeout(600)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_run_waits_for_a_database_that_comes_up(
    tmp_path: Path, nats_url: str, own_pg: EmbeddedPostgres
) -> None:
    db_url = own_pg.status().url
    assert db_url is not None
    own_pg.stop()
    port = free_port()
    proc = HostProcess(
        tmp_path / "h",
        db_url,
        nats_url,
        "host-1",
        FEEDEATER_HTTP_PORT=str(port),
        FEEDEATER_DB_WAIT_SECONDS="600",
    )
    try:
        await until(lambda: _logged(proc, "unreachable"), timeout=240, what="a retry line")
        own_pg.start()
        await until(lambda: _healthy(port), timeout=240, what="the host runs once PostgreSQL is up")
    finally:
        proc.stop()
    assert "Traceback" not in proc.output(), proc.output()[-3000:]


def test_run_gives_up_on_an_unreachable_database_with_one_line(tmp_path: Path, nats_url: str) -> None:
    db_url = f"postgresql://postgres@127.0.0.1:{free_port()}/feedeater"
    res = feedeater(feedeater_env(tmp_path, db_url, nats_url, FEEDEATER_DB_WAIT_SECONDS="3"), "run")
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith(f"feedeater: error: cannot connect to PostgreSQL at {db_url}"), lines[-1]
    assert "after 3s" in lines[-1] and "FEEDEATER_DB_WAIT_SECONDS" in lines[-1]
    assert sum("retrying in" in line for line in lines) >= 2  # clear log lines while it waited
    assert "Traceback" not in res.stderr


async def _search(nc: nats.NATS) -> Msg | None:
    """A search reply, or None while nobody answers yet: /healthz says the unit is running from the moment
    it starts, a moment before its subscription reaches the server (seen under load)."""
    try:
        return await nc.request("feedeater.rss.search", json.dumps({"query": "solar"}).encode(), timeout=30)
    except NoRespondersError:
        return None


async def _healthy(port: int) -> bool:
    got = await health(port)
    return got is not None and got[0] == 200 and got[1]["status"] == "ok"


async def _logged(proc: HostProcess, text: str) -> bool:
    return text in proc.output()
