"""Dedup cost of two checkouts side by side: each loads the same stored articles into its own embedded
PostgreSQL (bench/digest_cost.py's data), then both ingest the same incoming articles in alternating
batches of 50, so both see the same machine load. Single runs of digest_cost.py differ by ±25 % in CPU
per article on this shared VM; paired batches compare code, not moments.

    .venv/bin/python bench/digest_pair.py BEFORE_DIR AFTER_DIR [--articles 10000] [--window 2000]
                                          [--incoming 1000] [--delivery]

A checkout is a directory with this repository's layout (`git archive main | tar -x -C DIR`), whose
parent also holds `shared/fixtures` (the corpus the sentences come from; a symlink will do). Prints
CPU per article (this side's Python process and its PostgreSQL backend), wall p50/p95/p99, the load,
and whether both gave the same verdicts; bench/results/digest_pair.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BATCH = 50


async def worker(args: argparse.Namespace) -> None:
    """One checkout's side: load, say "ready", then ingest the batches named on stdin ("lo hi")."""
    from bench import digest_cost, digest_data
    from bench.measure import cpu_tree_s
    from modules.digest.intake.handler import ingest, ingest_many

    pool = digest_cost.sentence_pool()
    host = await digest_data.bench_host("digest-pair-")
    try:
        db = host.require_pool()
        stored = await digest_cost.load(db, digest_cost.dataset(args, pool))
        rng = random.Random(12)
        arrivals = [digest_cost.incoming(rng, pool, stored, k) for k in range(args.incoming)]
        async with db.acquire() as conn:
            backend = conn.get_server_pid()
            print("ready", flush=True)
            for line in sys.stdin:
                lo, hi = map(int, line.split())
                pg0, py0 = cpu_tree_s(backend), time.process_time()
                walls, verdicts = [], []
                if args.delivery:  # the batch in one transaction, as a subscription delivery
                    t = time.perf_counter()
                    async with conn.transaction():
                        decisions = await ingest_many(conn, arrivals[lo:hi])
                    walls += [(time.perf_counter() - t) * 1000 / (hi - lo)] * (hi - lo)
                    verdicts += [d.disposition for d in decisions]
                for a in arrivals[lo:hi] if not args.delivery else []:
                    t = time.perf_counter()
                    async with conn.transaction():
                        d = await ingest(conn, a)
                    walls.append((time.perf_counter() - t) * 1000)
                    verdicts.append(d.disposition)
                py, pg = time.process_time() - py0, cpu_tree_s(backend) - pg0
                out = {"py": py, "pg": pg, "walls": walls, "verdicts": verdicts, "load": os.getloadavg()[0]}
                print(json.dumps(out), flush=True)
    finally:
        await host.close(stop_started_services=True)


def compare(args: argparse.Namespace) -> dict[str, Any]:
    sides = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    flags = ["--articles", str(args.articles), "--window", str(args.window), "--incoming", str(args.incoming)]
    flags += ["--delivery"] if args.delivery else []
    procs = {
        name: subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(root), str(root), *flags],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        for name, root in sides.items()
    }
    for name, proc in procs.items():
        assert proc.stdout is not None
        while (line := proc.stdout.readline()) != "ready\n":
            if not line:
                sys.exit(f"the {name} side exited before it was ready")
    totals: dict[str, dict[str, Any]] = {
        n: {"py": 0.0, "pg": 0.0, "walls": [], "verdicts": [], "loads": []} for n in sides
    }
    for k in range(args.incoming // BATCH):
        for name in list(sides) if k % 2 == 0 else list(sides)[::-1]:  # alternate who goes first
            proc = procs[name]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"{k * BATCH} {(k + 1) * BATCH}\n")
            proc.stdin.flush()
            r = json.loads(proc.stdout.readline())
            t = totals[name]
            t["py"], t["pg"] = t["py"] + r["py"], t["pg"] + r["pg"]
            t["walls"] += r["walls"]
            t["verdicts"] += r["verdicts"]
            t["loads"].append(r["load"])
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    result: dict[str, Any] = {"articles": args.articles, "incoming": args.incoming, "delivery": args.delivery}
    for name, t in totals.items():
        n, q = len(t["walls"]), statistics.quantiles(t["walls"], n=100)
        result[name] = {
            "cpu_ms_per_article": {"python": round(1000 * t["py"] / n, 2), "postgres_backend": round(1000 * t["pg"] / n, 2)},
            "wall_ms": {"p50": round(q[49], 2), "p95": round(q[94], 2), "p99": round(q[98], 2)},
            "load_avg_min_max": [min(t["loads"]), max(t["loads"])],
        }  # fmt: skip
    result["same_verdicts"] = totals["before"]["verdicts"] == totals["after"]["verdicts"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--articles", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=2_000)
    parser.add_argument("--incoming", type=int, default=1000)
    parser.add_argument(
        "--delivery",
        action="store_true",
        help="each batch of 50 in one transaction (ingest_many), as the bus hands them",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.path.insert(0, args.before)  # the worker's own checkout
        asyncio.run(worker(args))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import digest_data

    digest_data.report("digest_pair", compare(args))


if __name__ == "__main__":
    main()
