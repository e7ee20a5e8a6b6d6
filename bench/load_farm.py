"""Load (and soak) run: one Host with its normal scheduler polling a 10,000-feed farm for N minutes.

Why: the freshness SLO of the fetcher design (../shared/seeds/001 §10: 95 % of feeds polled within 2× their
chosen interval) only means something under a realistic mix and the real scheduler, relay and leases all
running together, for long enough that intervals cycle many times.

Mix (bench/feedfarm.py modes): 70 % answer 304, 20 % gain an entry per request, 5 % answer 500, 3 % answer
after --slow-s, 2 % answer 429 with Retry-After. Intervals are shortened so the run cycles in minutes:
FEEDEATER_RSS_MIN_INTERVAL_MINUTES=1, DEFAULT=1, MAX=--max-interval (defaults below; FEEDEATER_* in the
environment win).

Every --sample-s seconds it samples
* freshness: share of feeds with `now <= last_polled_at + 2 × (next_poll_at - last_polled_at)` (the chosen
  interval, error backoff and Retry-After included) — a never-polled feed counts as late;
* the outbox: pending rows and lag (host.outbox.status);
* process health: RSS of this process and its children (the parse worker), open fds, TCP connections,
  PostgreSQL backends.
Freshness and lag statistics skip the --warmup-s (the first pass over 10,000 new feeds is a backfill).

    .venv/bin/python bench/load_farm.py [--feeds 10000] [--minutes 5] [--poll-trigger 5s]
    .venv/bin/python bench/soak.py     # the same for 30 minutes, health sampled every 30 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from feedfarm import FarmConfig, FeedFarm  # noqa: E402

from host import outbox  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import Services  # noqa: E402

RESULTS = REPO / "bench" / "results"
MIX = {"growing": 0.20, "errors": 0.05, "slow": 0.03, "ratelimited": 0.02}  # the rest answers 304


@dataclass
class Sample:
    t: float
    fresh: float
    polled: int
    pending: int
    lag_s: float
    published: int
    rss_mb: float
    fds: int
    tcp: int
    pg_backends: int


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def slope_per_hour(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (seconds), per hour."""
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den * 3600


def process_health() -> tuple[float, int, int]:
    """RSS (MB) of this process and its children, its open fds, its TCP connections."""
    me = psutil.Process()
    rss = 0
    for p in [me, *me.children(recursive=True)]:
        try:
            if p.name().startswith(("postgres", "nats-server")) or "feedfarm" in " ".join(p.cmdline()):
                continue
            rss += p.memory_info().rss
        except psutil.Error:
            continue
    return rss / 1024 / 1024, me.num_fds(), len(me.net_connections(kind="tcp"))


async def sample(host: Host, started: float) -> Sample:
    pool = host.require_pool()
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            """SELECT avg(CASE WHEN p.last_polled_at IS NOT NULL
                                AND now() <= p.last_polled_at + 2 * (p.next_poll_at - p.last_polled_at)
                               THEN 1.0 ELSE 0.0 END) AS fresh,
                      count(p.last_polled_at) AS polled
               FROM mod_rss.poll_state p JOIN mod_rss.feeds f ON f.id = p.feed_id
               WHERE f.enabled AND NOT f.dead"""
        )
        st = await outbox.status(conn)
        published = await conn.fetchval("SELECT count(*) FROM host.outbox WHERE published_at IS NOT NULL")
        backends = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        )
    rss, fds, tcp = process_health()
    return Sample(
        t=round(time.monotonic() - started, 1),
        fresh=float(row["fresh"] or 0.0),
        polled=int(row["polled"]),
        pending=st.pending,
        lag_s=st.lag_seconds,
        published=int(published),
        rss_mb=round(rss, 1),
        fds=fds,
        tcp=tcp,
        pg_backends=int(backends),
    )


async def add_feeds(host: Host, urls: list[str]) -> None:
    """Bulk insert (10,000 single add_feed calls would dominate the setup)."""
    async with host.require_pool().acquire() as conn, conn.transaction():
        ids = await conn.fetch("INSERT INTO mod_rss.feeds (url) SELECT unnest($1::text[]) RETURNING id", urls)
        await conn.execute(
            "INSERT INTO mod_rss.poll_state (feed_id) SELECT unnest($1::bigint[])", [r["id"] for r in ids]
        )


def host_env(args: argparse.Namespace) -> dict[str, str]:
    env = {
        "FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS": "true",
        "FEEDEATER_JOB_RSS_POLL": args.poll_trigger,
        "FEEDEATER_RSS_MIN_INTERVAL_MINUTES": "1",
        "FEEDEATER_RSS_DEFAULT_INTERVAL_MINUTES": "1",
        "FEEDEATER_RSS_MAX_INTERVAL_MINUTES": str(args.max_interval),
        "FEEDEATER_RSS_LEASE_SECONDS": "60",
        # the AI jobs have nothing to talk to in a benchmark
        "FEEDEATER_JOB_RSS_EMBED": "1d",
        "FEEDEATER_JOB_RSS_UPDATECONTEXTS": "1d",
    }
    env.update({k: v for k, v in os.environ.items() if k.startswith("FEEDEATER_")})
    return env


