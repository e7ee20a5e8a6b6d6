"""What one poll costs, by outcome: CPU ms in the host process, its parse worker, PostgreSQL and NATS.

Why: capacity at scale (bench/simulate_scale.py, docs/scaling.md) is polls/s × cost per poll, and the
three outcomes a steady-state poller sees cost very different amounts:
* 304 — the server honours the conditional request;
* 200 unchanged — a server without validators sends the same bytes again (stored raw, not parsed);
* 200 with a new entry — parse, diff, store the entry, its event through the outbox to JetStream.

One farm (bench/feedfarm.py) serves a third of the feeds in each mode: `normal` (real corpus files with
ETag/Last-Modified → 304), `no_validators` (same body, no validators) and `growing` (one new entry per
request). After a first poll of everything (which also gives the cost per stored entry and the bytes an
entry adds to the database), each phase marks only one mode's feeds due and polls them with the real job
(`rss.poll` via `Host.run_job_once`, the outbox relay running as in `feedeater run`); CPU seconds per
process group divided by the feeds polled is the cost. Farm status counts prove each phase's outcome.

    .venv/bin/python bench/poll_costs.py [--feeds 1500] [--hosts 100] [--repeat 2]

Results: a table and bench/results/poll_costs.json (`model_costs` is what simulate_scale.py reads).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from e2e_poll import (  # noqa: E402  (bench/ is on sys.path when run as a script)
    CpuMeter,
    poll_until_done,
    service_pids,
    status_delta,
    wait_outbox_empty,
)
from feedfarm import FarmConfig, FeedFarm, assign_modes  # noqa: E402
from measure import write_results  # noqa: E402  (bench/ is on sys.path when run as a script)

from host import outbox  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import Services  # noqa: E402
from modules.rss import store  # noqa: E402

PHASES = (("not_modified", "normal"), ("unchanged", "no_validators"), ("new_entry", "growing"))
GROUPS = ("host", "parse_workers", "postgres", "nats")
SIZE_SQL = """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'm')"""


async def db_bytes(conn: Any, *schemas: str) -> int:
    """Tables with their indexes and TOAST in these schemas."""
    return int(await conn.fetchval(SIZE_SQL, list(schemas)))


async def measure(host: Host, farm: FeedFarm, cpu: CpuMeter, feed_ids: list[int] | None) -> dict[str, Any]:
    """Mark these feeds (None: all) due, poll until none is due and the outbox is empty; what it cost."""
    pool = host.require_pool()
    async with pool.acquire() as conn:
        if feed_ids is not None:
            await conn.execute(
                "UPDATE mod_rss.poll_state SET next_poll_at = now() WHERE feed_id = ANY($1::bigint[])",
                feed_ids,
            )
        entries_before = await conn.fetchval("SELECT count(*) FROM mod_rss.entries")
        rss_before, outbox_before = await db_bytes(conn, "mod_rss"), await db_bytes(conn, "host")
    farm_before = await asyncio.to_thread(farm.stats)
    cpu_before = cpu.snapshot()
    started = time.perf_counter()
    polled = await poll_until_done(host)
    drained = await wait_outbox_empty(host)
    wall = time.perf_counter() - started
    cpu_s = CpuMeter.delta(cpu_before, cpu.snapshot())
    farm_after = await asyncio.to_thread(farm.stats)
    async with pool.acquire() as conn:
        entries = await conn.fetchval("SELECT count(*) FROM mod_rss.entries") - entries_before
        rss_growth = await db_bytes(conn, "mod_rss") - rss_before
        outbox_growth = await db_bytes(conn, "host") - outbox_before
    n = int(polled["job"].get("feeds", 0))
    return {
        "feeds": n,
        "seconds": round(wall, 2),
        "feeds_per_s": round(n / wall, 1) if wall else 0.0,
        "new_entries": int(entries),
        "outbox_drained": drained,
        "farm_status": status_delta(farm_before, farm_after),
        "cpu_seconds": cpu_s,
        "cpu_ms_per_feed": {g: round(1000 * cpu_s.get(g, 0.0) / max(n, 1), 3) for g in GROUPS},
        "mod_rss_bytes_growth": rss_growth,
        "host_schema_bytes_growth": outbox_growth,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
    }


def mean_costs(runs: list[dict[str, Any]]) -> dict[str, float]:
    """CPU ms per feed over repeated phases, weighted by feeds (host, parse, pg, nats: simulate_scale's Cost)."""
    feeds = sum(r["feeds"] for r in runs) or 1
    total = {g: sum(r["cpu_seconds"].get(g, 0.0) for r in runs) for g in GROUPS}
    return {
        "host_ms": round(1000 * total["host"] / feeds, 3),
        "parse_ms": round(1000 * total["parse_workers"] / feeds, 3),
        "pg_ms": round(1000 * total["postgres"] / feeds, 3),
        "nats_ms": round(1000 * total["nats"] / feeds, 3),
    }


def per_entry(first: dict[str, Any], one_new: dict[str, float]) -> dict[str, float]:
    """Marginal cost of each entry beyond the first: the first poll's cost per feed minus a one-entry
    poll's, spread over the first poll's extra entries per feed (never below zero)."""
    feeds = max(first["feeds"], 1)
    extra = first["new_entries"] / feeds - 1
    first_ms = mean_costs([first])
    return {k: round(max(0.0, (first_ms[k] - one_new[k]) / extra), 3) if extra > 0 else 0.0 for k in first_ms}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    share = 1 / 3
    config = FarmConfig(
        feeds=args.feeds, hosts=args.hosts, growing=share, no_validators=share, seed=args.seed
    )
    modes = assign_modes(config)
    home = Path(tempfile.mkdtemp(prefix="poll-costs-"))
    services = Services(home)
    endpoints = await asyncio.to_thread(services.up)
    host: Host | None = None
    stop = asyncio.Event()
    relay_task: asyncio.Task[None] | None = None
    try:
        with FeedFarm(config) as farm:
            host = Host(
                HostConfig(
                    home=home,
                    database_url=endpoints.database_url,
                    nats_url=endpoints.nats_url,
                    http_host="127.0.0.1",
                    http_port=0,
                    host_id="bench-costs",
                ),
                env={"FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS": "true"},
            )
            await host.open()
            pool = host.require_pool()
            ids_by_mode: dict[str, list[int]] = {}
            async with pool.acquire() as conn, conn.transaction():
                for url, mode in zip(farm.urls, modes, strict=True):
                    feed, _ = await store.add_feed(conn, url=url)
                    ids_by_mode.setdefault(mode, []).append(feed.id)
            assert host.js is not None
            relay_task = asyncio.create_task(outbox.Relay(pool, host.js).run(stop), name="outbox-relay")
            cpu = CpuMeter(int(farm.info["pid"]), *service_pids(services))

            out: dict[str, Any] = {"load_avg_before": [round(x, 2) for x in os.getloadavg()]}
            out["first"] = await measure(host, farm, cpu, None)
            print(f"first poll: {json.dumps(out['first']['cpu_ms_per_feed'])}", flush=True)
            for kind, mode in PHASES:
                out[kind] = [await measure(host, farm, cpu, ids_by_mode[mode]) for _ in range(args.repeat)]
                print(f"{kind}: {[r['cpu_ms_per_feed'] for r in out[kind]]}", flush=True)
            async with pool.acquire() as conn:
                avg_event = await conn.fetchval("SELECT avg(octet_length(payload)) FROM host.outbox")
                avg_body = await conn.fetchval("SELECT avg(size) FROM mod_rss.raw_blobs")
                entries = await conn.fetchval("SELECT count(*) FROM mod_rss.entries")
                rss_bytes = await db_bytes(conn, "mod_rss")
    finally:
        stop.set()
        if relay_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(relay_task, timeout=10)
        if host is not None:
            with contextlib.suppress(Exception):
                await host.close()
        await asyncio.to_thread(services.down, endpoints.started)
    one_new = mean_costs(out["new_entry"])
    out["model_costs"] = {
        "not_modified": mean_costs(out["not_modified"]),
        "unchanged": mean_costs(out["unchanged"]),
        "new_entry": one_new,
        "per_entry": per_entry(out["first"], one_new),
        "event_bytes": round(float(avg_event or 0.0)),
        # the first poll stored real corpus entries: database bytes per entry, indexes and TOAST included
        "entry_bytes": round(out["first"]["mod_rss_bytes_growth"] / max(out["first"]["new_entries"], 1)),
        "raw_body_bytes": round(float(avg_body or 0.0)),
    }
    out["db"] = {"entries": entries, "mod_rss_bytes": rss_bytes}
    out["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--feeds", type=int, default=1500, help="a third per outcome")
    p.add_argument("--hosts", type=int, default=100, help="loopback hosts of the farm")
    p.add_argument("--repeat", type=int, default=2, help="polls of each outcome phase")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    report = asyncio.run(run(args))
    print(f"\n{'outcome':14} {'feeds':>6} {'host':>7} {'parse':>7} {'pg':>7} {'nats':>7}  (CPU ms per poll)")
    for kind in ("not_modified", "unchanged", "new_entry", "per_entry"):
        c = report["model_costs"][kind]
        n = sum(r["feeds"] for r in report.get(kind, [])) if kind != "per_entry" else ""
        print(
            f"{kind:14} {n!s:>6} {c['host_ms']:>7.2f} {c['parse_ms']:>7.2f} {c['pg_ms']:>7.2f} {c['nats_ms']:>7.2f}"
        )
    m = report["model_costs"]
    print(
        f"event {m['event_bytes']} B, entry {m['entry_bytes']} B in mod_rss, raw body {m['raw_body_bytes']} B; "
        f"load {report['load_avg_before']} → {report['load_avg_after']}"
    )
    write_results("poll_costs.json", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
