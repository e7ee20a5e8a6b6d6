"""What the poll-history triggers on `mod_rss.poll_state` cost per poll: rss/0016 (polls per day, for
feed health over 30 days) and rss/0017 (the schedule decisions ring the console's feed page shows).

Every poll ends with one UPDATE of its feed's poll_state row that sets `last_polled_at`; both triggers
fire on exactly that. This script times that UPDATE as the poll job issues it (one row per statement,
parameters bound) on --feeds feeds, --rounds times each, with both triggers, with only one, and with
none, interleaved so load drifts hit every variant alike. It reports wall µs per update and PostgreSQL
CPU µs per update (the postmaster's process tree), and the machine load.

    .venv/bin/python bench/history_triggers.py [--feeds 2000] [--rounds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402
from measure import cpu_tree_s, percentile  # noqa: E402

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import Services  # noqa: E402

TRIGGERS = {"poll_days": "poll_state_count_poll_day", "schedule_log": "poll_state_log_schedule_decision"}
VARIANTS = {"both": ("poll_days", "schedule_log"), "poll_days only": ("poll_days",), "none": ()}
UPDATE = """UPDATE mod_rss.poll_state SET next_poll_at = $2, interval_s = $3, interval_reason = $4,
            last_polled_at = $5, last_status = 304, last_success_at = $5, consecutive_errors = 0
            WHERE feed_id = $1"""


async def variant(
    conn: asyncpg.Connection, on: tuple[str, ...], feeds: list[int], pg_pid: int | None
) -> tuple[float, float, list[float]]:
    """One pass over every feed with these triggers enabled: (wall µs, PostgreSQL CPU µs) per update."""
    for name, trigger in TRIGGERS.items():
        state = "ENABLE" if name in on else "DISABLE"
        await conn.execute(f"ALTER TABLE mod_rss.poll_state {state} TRIGGER {trigger}")
    now = datetime.now(UTC)
    cpu0, t0 = cpu_tree_s(pg_pid), time.perf_counter()
    each = []
    for i, feed in enumerate(feeds):
        s = time.perf_counter()
        await conn.execute(
            UPDATE,
            feed,
            now + timedelta(hours=1),
            3600.0,
            "not-modified+ewma",
            now + timedelta(microseconds=i),
        )
        each.append((time.perf_counter() - s) * 1e6)
    wall, cpu = time.perf_counter() - t0, cpu_tree_s(pg_pid) - cpu0
    return wall / len(feeds) * 1e6, cpu / len(feeds) * 1e6, each


async def run(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="history-triggers-"))
    services = Services(home)
    endpoints = await asyncio.to_thread(lambda: services.up(with_nats=False))
    host = Host(
        HostConfig(
            home=home,
            database_url=endpoints.database_url,
            nats_url="nats://127.0.0.1:1",
            http_host="127.0.0.1",
            http_port=0,
            host_id="bench",
        )
    )
    try:
        await host.open(with_bus=False)
        pool = host.require_pool()
        async with pool.acquire() as conn:
            feeds = [
                r["id"]
                for r in await conn.fetch(
                    """INSERT INTO mod_rss.feeds (url) SELECT 'http://h' || g || '.example/f' FROM generate_series(1, $1) g
                       RETURNING id""",
                    args.feeds,
                )
            ]
            await conn.execute("INSERT INTO mod_rss.poll_state (feed_id) SELECT unnest($1::bigint[])", feeds)
            pg_pid = services.postgres.status().pid
            print(f"load before {os.getloadavg()}; {args.feeds} feeds, {args.rounds} rounds per variant")
            results: dict[str, list[tuple[float, float, list[float]]]] = {v: [] for v in VARIANTS}
            await variant(conn, VARIANTS["both"], feeds, pg_pid)  # warm-up: ring slots and day rows exist
            for _ in range(args.rounds):
                for name, on in VARIANTS.items():
                    results[name].append(await variant(conn, on, feeds, pg_pid))
            await variant(conn, VARIANTS["both"], feeds, pg_pid)  # leave them enabled
    finally:
        await host.close()
        await asyncio.to_thread(services.down, endpoints.started)
    print(f"\n{'triggers':16} {'wall µs/update':>15} {'p50':>7} {'p99':>7} {'PG CPU µs/update':>17}")
    for name, runs in results.items():
        wall = sum(r[0] for r in runs) / len(runs)
        cpu = sum(r[1] for r in runs) / len(runs)
        each = [x for r in runs for x in r[2]]
        print(
            f"{name:16} {wall:>15.1f} {percentile(each, 50):>7.1f} {percentile(each, 99):>7.1f} {cpu:>17.1f}"
        )
    print(f"load after {os.getloadavg()} on {os.cpu_count()} CPUs")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--feeds", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=6)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
