"""Digest costs: dedup per incoming article with 100,000 articles stored, and a morning digest over a
10,000-article window; memory.

Data: sentences of the real-world corpus (../shared/fixtures) recombined into N synthetic articles
(titles of 6–12 words and bodies of 80–400 words drawn from the corpus's own sentences, so word
frequencies and lengths are real), published over 30 days, with `--window` of them in the last 24 h.
Features are computed as intake does (cached in /tmp per size and feature-code version) and loaded with
COPY, with their lookup keys. Then `--incoming` new articles (half of them
edited copies of stored ones) go through the real intake (`ingest_many`: features, candidate query,
decisions, insert) once per `--batch` size: 1 = one article per transaction, 50 = a subscription's
delivery per transaction (what the digest subscriptions get); each delivery's time is shared by its articles. Then `digest build` work for the morning window: the
window query and the pure assembly (score, cluster, sections, self-checks, render), timed apart.

    .venv/bin/python bench/digest_cost.py [--articles 100000] [--window 10000] [--incoming 1000] [--batch 1,50] [--profile]

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME. Results: stdout, bench/results/digest_cost.json.
Targets: dedup p95 ≤ 5 ms per article; morning digest over 10,000 articles ≤ 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import os
import pickle
import pstats
import random
import re
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import asyncpg

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import digest_data  # noqa: E402
from bench.digest_data import _article, _edit, real_entries  # noqa: E402
from bench.measure import cpu_tree_s  # noqa: E402
from modules.digest.assemble import build as assemble  # noqa: E402
from modules.digest.assemble import render  # noqa: E402
from modules.digest.dedup import layers  # noqa: E402
from modules.digest.dedup.features import features  # noqa: E402
from modules.digest.dedup.layers import Features  # noqa: E402
from modules.digest.intake.handler import ingest, ingest_many  # noqa: E402
from modules.digest.model import Article  # noqa: E402
from modules.digest.settings import TYPES  # noqa: E402
from modules.digest.store import articles as store  # noqa: E402

NOW = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)
COLUMNS = (
    "id", "message_id", "source_module", "stream", "source_name", "domain", "title", "url", "canonical_url",
    "body", "word_count", "published_at", "date_uncertain", "partial_content", "content_hash", "depth_signals",
    "title_tokens", "minhash", "simhash", "entities", "disposition", "layer", "cluster_id", "event_id",
    "text_hash", "markers",
)  # fmt: skip
CHUNK = 5000
Chunk = list[tuple[int, Article, Features]]


def sentence_pool() -> list[str]:
    pool = []
    for _, _, _, text in real_entries(min_words=20):
        pool.extend(s for s in re.split(r"(?<=[.!?])\s+", text) if 6 <= len(s.split()) <= 60)
    return pool


def synthetic(rng: random.Random, pool: list[str], n: int, when: datetime) -> Article:
    title = " ".join(rng.choice(pool).split()[: rng.randint(6, 12)])
    body: list[str] = []
    target = rng.randint(80, 400)
    while sum(len(s.split()) for s in body) < target:
        body.append(rng.choice(pool))
    feed = f"feed-{rng.randrange(500)}"
    return _article(feed, title, f"https://{feed}.example/{n}", " ".join(body), when, n)


def row(i: int, a: Article, f: Features) -> tuple[Any, ...]:
    return (
        i, a.message_id, a.source_module, a.stream, a.source_name, a.domain, a.title, a.url, f.canonical_url,
        a.body, a.word_count, a.published_at, False, False, a.content_hash, [], sorted(f.title_tokens),
        list(f.minhash), f.simhash, sorted(f.entities), "unique", "none", i, i, f.text_hash, sorted(f.markers),
    )  # fmt: skip


def dataset(args: argparse.Namespace, pool: list[str]) -> Iterator[Chunk]:
    """The stored articles with their features, in chunks; cached in /tmp per size and per version of the
    feature code (features of 100,000 articles take minutes of CPU on a shared machine)."""
    sources = [*sorted((REPO / "modules" / "digest" / "dedup").glob("*.py")), REPO / "modules/digest/text.py"]
    code = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"digest-cost-{args.articles}-{args.window}-{code}.pickle"
    if path.exists():
        with path.open("rb") as fh:
            while True:
                try:
                    yield pickle.load(fh)
                except EOFError:
                    return
    rng = random.Random(11)
    partial = path.with_suffix(".partial")
    with partial.open("wb") as fh:
        chunk: Chunk = []
        for i in range(1, args.articles + 1):
            recent = i > args.articles - args.window
            when = NOW - timedelta(hours=rng.uniform(0, 23.9) if recent else rng.uniform(24, 720))
            a = synthetic(rng, pool, i, when)
            chunk.append((i, a, features(a)))
            if len(chunk) == CHUNK or i == args.articles:
                pickle.dump(chunk, fh)
                yield chunk
                chunk = []
    partial.rename(path)


async def load(db: asyncpg.Pool, chunks: Iterator[Chunk]) -> list[Article]:
    """COPY the articles and their lookup keys (words hashed in SQL as intake does); every 97th article
    is returned as an original that incoming copies are made from."""
    stored: list[Article] = []
    last = 0
    async with db.acquire() as conn:
        await conn.execute("CREATE UNLOGGED TABLE bench_words (word text, at timestamptz, article_id bigint)")
        for chunk in chunks:
            bands, words = [], []
            for i, a, f in chunk:
                band_keys, title_words, entity_words = store.lookup_keys(f, layers.DEFAULT)
                bands.extend((k, a.published_at, i) for k in set(band_keys))
                words.extend((f"t:{w}", a.published_at, i) for w in title_words)
                words.extend((f"e:{e}", a.published_at, i) for e in entity_words)
                if i % 97 == 0:
                    stored.append(a)
            await conn.copy_records_to_table(
                "articles",
                schema_name="mod_digest",
                records=[row(i, a, f) for i, a, f in chunk],
                columns=COLUMNS,
            )
            await conn.copy_records_to_table("dedup_keys", schema_name="mod_digest", records=bands)
            await conn.copy_records_to_table("bench_words", records=words)
            last = chunk[-1][0]
            print(f"  loaded {last}", flush=True)
        await conn.execute(
            """INSERT INTO mod_digest.dedup_keys SELECT DISTINCT hashtextextended(word, 0), at, article_id
               FROM bench_words; DROP TABLE bench_words"""
        )
        await conn.execute(f"SELECT setval('mod_digest.articles_id_seq', {last})")
        await conn.execute("VACUUM ANALYZE mod_digest.articles")
        await conn.execute("VACUUM ANALYZE mod_digest.dedup_keys")
    return stored


def pct(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1], 2)


def incoming(rng: random.Random, pool: list[str], stored: list[Article], k: int) -> Article:
    """Half edited copies of stored articles (another feed, 2 % of words changed), half new ones."""
    if k % 2:
        base = rng.choice(stored)
        when = base.published_at + timedelta(hours=rng.uniform(0.5, 20))
        body = _edit(base.body, rng, 0.02)
        return _article(f"copy-{k % 50}", base.title, f"https://copy-{k}.example/x", body, when, 10**7 + k)
    return synthetic(rng, pool, 10**7 + k, NOW - timedelta(hours=rng.uniform(0, 20)))


async def dedup(db: asyncpg.Pool, home: Path, rng: random.Random, pool: list[str], stored: list[Article],
                n: int, batch: int, run: int) -> dict[str, Any]:  # fmt: skip
    """`n` incoming articles through the real intake, `batch` per transaction as a subscription delivery
    hands them (1: one at a time): wall time per article (a delivery's time shared by its articles) and
    per delivery, CPU per article (this process; PostgreSQL: all its processes, and this connection's
    backend alone), the load meanwhile."""
    arrivals = [incoming(rng, pool, stored, run * n + k) for k in range(n)]  # new message ids every run
    costs, deliveries, dispositions = [], [], Counter[str]()
    async with db.acquire() as conn:
        backend = conn.get_server_pid()  # this connection's server process alone (no autovacuum, WAL writer)
        before, backend_before = digest_data.machine(home), cpu_tree_s(backend)
        t0 = time.process_time()
        for start in range(0, n, batch):
            part = arrivals[start : start + batch]
            t = time.perf_counter()
            async with conn.transaction():
                decisions = await ingest_many(conn, part)
            took = (time.perf_counter() - t) * 1000
            deliveries.append(took)
            costs.extend([took / len(part)] * len(part))
            dispositions.update(d.disposition for d in decisions)
        cpu = time.process_time() - t0
        after, backend_after = digest_data.machine(home), cpu_tree_s(backend)
    return {
        "batch": batch,
        "wall_ms": {"p50": pct(costs, 50), "p95": pct(costs, 95), "p99": pct(costs, 99),
                    "mean": round(statistics.fmean(costs), 2)},
        "delivery_wall_ms": {"p50": pct(deliveries, 50), "p95": pct(deliveries, 95)} if len(deliveries) > 1 else {},
        "cpu_ms_per_article": {"python": round(1000 * cpu / n, 2),
                               "postgres": round(1000 * (after["postgres_cpu_s"] - before["postgres_cpu_s"]) / n, 2),
                               "postgres_backend": round(1000 * (backend_after - backend_before) / n, 2)},
        "load_avg_before_after": [before["load_avg_1m"], after["load_avg_1m"]],
        "dispositions": dict(dispositions),
    }  # fmt: skip


class Explained:
    """Stands in for the connection `ingest` writes through: every statement it sends is run as
    EXPLAIN (ANALYZE, BUFFERS) and the plan printed (a write is then not repeated: its result is 0)."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def _plan(self, sql: str, args: tuple[Any, ...]) -> None:
        print("\n".join(r[0] for r in await self.conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *args)))

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        await self._plan(sql, args)
        return await self.conn.fetch(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> int:
        await self._plan(sql, args)
        return 0

    execute = fetchval


async def explain(db: asyncpg.Pool, arrivals: list[Article]) -> None:
    """The plans of the candidate lookup and the insert of a new article and of a copy (rolled back)."""
    async with db.acquire() as conn:
        for a in arrivals:
            tx = conn.transaction()
            await tx.start()
            print(f"--- ingest {a.title!r}", flush=True)
            await ingest(cast(asyncpg.Connection, Explained(conn)), a)
            await tx.rollback()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    pool = sentence_pool()
    host = await digest_data.bench_host("digest-cost-")
    home = host.config.home
    result: dict[str, Any] = {"articles": args.articles, "window": args.window, "cpus": os.cpu_count(),
                              "start": digest_data.machine(home)}  # fmt: skip
    try:
        db = host.require_pool()
        t = time.perf_counter()
        stored = await load(db, dataset(args, pool))
        result["load_s"] = round(time.perf_counter() - t, 1)
        if args.explain:
            await explain(db, [synthetic(random.Random(5), pool, 10**8, NOW - timedelta(hours=3)),
                               incoming(random.Random(6), pool, stored, 1)])  # fmt: skip
        rng = random.Random(12)
        result["dedup"] = []
        for run, size in enumerate(int(b) for b in args.batch.split(",")):  # same data and load, side by side
            result["dedup"].append(await dedup(db, home, rng, pool, stored, args.incoming, size, run))
            print(result["dedup"][-1], flush=True)
        if args.profile:  # one more run of the last size, under cProfile (slower: not measured)
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            await dedup(db, home, rng, pool, stored, args.incoming, size, run + 1)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        sample = [synthetic(rng, pool, 2 * 10**7 + k, NOW) for k in range(300)]
        t = time.process_time()
        for a in sample:
            features(a)
        result["features_cpu_ms_mean"] = round((time.process_time() - t) * 1000 / len(sample), 2)
        result["morning_digest"] = await morning(db, home)
        result["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        async with db.acquire() as conn:
            result["table_mb"] = round(
                await conn.fetchval(
                    "SELECT pg_total_relation_size('mod_digest.articles') + pg_total_relation_size('mod_digest.dedup_keys')"
                ) / 2**20, 1
            )  # fmt: skip
        result["end"] = digest_data.machine(home)
    finally:
        await host.close(stop_started_services=True)
    return result


async def morning(db: asyncpg.Pool, home: Path) -> dict[str, Any]:
    """`digest build` work for the morning window: the window query, then the pure assembly (score,
    cluster, sections, self-checks, summaries, render), timed apart, with CPU and load."""
    kind = TYPES["morning"]
    start, end = NOW - kind.window, NOW
    before = digest_data.machine(home)
    t, c = time.perf_counter(), time.process_time()
    async with db.acquire() as conn:
        rows = await store.window(conn, start, end + timedelta(seconds=1))
    query_s = time.perf_counter() - t
    for r in rows:
        r["health"] = None
    options = assemble.Options(kind=kind, start=start, end=end, now=NOW)
    t = time.perf_counter()
    digest = assemble.build(rows, {}, options)
    markdown = render.markdown(digest)
    build_s = time.perf_counter() - t
    cpu = time.process_time() - c
    after = digest_data.machine(home)
    tracemalloc.start()  # a second, untimed pass: tracemalloc doubles Python's run time
    assemble.build(rows, {}, options)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "window_articles": len(rows),
        "query_s": round(query_s, 2),
        "assemble_s": round(build_s, 2),
        "total_s": round(query_s + build_s, 2),
        "python_cpu_s": round(cpu, 2),
        "load_avg_before_after": [before["load_avg_1m"], after["load_avg_1m"]],
        "python_peak_mb": round(peak / 2**20, 1),
        "items": len(digest.items),
        "markdown_chars": len(markdown),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=10_000)
    parser.add_argument("--incoming", type=int, default=1000)
    parser.add_argument("--batch", default="1,50", help="articles per delivery, one dedup run per size")
    parser.add_argument("--profile", action="store_true", help="then profile a run of the last size (CPU)")
    parser.add_argument("--explain", action="store_true", help="print the plans of the lookup and the insert")
    result = asyncio.run(run(parser.parse_args()))
    digest_data.report("digest_cost", result)


if __name__ == "__main__":
    main()
