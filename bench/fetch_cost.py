"""CPU per conditional GET through the shared Fetcher alone (issue #13: what bounds the 304 poll).

The feed farm serves the corpus × 5 (2,235 feeds) on 200 loopback hosts; one unconditional round stores
each feed's validators, then `--rounds` rounds of conditional GETs (all answered 304) run with the
fetcher's default concurrency. Reported per round: CPU ms per fetch in this process (the farm runs in its
own) and fetches per second; with `--profile`, a cProfile of one more round (where the HTTP client, the
URL check and the politeness gates spend it). The whole poll costs more: claims, the poll_state update, the schedule (bench/e2e_poll.py).

    .venv/bin/python bench/fetch_cost.py [--feeds 2235] [--hosts 200] [--rounds 3] [--profile]

Results: stdout and bench/results/fetch_cost.json.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.feedfarm import FarmConfig, FeedFarm  # noqa: E402
from bench.measure import write_results  # noqa: E402
from host.net.fetcher import Fetcher  # noqa: E402


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"feeds": args.feeds, "hosts": args.hosts, "load_before": os.getloadavg()[0]}
    with FeedFarm(FarmConfig(feeds=args.feeds, hosts=args.hosts)) as farm:
        urls = farm.urls
        async with Fetcher(user_agent="feedeater-bench", allow_private_networks=True) as fetcher:
            first = await asyncio.gather(*(fetcher.fetch(u) for u in urls))
            validators = [(r.etag, r.last_modified) for r in first]

            async def one_round() -> tuple[float, float, int]:
                wall, cpu = time.perf_counter(), time.process_time()
                got = await asyncio.gather(
                    *(
                        fetcher.fetch(u, etag=e, last_modified=m)
                        for u, (e, m) in zip(urls, validators, strict=True)
                    )
                )
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                return 1000 * cpu / len(urls), len(urls) / wall, sum(r.status == 304 for r in got)

            rounds = []
            for _ in range(args.rounds):
                cpu_ms, per_s, n304 = await one_round()
                rounds.append(
                    {"cpu_ms_per_fetch": round(cpu_ms, 3), "fetches_per_s": round(per_s), "304s": n304}
                )
                print(rounds[-1], flush=True)
            report["rounds"] = rounds
            if args.profile:
                profiler = cProfile.Profile(time.process_time)
                profiler.enable()
                await one_round()
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    report["load_after"] = os.getloadavg()[0]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feeds", type=int, default=2235)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="then profile one more round (CPU)")
    report = asyncio.run(run(parser.parse_args()))
    print(f"load average {report['load_before']:.2f} → {report['load_after']:.2f}")
    write_results("fetch_cost.json", report)


if __name__ == "__main__":
    main()
