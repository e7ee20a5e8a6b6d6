"""What full-text indexing costs on the insert path (issue 25 item 2): PostgreSQL CPU and WAL bytes per
stored entry, the corpus's entries written by `store.write` as a first poll writes them.

    PYTHONPATH=$PWD .venv/bin/python bench/insert_cost.py [--corpus DIR] [--rounds 2]

Embedded PostgreSQL in a temporary home, the rss schema by its migrations, one connection (its backend's
CPU is read from /proc through psutil), one transaction per feed document. Ways, alternated each round,
the table emptied and a CHECKPOINT before each (so full-page writes weigh the same):
- "as is": the search_tsv trigger and its GIN index on the insert path (main);
- "10 per transaction": as is, ten documents' entries per transaction (what grouping feeds' writes
  into one commit would save in PostgreSQL CPU; a commit's fsync is wall time, not CPU);
- "GIN pending 64": as is, the GIN index's pending list 64 MB instead of 4 MB (fewer, bigger merges);
- "GIN no fastupdate": as is, the GIN index built WITH (fastupdate = off): entries go straight into
  the index instead of its pending list (written once, not twice);
- "tsv, no GIN": the trigger fills the column, the GIN index dropped (splits the cost: the stored
  tsvector against its index);
- "no full text": trigger disabled and GIN index dropped: the most deferring indexing could take off
  the insert path;
- "deferred fill": the second way's inserts, then what a job filling `search_tsv` afterwards costs as
  an UPDATE of each row, with the GIN index back (the deferred design that keeps the column).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncpg  # noqa: E402
import psutil  # noqa: E402

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.rss.ingest import diff, processors  # noqa: E402
from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402
from modules.rss.store import entries  # noqa: E402

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
WAYS = (
    "as is",
    "10 per transaction",
    "GIN pending 64",
    "GIN no fastupdate",
    "tsv, no GIN",
    "no full text",
    "deferred fill",
)
GIN = "CREATE INDEX entries_search_tsv ON mod_rss.entries USING gin (search_tsv)"


def documents(corpus: Path) -> list[diff.Intents]:
    """Every parsable corpus document as a first poll's intents (feed ids 1..n)."""
    out = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "manifest.json"):
        try:
            parsed = parse_feed(path.read_bytes(), url=f"https://example.com/{path.name}", now=NOW)
        except FeedParseError:
            continue
        out.append(
            processors.run(
                diff.diff(
                    parsed.entries,
                    {},
                    set(),
                    feed_id=len(out) + 1,
                    feed_title=parsed.title or "",
                    now=NOW,
                    first_poll=True,
                    lookback_hours=48,
                )
            )
        )
    return out


class Meter:
    """PostgreSQL backend CPU seconds and WAL bytes between two points."""

    def __init__(self, conn: asyncpg.Connection, backend: psutil.Process) -> None:
        self.conn, self.backend = conn, backend

    async def start(self) -> None:
        self.cpu = sum(self.backend.cpu_times()[:2])
        self.lsn = await self.conn.fetchval("SELECT pg_current_wal_lsn()")

    async def read(self) -> tuple[float, int]:
        wal = await self.conn.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint", self.lsn)
        return sum(self.backend.cpu_times()[:2]) - self.cpu, int(wal)


async def write_all(conn: asyncpg.Connection, docs: list[diff.Intents], per_transaction: int = 1) -> int:
    stored = 0
    for at in range(0, len(docs), per_transaction):
        async with conn.transaction():
            for intents in docs[at : at + per_transaction]:
                stored += len(await entries.write(conn, intents))
    return stored


async def one_way(conn: asyncpg.Connection, meter: Meter, way: str, docs: list[diff.Intents]) -> list[str]:
    await conn.execute("TRUNCATE mod_rss.entries CASCADE")
    trigger = way in ("as is", "10 per transaction", "GIN pending 64", "GIN no fastupdate", "tsv, no GIN")
    await conn.execute(
        f"ALTER TABLE mod_rss.entries {'ENABLE' if trigger else 'DISABLE'} TRIGGER entries_search_tsv"
    )
    await conn.execute("DROP INDEX IF EXISTS mod_rss.entries_search_tsv")
    if way in ("as is", "10 per transaction"):
        await conn.execute(GIN)
    elif way == "GIN pending 64":
        await conn.execute(GIN + " WITH (gin_pending_list_limit = 65536)")
    elif way == "GIN no fastupdate":
        await conn.execute(GIN + " WITH (fastupdate = off)")
    await conn.execute("CHECKPOINT")
    await meter.start()
    n = await write_all(conn, docs, 10 if way == "10 per transaction" else 1)
    if way in ("as is", "10 per transaction", "GIN pending 64"):  # what is still pending is merged too:
        # a pending list the run did not fill would leave its merge (the GIN's real cost) uncounted
        await conn.execute("SELECT gin_clean_pending_list('mod_rss.entries_search_tsv'::regclass)")
    cpu, wal = await meter.read()
    lines = [
        f"{way:18} {n:6} entries  {cpu / n * 1e3:7.3f} ms PostgreSQL CPU  {wal / n:9,.0f} B WAL per entry"
    ]
    if way == "deferred fill":
        await conn.execute(GIN)
        await conn.execute("CHECKPOINT")
        await meter.start()
        await conn.execute(
            "UPDATE mod_rss.entries SET search_tsv = mod_rss.search_document(title, content_text)"
        )
        cpu2, wal2 = await meter.read()
        lines.append(
            f"{'  + the fill':18} {n:6} entries  {cpu2 / n * 1e3:7.3f} ms PostgreSQL CPU  {wal2 / n:9,.0f} B WAL per entry"
            f"  (total {(cpu + cpu2) / n * 1e3:.3f} ms, {(wal + wal2) / n:,.0f} B)"
        )
    return lines


async def run(corpus: Path, rounds: int) -> None:
    docs = documents(corpus)
    print(f"{len(docs)} documents, {sum(len(d.new) for d in docs):,} new entries; load {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="insertcost-") as tmp:
        host = Host(HostConfig(Path(tmp), None, None, "127.0.0.1", 0, "bench"))
        await host.open(with_bus=False)
        try:
            async with host.require_pool().acquire() as conn:
                await conn.execute(
                    "INSERT INTO mod_rss.feeds (id, url) SELECT g, 'https://example.com/' || g FROM generate_series(1, $1) g",
                    len(docs),
                )
                meter = Meter(conn, psutil.Process(await conn.fetchval("SELECT pg_backend_pid()")))
                for r in range(rounds):
                    print(f"round {r + 1}, load {os.getloadavg()[0]:.2f}")
                    for way in WAYS:
                        for line in await one_way(conn, meter, way, docs):
                            print("  " + line)
        finally:
            await host.close(stop_started_services=True)
    print(f"load {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "fixtures" / "realworld")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    asyncio.run(run(args.corpus, args.rounds))


if __name__ == "__main__":
    main()