async def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="feedeater-load-"))
    services = Services(home)
    endpoints = await asyncio.to_thread(services.up)
    farm = FeedFarm(
        FarmConfig(feeds=args.feeds, hosts=args.hosts, slow_s=args.slow_s, retry_after_s=60, **MIX)
    ).start()
    config = HostConfig(home, endpoints.database_url, endpoints.nats_url, "127.0.0.1", 0, "load")
    host = Host(config, env=host_env(args))
    samples: list[Sample] = []
    stop = asyncio.Event()
    try:
        await host.open()
        await add_feeds(host, farm.urls)
        started = time.monotonic()
        runner = asyncio.create_task(host.run(stop))
        deadline = started + args.minutes * 60
        while time.monotonic() < deadline:
            await asyncio.sleep(min(args.sample_s, max(0.0, deadline - time.monotonic())))
            s = await sample(host, started)
            samples.append(s)
            print(
                f"t={s.t:6.0f}s fresh={s.fresh:6.1%} polled={s.polled} pending={s.pending} lag={s.lag_s:.1f}s "
                f"published={s.published} rss={s.rss_mb}MB fds={s.fds} tcp={s.tcp} pg={s.pg_backends}",
                flush=True,
            )
        stop.set()
        await asyncio.wait_for(runner, 30)
        farm_stats = farm.stats()
    finally:
        stop.set()
        await host.close()
        farm.stop()
        await asyncio.to_thread(services.down)
    return report(args, samples, farm_stats)


def report(args: argparse.Namespace, samples: list[Sample], farm_stats: dict[str, Any]) -> dict[str, Any]:
    steady = [s for s in samples if s.t >= args.warmup_s] or samples
    first, last = steady[0], steady[-1]
    span = max(1.0, last.t - first.t)
    mid = steady[len(steady) // 2]
    health = [s for s in samples if s.t >= args.warmup_s / 2] or samples
    out = {
        "feeds": args.feeds,
        "minutes": args.minutes,
        "poll_trigger": args.poll_trigger,
        "freshness_mean": round(statistics.fmean(s.fresh for s in steady), 4),
        "freshness_min": round(min(s.fresh for s in steady), 4),
        "slo_held_share_of_samples": round(sum(s.fresh >= 0.95 for s in steady) / len(steady), 3),
        "events_per_s": round((last.published - first.published) / span, 1),
        "events_total": last.published,
        "outbox_lag_p50_s": round(percentile([s.lag_s for s in steady], 50), 2),
        "outbox_lag_p99_s": round(percentile([s.lag_s for s in steady], 99), 2),
        "rss_mb": {
            "start": health[0].rss_mb,
            "middle": health[len(health) // 2].rss_mb,
            "end": health[-1].rss_mb,
        },
        "rss_slope_mb_per_hour": round(slope_per_hour([s.t for s in health], [s.rss_mb for s in health]), 1),
        "fds": {"start": health[0].fds, "middle": mid.fds, "end": health[-1].fds},
        "fds_slope_per_hour": round(slope_per_hour([s.t for s in health], [float(s.fds) for s in health]), 1),
        "tcp": {"start": health[0].tcp, "middle": mid.tcp, "end": health[-1].tcp},
        "pg_backends": {
            "start": health[0].pg_backends,
            "middle": mid.pg_backends,
            "end": health[-1].pg_backends,
        },
        "farm": {"requests": farm_stats["requests"], "status": farm_stats["status"]},
        "samples": [s.__dict__ for s in samples],
    }
    return out


def parse_args(
    argv: list[str] | None = None, *, minutes: float = 5, sample_s: float = 10
) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--feeds", type=int, default=10_000)
    p.add_argument("--hosts", type=int, default=100, help="farm loopback addresses")
    p.add_argument("--minutes", type=float, default=minutes)
    p.add_argument("--poll-trigger", default="5s", help="FEEDEATER_JOB_RSS_POLL")
    p.add_argument("--max-interval", type=float, default=10, help="rss.max_interval_minutes")
    p.add_argument("--slow-s", type=float, default=2.0)
    p.add_argument("--sample-s", type=float, default=sample_s)
    p.add_argument("--warmup-s", type=float, default=120, help="excluded from the freshness and lag stats")
    p.add_argument("--out", type=Path, default=RESULTS / "load_farm.json")
    return p.parse_args(argv)


def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("feedeater").setLevel(logging.ERROR)  # 5 % of the farm fails on purpose
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # "skipped: already running" is expected
    result = asyncio.run(run(args))
    RESULTS.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    summary = {k: v for k, v in result.items() if k != "samples"}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main(parse_args())
