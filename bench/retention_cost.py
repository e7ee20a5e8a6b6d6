"""Retention cost against table size (issue 25 item 3): the same expiring entries in a small and a big
mod_rss.entries, deleted by main's one statement and by `store.expire_entries`' feed batches.

    PYTHONPATH=$PWD .venv/bin/python bench/retention_cost.py [--feeds 2000] [--expiring 20000]
                                                               [--young 100000 400000]

Embedded PostgreSQL in a temporary home, the rss schema by its migrations. Entries are inserted with
SQL (triggers off: the search index and the embedding queue are not what is measured), each with 600
characters of text so a row is about the size of a stored entry's heap tuple; `--expiring` of them are
past the 90-day retention, `--young` are not. Each way of expiring runs inside a transaction that is
rolled back, three times; the best wall time is reported with the load average.
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

import asyncpg  # noqa: E402

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.rss.store import entries  # noqa: E402

# Main's retention (before issue 25): one DELETE joined over every feed, in one transaction.
ONE_STATEMENT = """WITH gone AS (
        DELETE FROM mod_rss.entries e USING mod_rss.feeds f
        WHERE f.id = e.feed_id AND e.effective_at < now() - make_interval(days => coalesce(f.retention_days, $1))
        RETURNING e.feed_id, e.guid)
    INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone
    ON CONFLICT DO NOTHING RETURNING 1"""

SEED = """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, content_hash, content_text,
                                   first_seen, last_seen, effective_at)
    SELECT f, $4 || g, 'guid', gen_random_uuid(), 'h', repeat('x', 600), t, t, t
    FROM generate_series(1, $1) AS g,
         LATERAL (SELECT $2 + g % $3 AS f, now() - make_interval(days => $5) - (g % 1000) * interval '1 minute' AS t) x"""


async def seed(conn: asyncpg.Connection, feeds: int, n: int, tag: str, days_ago: int, first: int) -> None:
    await conn.execute("SET session_replication_role = replica")  # no triggers while seeding
    await conn.execute(SEED, n, first, feeds, tag, days_ago)
    await conn.execute("RESET session_replication_role")
    await conn.execute("ANALYZE mod_rss.entries")


async def timed(conn: asyncpg.Connection, way: str) -> tuple[float, int]:
    """Best of three rolled-back runs: (seconds, entries expired)."""
    best, count = float("inf"), 0
    for _ in range(3):
        tr = conn.transaction()
        await tr.start()
        started = time.perf_counter()
        if way == "one statement":
            count = len(await conn.fetch(ONE_STATEMENT, 90))
        else:
            count, after = 0, 0
            while (
                row := await conn.fetchrow(entries._EXPIRE_BATCH, 90, after, entries.EXPIRE_FEEDS_PER_BATCH)
            ) is not None and row["last"] is not None:
                count, after = count + row["expired"], row["last"]
        best = min(best, time.perf_counter() - started)
        await tr.rollback()
    return best, count


async def run(feeds: int, expiring: int, young: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="retention-") as tmp:
        host = Host(HostConfig(Path(tmp), None, None, "127.0.0.1", 0, "bench"))
        await host.open(with_bus=False)
        try:
            async with host.require_pool().acquire() as conn:
                await conn.execute(
                    "INSERT INTO mod_rss.feeds (url) SELECT 'http://f.example/' || g FROM generate_series(1, $1) g",
                    feeds,
                )
                first = await conn.fetchval("SELECT min(id) FROM mod_rss.feeds")
                await seed(conn, feeds, expiring, "old-", 120, first)
                have = 0
                for n in young:
                    await seed(conn, feeds, n - have, f"young{n}-", 10, first)
                    have = n
                    size = await conn.fetchval("SELECT pg_total_relation_size('mod_rss.entries')")
                    print(
                        f"entries: {expiring + n:,} ({expiring:,} expiring), {size / 1e6:,.0f} MB; load {os.getloadavg()[0]:.2f}"
                    )
                    for way in ("one statement", "feed batches"):
                        seconds, count = await timed(conn, way)
                        print(f"  {way:14} {seconds * 1000:8.0f} ms  expired {count:,}")
        finally:
            await host.close(stop_started_services=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--feeds", type=int, default=2000)
    ap.add_argument("--expiring", type=int, default=20000)
    ap.add_argument("--young", type=int, nargs="+", default=[100_000, 400_000])
    args = ap.parse_args()
    asyncio.run(run(args.feeds, args.expiring, args.young))


if __name__ == "__main__":
    main()
