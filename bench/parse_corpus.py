"""Throughput of parse_feed (parse + normalize + sanitize) over the real-world corpus, next to
feedparser.parse alone on the same bytes in the same run.

    .venv/bin/python bench/parse_corpus.py [CORPUS_DIR] [--rounds N] [--profile]

CORPUS_DIR defaults to ../shared/fixtures/realworld (relative to the repository). After one warm-up run
(dateparser compiles its locale regexes on first use: seconds, once per process), the two parsers run
interleaved, A B A B …, `--rounds` times each (default 5): load that comes and goes hits both alike, and
each round's ratio compares runs seconds apart. Reports the best and median of each side and the median
of the per-round ratios. Prints the machine's load average before and after: on a busy machine CPU times
grow too (shared caches, hyper-threads), and not equally for C-heavy (lxml, nh3) and pure-Python
(feedparser) code.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
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


def timed(
    fn: Callable[[list[tuple[str, bytes]]], Counter[str]], files: list[tuple[str, bytes]]
) -> tuple[float, float, Counter[str]]:
    """Wall-clock and CPU seconds of one run (CPU time is the more robust on a busy machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(files)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "fixtures" / "realworld"))
    parser.add_argument("--rounds", type=int, default=5, help="interleaved runs of each parser (default 5)")
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

    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    paths: Counter[str] = Counter()
    for _ in range(args.rounds):  # A B A B …: both sides see the same load
        wall, cpu, paths = timed(run_parse_feed, files)
        ours.append((wall, cpu))
        wall, cpu, _ = timed(run_feedparser, files)
        theirs.append((wall, cpu))
    print(f"{args.rounds} interleaved rounds               wall best / median           CPU best / median")
    for name, runs in (("parse_feed (parse+normalize+sanitize)", ours), ("feedparser.parse alone", theirs)):
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"{name:38}  {min(walls):6.2f} / {statistics.median(walls):6.2f} s"
            f"   {min(cpus):6.2f} / {statistics.median(cpus):6.2f} s {megabytes / min(cpus):6.1f} MB/s"
        )
    ratios = [t[1] / o[1] for o, t in zip(ours, theirs, strict=True)]
    print(
        f"speed-up (CPU): median of rounds {statistics.median(ratios):.2f}x (range {min(ratios):.2f}"
        f"-{max(ratios):.2f}x), best vs best {min(c for _, c in theirs) / min(c for _, c in ours):.2f}x;"
        f" wall best vs best {min(w for w, _ in theirs) / min(w for w, _ in ours):.2f}x"
    )
    print("paths: " + ", ".join(f"{name}={n}" for name, n in paths.most_common()))
    print(f"after: {load_line()}")


if __name__ == "__main__":
    main()
