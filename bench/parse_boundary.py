"""What parsing in the worker process costs beyond the parse itself, and what raw hashes add (issue 25).

The first poll's parse worker used ~6.3–6.8 ms per corpus document in `e2e_poll.py`, the same documents
~4.2 ms in-process: this splits the difference. Over the corpus (each round, in this order):
- `parse_feed` in-process without raw hashes (`known=None`) and with them (`known=frozenset()`, what a
  first poll does: every item's digest computed and stored);
- pickling its result and reading it back (what crosses the process boundary);
- the same documents through a one-worker spawn `ProcessPoolExecutor` as `ingest.document.parse_body`
  uses it: CPU of the worker and of this process (the executor's threads and the result's unpickling).

    .venv/bin/python bench/parse_boundary.py [--corpus DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modules.rss.model import Feed  # noqa: E402
from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402

NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)


def parse(body: bytes, known: frozenset[str] | None = frozenset()) -> Feed | None:
    try:
        return parse_feed(body, url="https://example.com/feed", now=NOW, max_items=1000, known=known)
    except FeedParseError:
        return None


def per_doc_ms(seconds: float, docs: int) -> float:
    return round(seconds * 1000 / docs, 3)


def one_round(docs: list[bytes], pool: ProcessPoolExecutor, worker: psutil.Process) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, known in (("in-process, no raw hashes", None), ("in-process, raw hashes", frozenset())):
        t = time.process_time()
        for body in docs:
            parse(body, known)
        out[name] = per_doc_ms(time.process_time() - t, len(docs))
    results = [parse(body) for body in docs]
    t = time.process_time()
    pickled = [pickle.dumps(r, pickle.HIGHEST_PROTOCOL) for r in results]
    out["pickle the result"] = per_doc_ms(time.process_time() - t, len(docs))
    t = time.process_time()
    for p in pickled:
        pickle.loads(p)
    out["unpickle the result"] = per_doc_ms(time.process_time() - t, len(docs))
    worker_before, t = sum(worker.cpu_times()[:2]), time.process_time()
    for body in docs:
        pool.submit(parse, body).result()
    out["this process, through the pool"] = per_doc_ms(time.process_time() - t, len(docs))
    out["worker, through the pool"] = per_doc_ms(sum(worker.cpu_times()[:2]) - worker_before, len(docs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "fixtures" / "realworld")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    docs = [
        p.read_bytes() for p in sorted(args.corpus.rglob("*")) if p.is_file() and p.name != "manifest.json"
    ]
    if not docs:
        sys.exit(f"no documents under {args.corpus}: pass --corpus")
    print(f"{len(docs)} documents; load {os.getloadavg()}")
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(parse, docs[:20]))  # the worker started and warm
        worker = psutil.Process(pool.submit(os.getpid).result())  # not the spawn resource tracker
        rounds = [one_round(docs, pool, worker) for _ in range(args.rounds)]
    print(f"CPU ms per document, median of {args.rounds} rounds (min–max):")
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        print(f"  {name:32} {statistics.median(values):7.3f}  ({min(values):.3f}–{max(values):.3f})")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
