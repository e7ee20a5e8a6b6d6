"""Crash takeover (issue 25 item 5): seconds from SIGKILLing one of three `feedeater run` hosts until a
survivor has polled every feed the dead host held, and how many feeds live hosts fetched twice.

    PYTHONPATH=$PWD .venv/bin/python bench/takeover.py [--feeds 300] [--slow-every 3] [--delay 25]

Embedded PostgreSQL + NATS in a temporary home, a loopback feed server, three hosts with the shipped
lease and poll trigger (`rss.lease_seconds`, the poll job's trigger: no overrides) and small claims so
the three share the work. Every `--slow-every`-th feed answers after `--delay` seconds: longer than a
lease (20 s), shorter than the fetch timeout (30 s), so a live host keeps such a feed only by renewing
its lease. Once half the slow fetches are in flight, the host holding the most leases is killed; the
clock runs from the kill until a survivor has polled the last of its feeds. "Fetched twice by live
hosts" counts feeds with more requests than one (plus one for a feed the dead host had started).
Reports the load average with the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.rss import store  # noqa: E402
from tests.feedserver import FeedServer, Route, ago, rss  # noqa: E402
from tests.services import HostProcess  # noqa: E402

ENV = {
    "FEEDEATER_RSS_POLL_BATCH": "40",  # small claims: all three hosts hold feeds
    "FEEDEATER_RSS_PER_HOST_CONCURRENCY": "50",  # every feed is on 127.0.0.1: no politeness limits
    "FEEDEATER_RSS_PER_HOST_RATE": "1000",
    "FEEDEATER_RSS_PER_HOST_BURST": "1000",
    "FEEDEATER_RSS_PARSE_WORKERS": "0",
    "FEEDEATER_HOST_EMBEDDER": "none",
}


async def waiting(hosts: list[HostProcess], what: str) -> None:
    """Sleep a little, or stop the run when a host that should be running has exited."""
    for h in hosts:
        if h.proc.poll() is not None:
            raise SystemExit(f"{h.host_id} exited while waiting for {what}:\n{h.output()[-2000:]}")
    await asyncio.sleep(0.2)


async def run(feeds: int, slow_every: int, delay: float) -> None:
    load0 = os.getloadavg()
    when = ago(hours=2)
    with tempfile.TemporaryDirectory(prefix="takeover-") as tmp, FeedServer() as server:
        setup = Host(HostConfig(Path(tmp) / "setup", None, None, "127.0.0.1", 0, "setup"))
        await setup.open()
        hosts: list[HostProcess] = []
        try:
            assert setup.endpoints is not None
            pool = setup.require_pool()
            slow = {i for i in range(feeds) if i % slow_every == 0}
            for i in range(feeds):
                body = rss([(f"{i}-0", f"Feed {i}", when, "text")])
                server.route(f"/f/{i}", Route(body=body, delay_s=delay if i in slow else 0.0))
            async with pool.acquire() as conn:
                ids = [(await store.add_feed(conn, url=server.url(f"/f/{i}")))[0].id for i in range(feeds)]
            path_of = dict(zip(ids, range(feeds), strict=True))
            db, nats = setup.endpoints.database_url, setup.endpoints.nats_url
            hosts = [HostProcess(Path(tmp) / f"h{k}", db, nats, f"host-{k}", **ENV) for k in range(3)]
            while sum(len(server.requests_to(f"/f/{i}")) > 0 for i in slow) < len(slow) // 2:
                await waiting(hosts, "half the slow feeds in flight")
            await asyncio.sleep(delay / 2)  # past one renewal: their leases outlived the first one
            row = await pool.fetchrow(
                """SELECT leased_by, array_agg(feed_id) AS feeds FROM mod_rss.poll_state
                   WHERE lease_until > now() GROUP BY leased_by ORDER BY count(*) DESC LIMIT 1"""
            )
            assert row is not None
            victim = next(h for h in hosts if h.host_id == row["leased_by"])
            orphans: list[int] = list(row["feeds"])
            victim.kill()
            killed = time.monotonic()
            killed_at = await pool.fetchval("SELECT now()")
            for i in slow:  # the servers recover: a taken-over feed answers at once
                server.route(f"/f/{i}", Route(body=rss([(f"{i}-0", f"Feed {i}", when, "text")])))
            query = """SELECT count(*) FROM mod_rss.poll_state
                       WHERE feed_id = ANY($1::bigint[]) AND last_polled_at > $2 AND lease_until IS NULL"""
            survivors = [h for h in hosts if h is not victim]
            while await pool.fetchval(query, orphans, killed_at) < len(orphans):
                await waiting(survivors, "the takeover")
            took = time.monotonic() - killed
            while await pool.fetchval("SELECT count(*) FROM mod_rss.poll_state WHERE successful_polls = 0"):
                await waiting(survivors, "every feed polled")
        finally:
            for h in hosts:
                h.stop()
            await setup.close(stop_started_services=True)
        counts = {f: len(server.requests_to(f"/f/{path_of[f]}")) for f in ids}
    twice_live = sum(1 for f, n in counts.items() if n > (2 if f in orphans else 1))
    print(f"feeds: {feeds} ({len(slow)} answer after {delay:.0f} s); shipped lease and poll trigger")
    print(f"killed {victim.host_id} holding {len(orphans)} leases")
    print(f"takeover: every orphan polled by a survivor {took:.1f} s after the kill")
    print(f"feeds fetched twice by live hosts: {twice_live}; orphans fetched again: {len(orphans)}")
    print(f"load avg at start {load0[0]:.2f} / at end {os.getloadavg()[0]:.2f}  (cores: {os.cpu_count()})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--feeds", type=int, default=300)
    ap.add_argument("--slow-every", type=int, default=3)
    ap.add_argument("--delay", type=float, default=25.0)
    args = ap.parse_args()
    asyncio.run(run(args.feeds, args.slow_every, args.delay))


if __name__ == "__main__":
    main()
