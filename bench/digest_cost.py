"""Digest costs: dedup per incoming article with 100,000 articles stored, and a morning digest over a
10,000-article window; memory.

Data: sentences of the real-world corpus (../shared/fixtures) recombined into N synthetic articles
(titles of 6–12 words and bodies of 80–400 words drawn from the corpus's own sentences, so word
frequencies and lengths are real), published over 30 days, with `--window` of them in the last 24 h.
Features are computed as intake does and loaded with COPY. Then `--incoming` new articles (half of them
edited copies of stored ones) go through the real intake (`ingest`: features, candidate query, decision,
insert), one transaction each, timed per article. Then `digest build` work for the morning window: the
window query and the pure assembly (score, cluster, sections, self-checks, render), timed apart.

    .venv/bin/python bench/digest_cost.py [--articles 100000] [--window 10000] [--incoming 1000]

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME. Results: stdout, bench/results/digest_cost.json.
Targets: dedup p95 ≤ 5 ms per article; morning digest over 10,000 articles ≤ 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import resource
import statistics
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import digest_data  # noqa: E402
from bench.digest_data import _article, _edit, real_entries  # noqa: E402
from modules.digest.assemble import build as assemble  # noqa: E402
from modules.digest.assemble import render  # noqa: E402
from modules.digest.dedup import fingerprint, layers  # noqa: E402
from modules.digest.dedup.features import features  # noqa: E402
from modules.digest.intake.handler import ingest  # noqa: E402
from modules.digest.model import Article  # noqa: E402
from modules.digest.settings import TYPES  # noqa: E402
from modules.digest.store import articles as store  # noqa: E402

NOW = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)
COLUMNS = (
    "id", "message_id", "source_module", "stream", "source_name", "domain", "title", "url", "canonical_url",
    "body", "word_count", "published_at", "date_uncertain", "partial_content", "content_hash", "depth_signals",
    "title_tokens", "bands", "minhash", "simhash", "entities", "disposition", "layer", "cluster_id",
)  # fmt: skip


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


def row(i: int, a: Article) -> tuple[Any, ...]:
    f = features(a)
    return (
        i, a.message_id, a.source_module, a.stream, a.source_name, a.domain, a.title, a.url, f.canonical_url,
        a.body, a.word_count, a.published_at, False, False, a.content_hash, [], sorted(f.title_tokens),
        fingerprint.bands(f.minhash), list(f.minhash), f.simhash, sorted(f.entities), "unique", "none", i,
    )  # fmt: skip


def pct(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1], 2)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(11)
    pool = sentence_pool()
    host = await digest_data.bench_host("digest-cost-")
    result: dict[str, Any] = {"articles": args.articles, "window": args.window, "cpus": os.cpu_count(),
                              "load_avg_start": os.getloadavg()[0]}  # fmt: skip
    try:
        db = host.require_pool()
        t = time.perf_counter()
        stored: list[Article] = []
        batch: list[tuple[Any, ...]] = []
        for i in range(1, args.articles + 1):
            recent = i > args.articles - args.window
            when = NOW - timedelta(hours=rng.uniform(0, 23.9) if recent else rng.uniform(24, 720))
            a = synthetic(rng, pool, i, when)
            if i % 97 == 0:
                stored.append(a)
            batch.append(row(i, a))
            if len(batch) == 5000:
                async with db.acquire() as conn:
                    await conn.copy_records_to_table(
                        "articles", schema_name="mod_digest", records=batch, columns=COLUMNS
                    )
                batch = []
                print(f"  loaded {i}", flush=True)
        if batch:
            async with db.acquire() as conn:
                await conn.copy_records_to_table(
                    "articles", schema_name="mod_digest", records=batch, columns=COLUMNS
                )
        async with db.acquire() as conn:
            await conn.execute(f"SELECT setval('mod_digest.articles_id_seq', {args.articles})")
            await conn.execute("ANALYZE mod_digest.articles")
        result["load_s"] = round(time.perf_counter() - t, 1)

        if args.explain:
            a = synthetic(rng, pool, 10**8, NOW - timedelta(hours=3))
            sql, params = store.candidate_query(features(a), layers.DEFAULT)
            async with db.acquire() as conn:
                plan = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *params)
            print("\n".join(r[0] for r in plan))
        costs, dispositions = [], {}
        for k in range(args.incoming):
            if k % 2:
                base = rng.choice(stored)
                when = base.published_at + timedelta(hours=rng.uniform(0.5, 20))
                a = _article(
                    f"copy-{k % 50}",
                    base.title,
                    f"https://copy-{k}.example/x",
                    _edit(base.body, rng, 0.02),
                    when,
                    10**7 + k,
                )
            else:
                a = synthetic(rng, pool, 10**7 + k, NOW - timedelta(hours=rng.uniform(0, 20)))
            t = time.perf_counter()
            async with db.acquire() as conn, conn.transaction():
                d = await ingest(conn, a)
            costs.append((time.perf_counter() - t) * 1000)
            dispositions[d.disposition] = dispositions.get(d.disposition, 0) + 1
        result["dedup_ms"] = {"p50": pct(costs, 50), "p95": pct(costs, 95), "p99": pct(costs, 99),
                              "mean": round(statistics.fmean(costs), 2)}  # fmt: skip
        result["incoming_dispositions"] = dispositions
        sample = [synthetic(rng, pool, 2 * 10**7 + k, NOW) for k in range(300)]
        t = time.perf_counter()
        for a in sample:
            features(a)
        result["features_ms_mean"] = round((time.perf_counter() - t) * 1000 / len(sample), 2)

        kind = TYPES["morning"]
        start, end = NOW - kind.window, NOW
        t = time.perf_counter()
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
        tracemalloc.start()  # a second, untimed pass: tracemalloc doubles Python's run time
        assemble.build(rows, {}, options)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result["morning_digest"] = {
            "window_articles": len(rows),
            "query_s": round(query_s, 2),
            "assemble_s": round(build_s, 2),
            "total_s": round(query_s + build_s, 2),
            "python_peak_mb": round(peak / 2**20, 1),
            "items": len(digest.items),
            "markdown_chars": len(markdown),
        }
        result["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        async with db.acquire() as conn:
            result["table_mb"] = round(
                await conn.fetchval("SELECT pg_total_relation_size('mod_digest.articles')") / 2**20, 1
            )
        result["load_avg_end"] = os.getloadavg()[0]
    finally:
        await host.close(stop_started_services=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=10_000)
    parser.add_argument("--incoming", type=int, default=1000)
    parser.add_argument("--explain", action="store_true", help="print the candidate query's plan")
    result = asyncio.run(run(parser.parse_args()))
    digest_data.report("digest_cost", result)


if __name__ == "__main__":
    main()
