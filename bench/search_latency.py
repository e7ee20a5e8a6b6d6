"""Hybrid search latency at 100,000 entries, and HNSW recall against exact search.

Data (synthetic, deterministic): N entries in 200 feeds / 20 folders; titles and bodies drawn from a
20,000-word vocabulary with a Zipf distribution (so common words match many entries, as in real text);
384-dimensional unit vectors around 500 cluster centres (real embeddings are clustered too). Loaded with
COPY, vectors attached as the embed job would leave them, then the HNSW index built by `ensure_index`.

Queries: --words words (2 by default; 8 is a described article, which also runs the rare-word side)
taken from a random entry, and that entry's vector plus noise. Each goes through the
Python API, `modules.rss.search.query.search` (vector side + text side + fusion + snippets), with an embedder
stub returning the precomputed query vector, so the numbers are the search's own; the local model's query
embedding time is measured separately. HNSW recall@10: the vector side's top 10 (as search runs it) vs
an exact scan (the same distance without the indexed expression, so no index).

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME, stopped at the end.
Results: a table on stdout and bench/results/search_latency.json. Targets: p50 ≤ 20 ms, p99 ≤ 100 ms,
recall@10 ≥ 0.95.

    .venv/bin/python bench/search_latency.py [--entries 100000] [--queries 300] [--words 2] [--explain]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from measure import cpu_tree_s, write_results  # noqa: E402  (bench/ is on sys.path when run as a script)

from bench import seed_entries  # noqa: E402
from host.ai import AIServices, LocalEmbedder  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.rss.search.query import (  # noqa: E402
    CoverageCache,
    SearchQuery,
    _vector_side,
    candidates_per_side,
    search,
)
from modules.rss.store import embeddings  # noqa: E402

DIMS = 384
MODEL = "synthetic"
TARGETS = {"p50_ms": 20.0, "p99_ms": 100.0, "hnsw_recall_at_10": 0.95}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FixedVectors:
    """The query's vector without a model in the loop (measured apart)."""

    model = MODEL

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ru",
        "sa",
        "ti",
        "vo",
        "ze",
        "po",
        "da",
        "gu",
        "fe",
        "bi",
        "ho",
        "ju",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables, size=rng.integers(2, 5))))
    return sorted(words)


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


async def load(
    host: Host, n: int, rng: np.random.Generator
) -> tuple[list[str], np.ndarray, dict[str, float]]:
    words = vocabulary(20_000, rng)
    zipf = 1.0 / np.arange(1, len(words) + 1) ** 1.07
    zipf /= zipf.sum()
    centres = unit(rng.standard_normal((500, DIMS)))
    vectors = unit(centres[rng.integers(0, 500, n)] + 0.6 * unit(rng.standard_normal((n, DIMS)))).astype(
        np.float32
    )
    texts = [" ".join(words[i] for i in rng.choice(len(words), size=66, p=zipf)) for _ in range(n)]
    pool = host.require_pool()
    timings: dict[str, float] = {}
    async with pool.acquire() as conn:
        started = time.perf_counter()
        await conn.executemany(
            "INSERT INTO mod_rss.feeds (url, title, folder) VALUES ($1, $2, $3)",
            [(f"https://example.com/{f}.xml", f"Feed {f}", f"Folder{f % 20}/Sub{f % 3}") for f in range(200)],
        )
        feed_ids = [r["id"] for r in await conn.fetch("SELECT id FROM mod_rss.feeds ORDER BY id")]
        records = []
        for i, text in enumerate(texts):
            title, body = " ".join(text.split()[:6]), " ".join(text.split()[6:])
            at = NOW - timedelta(minutes=i)
            records.append(
                seed_entries.record(
                    feed_ids[i % 200], i, title, body, hashlib.sha256(text.encode()).hexdigest(), at
                )
            )
        await seed_entries.copy_entries(conn, records)
        timings["load_entries_s"] = time.perf_counter() - started
        started = time.perf_counter()
        await conn.execute("CREATE TEMP TABLE vecs (entry_id bigint, embedding vector)")
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM mod_rss.entries ORDER BY id")]
        await conn.copy_records_to_table("vecs", records=list(zip(ids, vectors, strict=True)))
        await conn.execute(
            f"""UPDATE mod_rss.entry_embeddings x SET embedding = v.embedding, dims = {DIMS}, model = '{MODEL}',
                    status = 'done', embedded_hash = e.content_hash, embedded_at = now()
                FROM vecs v, mod_rss.entries e WHERE x.entry_id = v.entry_id AND e.id = v.entry_id"""
        )
        timings["load_vectors_s"] = time.perf_counter() - started
        started = time.perf_counter()
        await embeddings.ensure_index(conn, DIMS)
        timings["hnsw_build_s"] = time.perf_counter() - started
        await conn.execute("VACUUM ANALYZE mod_rss.entries")
        await conn.execute("VACUUM ANALYZE mod_rss.entry_embeddings")
    return texts, vectors, {k: round(v, 1) for k, v in timings.items()}


def percentile(values: list[float], p: float) -> float:
    return float(np.percentile(np.array(values), p))


async def latency(pool: Any, ai: AIServices, queries: list[str], **filters: Any) -> dict[str, Any]:
    coverage = CoverageCache()  # as the host's search service keeps one (counting the set per query: ~50 ms)
    for q in queries[:20]:  # warm caches and the connection pool
        await search(pool, ai, SearchQuery(q, **filters), coverage_cache=coverage)
    times = []
    modes = set()
    for q in queries:
        started = time.perf_counter()
        response = await search(pool, ai, SearchQuery(q, **filters), coverage_cache=coverage)
        times.append((time.perf_counter() - started) * 1000)
        modes.add(response.mode)
    return {
        "p50_ms": round(percentile(times, 50), 2),
        "p95_ms": round(percentile(times, 95), 2),
        "p99_ms": round(percentile(times, 99), 2),
        "mean_ms": round(statistics.fmean(times), 2),
        "modes": sorted(modes),
    }


