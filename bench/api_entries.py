"""REST API: `GET /api/v1/feeds/{id}/entries` latency at 100,000 entries, paging with the cursor, and
requests/s under concurrent clients.

Data: N entries COPYed into one feed (plus two small ones, so the feed filter matters), every third
entry sharing its neighbour's effective time (so the cursor's id tie-break is exercised). The server is
the host's real ASGI app (`host.web.app.build_app` with the rss module's routes, auth and error handling)
served by uvicorn in a child process; this process is the client (httpx, keep-alive), so the two do
not share an event loop.

Measured:
1. sequential: page through every entry of the big feed with `limit` and `next_cursor` (each page's
   latency; the last pages cost what the first do, or keyset paging is broken);
2. random deep pages: requests at cursors taken from step 1, in random order (cold positions);
3. throughput: `--clients` concurrent clients paging for `--seconds`: requests/s.
Printed with the load average and the CPU seconds of the server and the client.
Target: p99 ≤ 50 ms.

    .venv/bin/python bench/api_entries.py [--entries 100000] [--limit 50] [--clients 8] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psutil

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from measure import write_results  # noqa: E402

from bench import seed_entries  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402

TARGET_P99_MS = 50.0
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _config(home: Path, database_url: str | None) -> HostConfig:
    return HostConfig(
        home=home,
        database_url=database_url,
        nats_url=None,
        http_host="127.0.0.1",
        http_port=0,
        host_id="bench",
    )


async def load(host: Host, n: int) -> tuple[int, float]:
    """The big feed's id, and the seconds the COPY took."""
    async with host.require_pool().acquire() as conn:
        feed_ids = []
        for i in range(3):
            row = await conn.fetchrow(
                "INSERT INTO mod_rss.feeds (url, title, enabled) VALUES ($1, $2, false) RETURNING id",
                f"https://example.com/{i}.xml",
                f"Feed {i}",
            )
            assert row is not None
            feed_ids.append(row["id"])
            await conn.execute("INSERT INTO mod_rss.poll_state (feed_id) VALUES ($1)", row["id"])
        started = time.perf_counter()
        records = []
        for i in range(n + 2000):
            feed = feed_ids[0] if i < n else feed_ids[1 + i % 2]
            at = NOW - timedelta(minutes=i - i % 3)  # groups of three share a time: the id breaks ties
            records.append(seed_entries.record(feed, i, f"Entry {i}", f"text {i}", f"h{i}", at))
        await seed_entries.copy_entries(conn, records)
        await conn.execute("ANALYZE mod_rss.entries")
        return feed_ids[0], time.perf_counter() - started


def serve(database_url: str, home: str, ports: Any) -> None:
    """Child process: the host's ASGI app with the rss routes, until terminated."""

    async def main() -> None:
        from host.web import app as web_app
        from host.web import server

        host = Host(_config(Path(home), database_url), env={"FEEDEATER_HOST_EMBEDDER": "none"})
        await host.open(with_bus=False)
        ctx = await host.context("rss")
        mounted = [(ctx, r) for r in host.specs["rss"].manifest.routes]

        async def health() -> dict[str, Any]:
            return {"ok": True}

        app = await web_app.build_app(health, mounted, version="bench", pool=host.require_pool())
        served = await server.serve(app, "127.0.0.1", 0)
        ports.put(served.port)
        await asyncio.Event().wait()

    asyncio.run(main())


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
    }


