"""CPU per feed of a "changed" poll (issue #25 item 2): every feed answers 200 with its real-world corpus
document plus one new item, so ~all its items are unchanged. Compares, interleaved, parsing with the raw
hashes of the feed's stored entries (`skip`: unchanged items are not normalized or sanitized) and without
them (`full`: `document.KNOWN_RAW_HASHES = 0`, an empty known set: the behaviour before the change).

Steps: embedded PostgreSQL + NATS, the feed farm with every feed in `corpus_growing` mode, a Host in this
process with its outbox relay (as bench/e2e_poll.py), a first poll (every entry new), then `--rounds`
rounds of the two modes, A B then B A (each round every feed due again: one new item each), `--gap-s`
apart so the per-host rate limits refill. Reports CPU ms per changed feed (per 200; the few JSON/UTF-16
files gain no item and answer 304, their small cost included) of the parse workers, the host process
and PostgreSQL (medians per mode), the job's counts (raw_same: items skipped), and the load average.

    .venv/bin/python bench/changed_poll.py [--feeds 400] [--hosts 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from e2e_poll import (  # noqa: E402  (bench/ is on sys.path when run as a script)
    RESULTS,
    CpuMeter,
    open_host,
    poll_until_done,
    service_pids,
    wait_outbox_empty,
)
from feedfarm import FarmConfig, FeedFarm  # noqa: E402

from host import outbox  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import Services  # noqa: E402
from modules.rss import store  # noqa: E402
from modules.rss.ingest import document  # noqa: E402

GROUPS = ("parse_workers", "host", "postgres")
SKIP_LIMIT = document.KNOWN_RAW_HASHES


async def run(args: argparse.Namespace, farm: FeedFarm, home: Path) -> dict[str, Any]:
    services = Services(home)
    endpoints = await asyncio.to_thread(services.up)
    stop = asyncio.Event()
    host: Host | None = None
    relay_task: asyncio.Task[None] | None = None
    out: dict[str, Any] = {"phases": []}
    try:
        host = await open_host(home, endpoints, "bench-changed")
        pool = host.require_pool()
        async with pool.acquire() as conn, conn.transaction():
            for url in farm.urls:
                await store.add_feed(conn, url=url)
        assert host.js is not None
        relay_task = asyncio.create_task(outbox.Relay(pool, host.js).run(stop), name="outbox-relay")
        cpu = CpuMeter(int(farm.info["pid"]), *service_pids(services))

        async def phase(name: str, limit: int) -> dict[str, Any]:
            document.KNOWN_RAW_HASHES = limit
            await pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
            load = os.getloadavg()[0]
            before = cpu.snapshot()
            polled = await poll_until_done(host)
            polled["outbox_drained"] = await wait_outbox_empty(host)
            seconds = CpuMeter.delta(before, cpu.snapshot())
            changed = polled["job"].get("status_200", 0) or 1  # JSON/UTF-16 files gain nothing: 304s
            result = {
                "phase": name,
                "load_1min_at_start": round(load, 2),
                "cpu_ms_per_feed": {g: round(1000 * seconds[g] / changed, 2) for g in GROUPS},
                "other_processes_s": seconds["other_processes"],
                "job": {
                    k: polled["job"].get(k, 0)
                    for k in ("status_200", "status_304", "new", "updated", "unchanged", "raw_same", "items")
                },
                "still_due": polled["still_due"],
            }
            print(json.dumps(result), file=sys.stderr)
            return result

        out["first"] = await phase("first", SKIP_LIMIT)
        for r in range(args.rounds):
            order = [("skip", SKIP_LIMIT), ("full", 0)]
            for name, limit in order if r % 2 == 0 else order[::-1]:
                await asyncio.sleep(args.gap_s)
                out["phases"].append(await phase(name, limit))
    finally:
        document.KNOWN_RAW_HASHES = SKIP_LIMIT
        stop.set()
        if relay_task is not None:
            await asyncio.wait_for(relay_task, timeout=10)
        if host is not None:
            await host.close()
        await asyncio.to_thread(services.down, endpoints.started)
    for name in ("skip", "full"):
        runs = [p for p in out["phases"] if p["phase"] == name]
        out[f"median_{name}"] = {
            g: round(statistics.median(p["cpu_ms_per_feed"][g] for p in runs), 2) for g in GROUPS
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--feeds", type=int, default=400)
    p.add_argument("--hosts", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3, help="rounds of (skip, full), alternating their order")
    p.add_argument("--gap-s", type=float, default=5.0, help="pause before each phase (rate limits refill)")
    p.add_argument("--corpus", type=Path, default=FarmConfig().corpus)
    p.add_argument("--out", type=Path, default=RESULTS / "changed_poll.json")
    args = p.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="feedeater-changed-"))
    result: dict[str, Any] = {
        "benchmark": "changed_poll",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "feeds": args.feeds,
        "cpus": os.cpu_count(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        farm_config = FarmConfig(
            feeds=args.feeds, hosts=args.hosts, corpus=args.corpus, corpus_growing=1.0, max_lifetime_s=3600
        )
        with FeedFarm(farm_config) as farm:
            result |= asyncio.run(run(args, farm, home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("CPU ms per feed of a changed poll (one new item per feed), medians:")
    for name in ("skip", "full"):
        print(f"  {name:5} " + "  ".join(f"{g} {result[f'median_{name}'][g]:6.2f}" for g in GROUPS))
    print(f"  load average at start {result['load_avg_at_start']}, at end {result['load_avg_at_end']}")
    print(f"  written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
