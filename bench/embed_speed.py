"""Local embedder throughput on the shared corpus (issue #13, target 3): passages/s, CPU seconds, and the
time the whole corpus (every entry of ../shared/fixtures/realworld, 7,339) needs.

Why: the embed job's cost is the engine's, which is linear in tokens; this measures exactly what the job
embeds — `embed.embedding_text(title, text, embed_max_chars)` cut to `embedding_max_tokens` by
`LocalEmbedder` — in the job's batch size, without the database (bench/search_quality.py measures the
job end to end, with retrieval quality). A shared machine gives a process only part of the cores, so
the report gives CPU seconds and the load average, and extrapolates to a quiet machine as
CPU seconds / min(cores, OMP threads).

    .venv/bin/python bench/embed_speed.py [--sample 1000] [--max-tokens 80 0] [--batch 32] [--threads 2]

`--threads` sets OMP_NUM_THREADS before the engine loads (default: all cores). Results:
bench/results/embed_speed.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from measure import write_results  # noqa: E402  (bench/ is on sys.path when run as a script)

from host.ai import LOCAL_MAX_TOKENS  # noqa: E402

CORPUS = REPO.parent / "shared" / "fixtures" / "realworld"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def corpus_texts(corpus: Path, max_chars: int) -> list[tuple[datetime, str]]:
    """(published, embedded text) of every entry of every parseable corpus file."""
    from modules.rss.enrich.embed import embedding_text
    from modules.rss.parse import FeedParseError, parse_feed

    out: list[tuple[datetime, str]] = []
    for f in json.loads((corpus / "manifest.json").read_text())["files"]:
        try:
            parsed = parse_feed(
                (corpus / f["path"]).read_bytes(), url=f"https://example.com/{f['path']}", now=NOW
            )
        except FeedParseError:
            continue
        out += [
            (e.published or NOW, embedding_text(e.title, e.content_text, max_chars))
            for e in parsed.entries
            if e.title.strip() or e.content_text.strip()
        ]
    return out


async def measure(texts: list[str], max_tokens: int, batch: int) -> dict[str, Any]:
    from host.ai import LocalEmbedder

    embedder = LocalEmbedder(max_tokens=max_tokens)
    await embedder.embed(["warm up: load the model"])
    load_before = os.getloadavg()[0]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for i in range(0, len(texts), batch):
        await embedder.embed(texts[i : i + batch])
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "max_tokens": max_tokens,
        "passages": len(texts),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "passages_per_s": round(len(texts) / wall, 2),
        "passages_per_cpu_s": round(len(texts) / cpu, 2),
        "load_avg_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", type=int, default=1000, help="random passages (0: the whole corpus)")
    p.add_argument("--max-tokens", type=int, nargs="+", default=[LOCAL_MAX_TOKENS, 0])
    p.add_argument("--max-chars", type=int, default=1500, help="rss.embed_max_chars")
    p.add_argument("--batch", type=int, default=32, help="rss.embed_batch_size")
    p.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS (0: the engine's default)")
    p.add_argument("--corpus", default=str(CORPUS))
    args = p.parse_args(argv)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    entries = corpus_texts(Path(args.corpus), args.max_chars)
    entries.sort(key=lambda e: e[0], reverse=True)  # the job's order: newest first
    texts = [t for _, t in entries]
    sample = random.Random(7).sample(texts, args.sample) if 0 < args.sample < len(texts) else texts
    cores = min(os.cpu_count() or 1, args.threads or os.cpu_count() or 1)
    print(
        f"corpus: {len(texts)} entries; measuring {len(sample)}; {cores} cores usable by the engine",
        flush=True,
    )
    runs = []
    for max_tokens in args.max_tokens:
        r = asyncio.run(measure(sample, max_tokens, args.batch))
        r["corpus_cpu_s"] = round(len(texts) / r["passages_per_cpu_s"], 1)
        r["corpus_minutes_quiet_machine"] = round(r["corpus_cpu_s"] / cores / 60, 1)
        runs.append(r)
        print(
            f"max_tokens {max_tokens or 'whole text'}: {r['passages_per_s']} passages/s, {r['passages_per_cpu_s']} per "
            f"CPU-s (load {r['load_avg_before_after']}); corpus {len(texts)} = {r['corpus_cpu_s']} CPU-s, "
            f"~{r['corpus_minutes_quiet_machine']} min on {cores} quiet cores",
            flush=True,
        )
    report = {"corpus_entries": len(texts), "batch": args.batch, "threads": args.threads, "runs": runs}
    write_results("embed_speed.json", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