async def page_through(client: httpx.AsyncClient, url: str, limit: int) -> tuple[list[float], list[str], int]:
    times, cursors, seen = [], [], 0
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        started = time.perf_counter()
        res = await client.get(url, params=params)
        times.append(time.perf_counter() - started)
        res.raise_for_status()
        page = res.json()
        seen += len(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return times, cursors, seen
        cursors.append(cursor)


async def throughput(
    base: str, url: str, cursors: list[str], limit: int, clients: int, seconds: float
) -> dict[str, Any]:
    done = 0
    deadline = time.perf_counter() + seconds
    times: list[float] = []

    async def one(seed: int) -> None:
        nonlocal done
        rng = random.Random(seed)
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                res = await client.get(url, params={"limit": limit, "cursor": rng.choice(cursors)})
                times.append(time.perf_counter() - started)
                res.raise_for_status()
                done += 1

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(clients)))
    return {
        "clients": clients,
        "requests_per_s": round(done / (time.perf_counter() - started), 1),
        **percentiles(times),
    }


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="api-bench-"))
    host = Host(_config(home, None), env={"FEEDEATER_DB_POOL": "2"})
    await host.open(with_bus=False)
    child: multiprocessing.process.BaseProcess | None = None
    try:
        assert host.endpoints is not None
        print(f"loading {args.entries} entries …", flush=True)
        feed_id, load_s = await load(host, args.entries)
        mp = multiprocessing.get_context("spawn")
        ports = mp.Queue()
        child = mp.Process(target=serve, args=(host.endpoints.database_url, str(home / "server"), ports))
        child.start()
        port = ports.get(timeout=120)
        server, client_proc = psutil.Process(child.pid), psutil.Process()
        base, url = f"http://127.0.0.1:{port}", f"/api/v1/feeds/{feed_id}/entries"
        async with host.require_pool().acquire() as conn:
            plan = await conn.fetch(
                """EXPLAIN (ANALYZE) SELECT e.id FROM mod_rss.entries e WHERE e.feed_id = $1
                   AND (e.effective_at, e.id) < ($2, $3) ORDER BY e.effective_at DESC, e.id DESC LIMIT $4""",
                feed_id,
                NOW - timedelta(days=30),
                2**62,
                args.limit,
            )
        load_before = os.getloadavg()
        cpu_before = (cpu_s(server), cpu_s(client_proc))
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            await client.get(url, params={"limit": args.limit})  # warm the connection and the plan
            times, cursors, seen = await page_through(client, url, args.limit)
            assert seen == args.entries, f"paged through {seen} entries, expected {args.entries}"
            shuffled = random.Random(7).sample(cursors, min(len(cursors), 500))
            deep = []
            for c in shuffled:
                started = time.perf_counter()
                (await client.get(url, params={"limit": args.limit, "cursor": c})).raise_for_status()
                deep.append(time.perf_counter() - started)
        tput = await throughput(base, url, cursors, args.limit, args.clients, args.seconds)
        cpu_after = (cpu_s(server), cpu_s(client_proc))
        first, last = times[: len(times) // 10], times[-len(times) // 10 :]
        return {
            "entries": args.entries,
            "limit": args.limit,
            "load_s": round(load_s, 1),
            "sequential": percentiles(times),
            "sequential_first_tenth_p50_ms": percentiles(first)["p50_ms"],
            "sequential_last_tenth_p50_ms": percentiles(last)["p50_ms"],
            "random_deep_pages": percentiles(deep),
            "throughput": tput,
            "server_cpu_ms_per_request": round(
                (cpu_after[0] - cpu_before[0]) * 1000 / (len(times) + len(deep) + tput["n"] + 1), 2
            ),
            "cpu_s": {
                "server": round(cpu_after[0] - cpu_before[0], 1),
                "client": round(cpu_after[1] - cpu_before[1], 1),
            },
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "plan": [r[0] for r in plan],
            "target_p99_ms": TARGET_P99_MS,
        }
    finally:
        if child is not None:
            child.terminate()
            child.join(10)
        await host.close(stop_started_services=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    report["machine"] = {"cpus": os.cpu_count(), "at": datetime.now(UTC).isoformat()}
    print("\n".join(report["plan"]))
    print(f"\nGET /api/v1/feeds/{{id}}/entries at {report['entries']} entries, limit {report['limit']}")
    print(f"{'':24} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name in ("sequential", "random_deep_pages", "throughput"):
        r = report[name]
        print(f"{name:24} {r['n']:>6} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['max_ms']:>8.1f}")
    print(
        f"first/last tenth of the pages p50: {report['sequential_first_tenth_p50_ms']} / "
        f"{report['sequential_last_tenth_p50_ms']} ms"
    )
    print(
        f"throughput: {report['throughput']['requests_per_s']} requests/s with {report['throughput']['clients']} clients"
    )
    print(f"server CPU per request: {report['server_cpu_ms_per_request']} ms")
    print(
        f"CPU s: {report['cpu_s']}; load average before {report['loadavg_before']}, after {report['loadavg_after']}"
    )
    ok = (
        report["sequential"]["p99_ms"] <= TARGET_P99_MS
        and report["random_deep_pages"]["p99_ms"] <= TARGET_P99_MS
    )
    print("target met (p99 ≤ 50 ms)" if ok else "target NOT met (p99 ≤ 50 ms)")
    write_results("api_entries.json", report)


if __name__ == "__main__":
    main()
