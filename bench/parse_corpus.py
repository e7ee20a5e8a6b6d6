"""Throughput of parse_feed (parse + normalize + sanitize) over the real-world corpus, next to
feedparser.parse alone on the same bytes in the same run.

    .venv/bin/python bench/parse_corpus.py [CORPUS_DIR] [--profile]

CORPUS_DIR defaults to ../shared/fixtures/realworld (relative to the repository). Best of 3 runs each,
after one warm-up run (dateparser compiles its locale regexes on first use: seconds, once per process).
Prints the machine's load average before and after: on a busy machine CPU times grow too (shared caches,
hyper-threads), and not equally for C-heavy (lxml, nh3) and pure-Python (feedparser) code.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import feedparser  # noqa: E402

from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RUNS = 3


def load(corpus: Path) -> list[tuple[str, bytes]]:
    manifest = json.loads((corpus / "manifest.json").read_text())
    return [(f["path"], (corpus / f["path"]).read_bytes()) for f in manifest["files"]]


def run_parse_feed(files: list[tuple[str, bytes]]) -> Counter[str]:
    paths: Counter[str] = Counter()
    for path, body in files:
        try:
            paths[parse_feed(body, url=f"https://example.com/{path}", now=NOW).parser] += 1
        except FeedParseError:
            paths["not a feed"] += 1
    return paths


def run_feedparser(files: list[tuple[str, bytes]]) -> Counter[str]:
    for _, body in files:
        feedparser.parse(io.BytesIO(body))
    return Counter()


def best_of(
    fn: Callable[[list[tuple[str, bytes]]], Counter[str]], files: list[tuple[str, bytes]]
) -> tuple[float, float, Counter[str]]:
    """Best wall-clock and best CPU time of RUNS runs (CPU time is robust to a busy machine)."""
    walls, cpus, result = [], [], Counter[str]()
    for _ in range(RUNS):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(files)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "fixtures" / "realworld"))
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one parse_feed run")
    args = parser.parse_args()
    files = load(Path(args.corpus))
    megabytes = sum(len(body) for _, body in files) / 1e6
    print(f"corpus: {len(files)} files, {megabytes:.1f} MB ({args.corpus})")
    print(f"before: {load_line()}")
    run_parse_feed(files)  # warm-up

    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run_parse_feed, files)
        for order in ("tottime", "cumulative"):
            pstats.Stats(profiler).sort_stats(order).print_stats(30)
        return

    ours, ours_cpu, paths = best_of(run_parse_feed, files)
    theirs, theirs_cpu, _ = best_of(run_feedparser, files)
    print("                                        wall (best of 3)        CPU (best of 3)")
    for name, wall, cpu in (
        ("parse_feed (parse+normalize+sanitize)", ours, ours_cpu),
        ("feedparser.parse alone", theirs, theirs_cpu),
    ):
        print(
            f"{name:38}  {wall:6.2f} s {megabytes / wall:6.1f} MB/s   {cpu:6.2f} s {megabytes / cpu:6.1f} MB/s"
        )
    print(f"speed-up: {theirs / ours:.1f}x wall, {theirs_cpu / ours_cpu:.1f}x CPU")
    print("paths: " + ", ".join(f"{name}={n}" for name, n in paths.most_common()))
    print(f"after: {load_line()}")


if __name__ == "__main__":
    main()