async def hnsw_recall(pool: Any, queries: list[str], vectors: dict[str, list[float]]) -> float:
    hits = 0
    async with pool.acquire() as conn:
        for q in queries:
            ann = await _vector_side(conn, SearchQuery(q), vectors[q], MODEL, candidates_per_side(10))
            exact = await conn.fetch(
                f"""SELECT entry_id FROM mod_rss.entry_embeddings WHERE dims = {DIMS} AND model = $2
                    ORDER BY embedding <=> $1::vector LIMIT 10""",
                vectors[q],
                MODEL,
            )
            hits += len({h[0] for h in ann[:10]} & {r["entry_id"] for r in exact})
    return hits / (10 * len(queries))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(42)
    home = Path(tempfile.mkdtemp(prefix="search-latency-"))
    config = HostConfig(
        home=home, database_url=None, nats_url=None, http_host="127.0.0.1", http_port=0, host_id="bench"
    )
    host = Host(config, env={"FEEDEATER_DB_POOL": "4"})
    await host.open(with_bus=False)
    try:
        pool = host.require_pool()
        print(f"loading {args.entries} synthetic entries …", flush=True)
        texts, vectors, timings = await load(host, args.entries, rng)
        print(f"loaded: {timings}", flush=True)
        picks = rng.integers(0, len(texts), args.queries)
        queries, query_vectors = [], {}
        for i in picks:
            words = texts[i].split()
            q = " ".join(words[rng.integers(0, len(words))] for _ in range(args.words))
            queries.append(q)
            query_vectors[q] = unit(vectors[i] + 0.3 * unit(rng.standard_normal(DIMS))).tolist()
        ai = AIServices(embedder=FixedVectors(query_vectors))
        if args.explain:
            async with pool.acquire() as conn:
                plan = await conn.fetch(
                    f"""EXPLAIN (ANALYZE, BUFFERS) SELECT x.entry_id FROM mod_rss.entry_embeddings x
                        JOIN mod_rss.entries e ON e.id = x.entry_id JOIN mod_rss.feeds f ON f.id = e.feed_id
                        WHERE x.dims = {DIMS} AND x.model = $2
                        ORDER BY {embeddings.vector_expr(DIMS)} <=> $1::vector({DIMS}) LIMIT 50""",
                    query_vectors[queries[0]],
                    MODEL,
                )
                print("\n".join(r[0] for r in plan))
        pg_pid = host.services.postgres.status().pid
        load_before, cpu, pg_cpu = os.getloadavg()[0], time.process_time(), cpu_tree_s(pg_pid)
        hybrid = await latency(pool, ai, queries)
        runs = len(queries) + 20  # with the warm-up
        hybrid["python_cpu_ms_per_query"] = round((time.process_time() - cpu) / runs * 1000, 2)
        hybrid["postgres_cpu_ms_per_query"] = round((cpu_tree_s(pg_pid) - pg_cpu) / runs * 1000, 2)
        folder = await latency(pool, ai, queries, folder="Folder3")
        text_only = await latency(pool, AIServices(), queries)
        hybrid["load_avg_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        recall = await hnsw_recall(pool, queries[:100], query_vectors)
        local = LocalEmbedder()
        await local.embed(["warm up"], query=True)
        started = time.perf_counter()
        for q in queries[:30]:
            await local.embed([q], query=True)
        query_embed_ms = (time.perf_counter() - started) / 30 * 1000
        return {
            "entries": args.entries,
            "queries": args.queries,
            "words": args.words,
            "load": timings,
            "hybrid": hybrid,
            "hybrid_folder_filter": folder,
            "text_only": text_only,
            "hnsw_recall_at_10": round(recall, 4),
            "local_query_embedding_ms": round(query_embed_ms, 1),
            "targets": TARGETS,
        }
    finally:
        await host.close(stop_started_services=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--words", type=int, default=2, help="words per query")
    parser.add_argument("--explain", action="store_true", help="print the vector side's query plan")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    report["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "at": datetime.now(UTC).isoformat(),
    }
    print()
    print(f"{'search (Python API)':28} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for name in ("hybrid", "hybrid_folder_filter", "text_only"):
        r = report[name]
        print(f"{name:28} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['mean_ms']:>8.1f}")
    h = report["hybrid"]
    print(
        f"{args.words}-word queries; hybrid CPU per query: Python {h['python_cpu_ms_per_query']} ms + "
        f"PostgreSQL {h['postgres_cpu_ms_per_query']} ms; load {h['load_avg_before_after']}"
    )
    print(f"HNSW recall@10 vs exact: {report['hnsw_recall_at_10']:.3f}")
    print(f"local query embedding: {report['local_query_embedding_ms']} ms; load: {report['load']}")
    ok = (
        report["hybrid"]["p50_ms"] <= TARGETS["p50_ms"]
        and report["hybrid"]["p99_ms"] <= TARGETS["p99_ms"]
        and report["hnsw_recall_at_10"] >= TARGETS["hnsw_recall_at_10"]
    )
    print("targets met" if ok else f"targets NOT met: {TARGETS}")
    write_results(f"search_latency-{args.words}w.json", report)


if __name__ == "__main__":
    main()
