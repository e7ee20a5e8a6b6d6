"""Three real `feedeater run` processes on one database and one NATS (the multi-machine deployment)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from host.runtime import Host
from modules.rss import store
from tests.feedserver import FeedServer, Item, Route, ago, rss
from tests.services import HostProcess, assert_exactly_once, make_host, reset_stream, until

FEEDS = 12
HOST_ENV = {
    "FEEDEATER_JOB_RSS_POLL": "2s",
    # Far below the 20 s slow responses: the live hosts keep their feeds only by renewing the leases
    # (issue 25), and the killed host's feeds come back 8 s after its last renewal.
    "FEEDEATER_RSS_LEASE_SECONDS": "8",
    "FEEDEATER_RSS_POLL_BATCH": "2",  # small claims, so all three hosts get some of the work
    "FEEDEATER_RSS_PER_HOST_CONCURRENCY": "50",  # every feed is on 127.0.0.1
    "FEEDEATER_RSS_PARSE_WORKERS": "0",
}


BASE = ago(hours=10)  # fixed dates: a re-served entry must be byte-identical, not a revision


def items(feed: int, rounds: int) -> list[Item]:
    return [
        (f"{feed}-{r}", f"Feed {feed} entry {r}", BASE + timedelta(hours=r), f"text {r}")
        for r in range(rounds)
    ]


def serve(server: FeedServer, rounds: int, *, slow: Sequence[int] = (), delay_s: float = 0.0) -> None:
    for i in range(FEEDS):
        server.route(f"/f/{i}", Route(body=rss(items(i, rounds)), delay_s=delay_s if i in slow else 0.0))


async def polls_done(pool: asyncpg.Pool, want: int) -> bool:
    """Every feed has `want` successful polls and no lease."""
    return bool(
        await pool.fetchval(
            "SELECT bool_and(successful_polls = $1 AND lease_until IS NULL) FROM mod_rss.poll_state", want
        )
    )


async def every_host_ticked(pool: asyncpg.Pool, since: datetime, times: int = 2) -> bool:
    """Each of the three hosts finished `times` poll runs that started after `since` (database clock)."""
    rows = await pool.fetch(
        """SELECT host_id, count(*) AS n FROM host.job_runs
           WHERE job = 'poll' AND status <> 'running' AND started_at > $1 GROUP BY host_id""",
        since,
    )
    return len(rows) == 3 and all(r["n"] >= times for r in rows)


def request_counts(server: FeedServer) -> list[int]:
    return [len(server.requests_to(f"/f/{i}")) for i in range(FEEDS)]


@pytest.mark.timeout(900)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_three_hosts_fetch_each_due_feed_once_and_a_killed_host_loses_nothing(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    await reset_stream(nats_url)
    setup: Host = make_host(tmp_path / "setup", database_url, nats_url)
    await setup.open()
    pool = setup.require_pool()
    hosts: list[HostProcess] = []
    with FeedServer() as server:
        try:
            serve(server, 2)
            async with pool.acquire() as conn:
                for i in range(FEEDS):
                    await store.add_feed(conn, url=server.url(f"/f/{i}"))
            hosts = [
                HostProcess(tmp_path / f"h{k}", database_url, nats_url, f"host-{k}", **HOST_ENV)
                for k in range(3)
            ]

            # Round 1 and 2: each due feed is fetched exactly once per due time, by whichever host.
            for round_ in (1, 2):
                if round_ == 2:
                    serve(server, 3)
                    await pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
                await until(lambda r=round_: polls_done(pool, r), timeout=300, what=f"round {round_}")  # type: ignore[misc]
                done_at: datetime = await pool.fetchval("SELECT now()")
                # Two more complete ticks of every host (not a wall-clock wait): nobody fetches again early.
                await until(lambda t=done_at: every_host_ticked(pool, t), timeout=300, what="two more ticks")  # type: ignore[misc]
                assert request_counts(server) == [round_] * FEEDS

            # Round 3: half the feeds hang; kill the host holding most of their leases mid-fetch.
            slow = range(0, FEEDS, 2)
            serve(server, 4, slow=slow, delay_s=20)
            await pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")

            async def slow_fetches_in_flight() -> list[asyncpg.Record]:
                if any(len(server.requests_to(f"/f/{i}")) < 3 for i in slow):
                    return []
                return await pool.fetch(
                    """SELECT leased_by, array_agg(feed_id) AS feeds, max(lease_until) AS until
                       FROM mod_rss.poll_state WHERE lease_until > now() GROUP BY leased_by
                       ORDER BY count(*) DESC"""
                )

            leases = await until(slow_fetches_in_flight, timeout=120, what="slow fetches in flight")
            victim = next(h for h in hosts if h.host_id == leases[0]["leased_by"])
            # The orphans are the victim's hanging feeds: the poll job refills its claims as polls finish,
            # so the victim may still complete fast feeds it held at the snapshot before it is killed.
            held = await pool.fetch(
                """SELECT p.feed_id, p.lease_until FROM mod_rss.poll_state p JOIN mod_rss.feeds f ON f.id = p.feed_id
                   WHERE p.leased_by = $1 AND p.lease_until > now() AND f.url = ANY($2::text[])""",
                victim.host_id,
                [server.url(f"/f/{i}") for i in slow],
            )
            orphaned: list[int] = [r["feed_id"] for r in held]
            lease_until: dict[int, datetime] = {r["feed_id"]: r["lease_until"] for r in held}
            assert orphaned, "the victim holds hanging feeds"
            victim.kill()
            serve(server, 4)  # the servers recover; the survivors must pick up the orphans
            await until(lambda: polls_done(pool, 3), timeout=300, what="orphaned feeds picked up")
            taken_over = await pool.fetch(
                "SELECT feed_id, last_polled_at FROM mod_rss.poll_state WHERE feed_id = ANY($1::bigint[])",
                orphaned,
            )
            assert all(r["last_polled_at"] >= lease_until[r["feed_id"]] for r in taken_over), (
                "picked up early"
            )
            feed_ids = await pool.fetch("SELECT id, url FROM mod_rss.feeds ORDER BY id")
            path_of = {r["id"]: r["url"].split(str(server.port), 1)[1] for r in feed_ids}
            orphan_paths = {path_of[f] for f in orphaned}
            for i, count in enumerate(request_counts(server)):
                # one interrupted fetch by the killed host, then one by a survivor
                assert count == (4 if f"/f/{i}" in orphan_paths else 3), (i, count)

            # Nothing lost, nothing duplicated: 4 entries per feed, one event each.
            assert await pool.fetchval("SELECT count(*) FROM mod_rss.entries") == 4 * FEEDS
            assert setup.js is not None
            events = await assert_exactly_once(pool, setup.js)
            assert len(events) == 4 * FEEDS
            assert datetime.now(UTC) > max(lease_until.values())
        finally:
            for h in hosts:
                h.stop()
            await setup.close()
        for h in hosts:
            if h is not victim:
                assert "Traceback" not in h.output(), h.output()[-3000:]
