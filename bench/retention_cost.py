"""Retention cost against table size (issue 25 item 3): the same expiring entries in a small and a big
mod_rss.entries, deleted by main's one statement and by `store.expire_entries`' feed batches; then the
same expiry with the tombstones years of retention leave when none is pruned, and the pruning itself.

    PYTHONPATH=$PWD .venv/bin/python bench/retention_cost.py [--feeds 2000] [--expiring 20000]
                                                               [--young 100000 400000] [--tombstones 0 2000000]

Embedded PostgreSQL in a temporary home, the rss schema by its migrations. Entries are inserted with
SQL (triggers off: the search index and the embedding queue are not what is measured), each with 600
characters of text so a row is about the size of a stored entry's heap tuple; `--expiring` of them are
past the 90-day retention, `--young` are not. Each way of expiring runs inside a transaction that is
rolled back, three times; the best wall time is reported with the load average. At the biggest table,
`--tombstones` rows (unlisted for 60 days: prunable) are added before the feed batches run again, and
`store.prune_tombstones`' batches are timed the same way; bytes per tombstone (heap + primary key +
rss/0032's index) give the disk they take.
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
    """Best of three rolled-back runs: (seconds, rows expired or pruned)."""
    best, count = float("inf"), 0
    for _ in range(3):
        tr = conn.transaction()
        await tr.start()
        started = time.perf_counter()
        if way == "one statement":
            count = len(await conn.fetch(ONE_STATEMENT, 90))
        else:
            sql, days = (
                (entries._PRUNE_BATCH, 30) if way == "prune tombstones" else (entries._EXPIRE_BATCH, 90)
            )
            count, after = 0, 0
            while (
                row := await conn.fetchrow(sql, days, after, entries.EXPIRE_FEEDS_PER_BATCH)
            ) is not None and row["last"] is not None:
                count, after = count + row.get("n", row.get("expired", 0)), row["last"]
        best = min(best, time.perf_counter() - started)
        await tr.rollback()
    return best, count


TOMBSTONES = """INSERT INTO mod_rss.tombstones (feed_id, guid, deleted_at)
    SELECT $2 + g % $3, 'tomb' || g, now() - interval '70 days' FROM generate_series(1, $1) AS g"""


async def with_tombstones(conn: asyncpg.Connection, feeds: int, first: int, counts: list[int]) -> None:
    """Expiry with more and more tombstones standing, and the pruning of those tombstones (when the code
    measured has it: the script also runs against main's checkout, PYTHONPATH to a `git archive`)."""
    have, prunes = 0, hasattr(entries, "_PRUNE_BATCH")
    for n in counts:
        sql = TOMBSTONES.replace("'tomb' || g", f"'tomb{n}-' || g")
        if prunes:  # unlisted for 60 days: prunable
            sql = sql.replace("deleted_at)", "deleted_at, listed_at)").replace(
                "'70 days'", "'70 days', now() - interval '60 days'"
            )
        await conn.execute(sql, n - have, first, feeds)
        await conn.execute("ANALYZE mod_rss.tombstones")
        have = n
        size = await conn.fetchval("SELECT pg_total_relation_size('mod_rss.tombstones')")
        per = f", {size / n:.0f} B each" if n else ""
        print(f"tombstones: {n:,}, {size / 1e6:,.0f} MB{per}; load {os.getloadavg()[0]:.2f}")
        for way in ("feed batches", "prune tombstones")[: 1 + prunes]:
            seconds, count = await timed(conn, way)
            print(f"  {way:16} {seconds * 1000:8.0f} ms  {count:,} rows")


async def run(feeds: int, expiring: int, young: list[int], tombstones: list[int]) -> None:
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
                await with_tombstones(conn, feeds, first, tombstones)
        finally:
            await host.close(stop_started_services=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--feeds", type=int, default=2000)
    ap.add_argument("--expiring", type=int, default=20000)
    ap.add_argument("--young", type=int, nargs="+", default=[100_000, 400_000])
    ap.add_argument("--tombstones", type=int, nargs="+", default=[0, 2_000_000])
    args = ap.parse_args()
    asyncio.run(run(args.feeds, args.expiring, args.young, args.tombstones))


if __name__ == "__main__":
    main()
