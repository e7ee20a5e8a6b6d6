"""The issue's acceptance test: a second module, written only against the contract and installed as its
own distribution, hears every rss entry exactly once across a SIGKILLed host and a NATS restart."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import asyncpg
import nats
import pytest

from host.services import EmbeddedNats
from modules.rss import store
from tests.feedserver import FeedServer, Item, Route, ago, rss
from tests.services import BusReader, HostProcess, make_host, pending_events, reset_stream, until

EXAMPLE_SRC = Path(__file__).resolve().parent.parent / "example_module"
FEEDS = 4
BASE = ago(hours=30)
RUN_ENV = {
    "FEEDEATER_JOB_RSS_POLL": "1s",
    "FEEDEATER_RSS_PARSE_WORKERS": "0",
    "FEEDEATER_RSS_PER_HOST_CONCURRENCY": "50",
    "FEEDEATER_EXAMPLE_WORK_MS": "100",  # a kill lands mid-stream
}


def install_example(site: Path) -> str:
    """Register the example distribution the way pip does (a dist-info with its entry point) in a
    directory of its own; returns the PYTHONPATH under which `feedeater` finds it."""
    dist = site / "feedeater_example-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: feedeater-example\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[feedeater.modules]\nexample = feedeater_example:MODULE\n")
    return os.pathsep.join(p for p in (str(site), str(EXAMPLE_SRC), os.environ.get("PYTHONPATH")) if p)


def items(feed: int, count: int) -> list[Item]:
    return [
        (f"{feed}-{r}", f"feed {feed} entry {r}", BASE + timedelta(minutes=r), "text") for r in range(count)
    ]


def serve(server: FeedServer, count: int) -> None:
    for i in range(FEEDS):
        server.route(f"/f/{i}", Route(body=rss(items(i, count))))


async def count(pool: asyncpg.Pool, sql: str) -> int:
    return int(await pool.fetchval(sql))


@pytest.mark.timeout(600)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_example_module_hears_every_entry_once_across_a_host_kill_and_a_nats_restart(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    await reset_stream(url)
    env = {**RUN_ENV, "PYTHONPATH": install_example(tmp_path / "site")}
    setup = make_host(tmp_path / "setup", database_url, url)
    await setup.open(with_bus=False)
    pool = setup.require_pool()
    entries = "SELECT count(*) FROM mod_rss.entries"
    seen = "SELECT count(*) FROM mod_example.seen"
    hosts: list[HostProcess] = []
    try:
        with FeedServer() as server:
            serve(server, 10)
            async with pool.acquire() as conn:
                for i in range(FEEDS):
                    await store.add_feed(conn, url=server.url(f"/f/{i}"))
            hosts.append(HostProcess(tmp_path / "a", database_url, url, "host-a", **env))
            # The example's own migration ran in the host it was installed into.
            await until(
                lambda: count(
                    pool, "SELECT count(*) FROM public.feedeater_migrations WHERE scope = 'example'"
                )
            )
            await until(lambda: count(pool, seen), timeout=120, what="the example hears its first entries")
            hosts[0].kill()  # mid-stream: the rest of its fetched batch is delivered but never acked
            assert await count(pool, seen) < 10 * FEEDS

            hosts.append(HostProcess(tmp_path / "b", database_url, url, "host-b", **env))
            serve(server, 15)
            await pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
            await until(lambda: _at_least(pool, seen, 15 * FEEDS), timeout=180, what="host b catches up")

            own_nats.stop()  # ingest goes on into the outbox; the consumer waits for the bus
            serve(server, 20)
            await pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
            await until(
                lambda: _at_least(pool, entries, 20 * FEEDS), timeout=120, what="ingest while NATS is down"
            )
            assert await pending_events(pool) >= 5 * FEEDS
            own_nats.start()  # same port, same JetStream store: the durable consumer resumes
            await until(lambda: _at_least(pool, seen, 20 * FEEDS), timeout=240, what="every entry heard")

            # Exactly once: one row per entry, one processed id per event, one announcement each.
            per_message = await pool.fetch(
                "SELECT message_id, count(*) AS n FROM mod_example.seen GROUP BY 1"
            )
            assert all(r["n"] == 1 for r in per_message), "an entry was handled twice"
            stored = {r["message_id"] for r in await pool.fetch("SELECT message_id FROM mod_rss.entries")}
            assert {r["message_id"] for r in per_message} == stored and len(stored) == 20 * FEEDS
            assert await count(
                pool, "SELECT count(*) FROM host.processed_events WHERE consumer = 'example.entries'"
            ) == len(stored)
            # The kill left delivered-but-unacked events: they came back and were handled by host b.
            assert await count(pool, "SELECT max(delivery) FROM mod_example.seen") >= 2
            nc = await nats.connect(url)
            try:
                got = await BusReader(nc.jetstream()).all("feedeater.example.entrySeen", expect=len(stored))
            finally:
                await nc.close()
            assert len(got) == len(stored) and len({m["_msg_id"] for m in got}) == len(stored)
            assert {m["messageId"] for m in got} == {str(m) for m in stored}
    finally:
        for h in hosts:
            h.stop()
        await setup.close()
    assert "Traceback" not in hosts[1].output(), hosts[1].output()[-3000:]


async def _at_least(pool: asyncpg.Pool, sql: str, want: int) -> bool:
    return await count(pool, sql) >= want
