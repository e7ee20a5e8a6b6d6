"""Web console: server time per page at 100,000 entries and 2,000 feeds, and bytes per page load.

Data (synthetic, deterministic): 2,000 feeds in 40 folders (two levels), 50 entries each dated over 60
days (100,000), 10 stored fetches per feed, 100,000 outbox events over a week, a week of rss.poll runs (one a minute);
loaded with COPY. A real host (embedded PostgreSQL, no bus) serves its one ASGI app on loopback; every page
is requested `--rounds` times after one warm-up through httpx, one request at a time. The time is the
client's wall time per response over loopback (server work + a loopback round trip, ~1 ms here).
Bytes per page load: the HTML plus what a first visit fetches besides (console.css, console.js; frame.css
inside the entry's frame); later pages reuse the cached static files.

Target: p95 ≤ 150 ms for every page. Prints a table, the machine load (os.getloadavg) and CPU seconds
of this process and of PostgreSQL, and writes bench/results/console_pages.json.

    .venv/bin/python bench/console_pages.py [--feeds 2000] [--entries-per-feed 50] [--rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import resource
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
from measure import write_results  # noqa: E402

from bench import seed_entries  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import free_port  # noqa: E402

TARGET_P95_MS = 150.0
NOW = datetime.now(UTC).replace(microsecond=0)
WORDS = [
    "harbour",
    "lighthouse",
    "keeper",
    "storm",
    "tide",
    "vessel",
    "signal",
    "beacon",
    "coast",
    "island",
    "rope",
    "lantern",
    "north",
    "wind",
]
STATIC = ("/static/console/console.css", "/static/console/console.js")


def _text(i: int, n: int) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


async def load(pool: Any, feeds: int, per_feed: int) -> dict[str, float]:
    started = time.perf_counter()
    async with pool.acquire() as conn:
        await conn.copy_records_to_table(
            "feeds",
            schema_name="mod_rss",
            columns=["url", "title", "folder", "format"],
            records=[
                (
                    f"https://example.com/{f}.xml",
                    f"Feed {f} {_text(f, 2)}",
                    f"Topic{f % 8}/Sub{f % 5}",
                    "rss2.0",
                )
                for f in range(feeds)
            ],
        )
        await conn.execute(
            """INSERT INTO mod_rss.poll_state (feed_id, next_poll_at, last_polled_at, last_status, last_success_at,
                   successful_polls, interval_s, interval_reason, ewma_s, consecutive_errors, last_error)
               SELECT id, now() + (id % 60) * interval '1 minute', now() - interval '5 minutes', 200,
                      now() - interval '5 minutes', 10, 900 + id % 600, 'no-new+ewma', 3600 + id,
                      CASE WHEN id % 50 = 0 THEN 3 ELSE 0 END,
                      CASE WHEN id % 50 = 0 THEN 'HTTP 503' END
               FROM mod_rss.feeds"""
        )
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM mod_rss.feeds ORDER BY id")]
        records = []
        for n, feed_id in enumerate(ids):
            for k in range(per_feed):
                i = n * per_feed + k
                at = NOW - timedelta(minutes=(k * 1728 + n) % 86400)  # spread over 60 days
                body = _text(i, 60)
                records.append(
                    seed_entries.record(
                        feed_id, i, _text(i, 6), body, hashlib.sha256(body.encode()).hexdigest(), at
                    )
                )
        await seed_entries.copy_entries(conn, records)
        await conn.execute(
            """UPDATE mod_rss.entries SET link = 'https://example.com/' || feed_id || '/' || id, word_count = 60,
                   content_html = '<p>' || content_text || '</p><p><a href="https://example.com/">more</a></p>'"""
        )
        blob = b"<rss/>" * 1000
        sha = hashlib.sha256(blob).hexdigest()
        await conn.execute(
            "INSERT INTO mod_rss.raw_blobs (sha256, body, size) VALUES ($1, $2, $3)", sha, blob, len(blob)
        )
        await conn.execute(
            """INSERT INTO mod_rss.raw_fetches (feed_id, fetched_at, url, status, headers, body_sha256)
               SELECT f.id, now() - k * interval '1 hour', f.url, 200,
                      jsonb_build_object('etag', '"e' || k || '"', 'content-type', 'application/rss+xml'), $1
               FROM mod_rss.feeds f, generate_series(1, 10) k""",
            sha,
        )
        await conn.execute(
            """INSERT INTO host.outbox (event_id, subject, payload, created_at, published_at)
               SELECT gen_random_uuid(), 'feedeater.rss.messageCreated', '{}'::bytea,
                      now() - (g * interval '6 seconds'), now() - (g * interval '6 seconds')
               FROM generate_series(1, 100000) g"""
        )
        await conn.execute(
            """INSERT INTO host.job_runs (module, job, host_id, trigger, started_at, finished_at, status, metrics)
               SELECT 'rss', 'poll', 'bench', 'schedule', now() - g * interval '1 minute',
                      now() - g * interval '1 minute' + interval '3 seconds', 'ok', jsonb_build_object('feeds', 30 + g % 7)
               FROM generate_series(1, 10080) g"""
        )
        await conn.execute("ANALYZE")
    return {"load_s": round(time.perf_counter() - started, 1)}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(base: str, pages: dict[str, str], rounds: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        static = {p: len((await client.get(p)).content) for p in (*STATIC, "/static/console/frame.css")}
        for name, path in pages.items():
            first = await client.get(path)
            assert first.status_code == 200, (name, first.status_code, first.text[:300])
            times = []
            cpu = resource.getrusage(resource.RUSAGE_SELF)
            for _ in range(rounds):
                started = time.perf_counter()
                res = await client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                assert res.status_code == 200
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu_ms = (after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime) / rounds * 1000
            extra = sum(static[p] for p in STATIC) + (
                static["/static/console/frame.css"] if "iframe" in first.text else 0
            )
            out[name] = {
                "path": path,
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(_percentile(times, 0.95), 1),
                "max_ms": round(max(times), 1),
                "python_cpu_ms": round(cpu_ms, 1),  # server and client share this process
                "html_bytes": len(first.content),
                "first_load_bytes": len(first.content) + extra,
            }
    return out


def _postgres_cpu_s(postmaster: int | None) -> float | None:
    """CPU seconds of the postmaster and its live children (the pool's backends)."""
    if postmaster is None:
        return None
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat.parent.name) == postmaster or int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="console-pages-"))
    port = free_port()
    config = HostConfig(
        home=home, database_url=None, nats_url=None, http_host="127.0.0.1", http_port=port, host_id="bench"
    )
    host = Host(config, env={})
    await host.open(with_bus=False)
    served = None
    try:
        pool = host.require_pool()
        print(f"loading {args.feeds} feeds × {args.entries_per_feed} entries …", flush=True)
        timings = await load(pool, args.feeds, args.entries_per_feed)
        print(f"loaded in {timings['load_s']} s", flush=True)
        served = await host._serve_http()  # the same app `feedeater run` serves
        busy = await pool.fetchval(
            "SELECT feed_id FROM mod_rss.entries GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
        )
        entry = await pool.fetchval("SELECT id FROM mod_rss.entries WHERE feed_id = $1 LIMIT 1", busy)
        pages = {
            "overview": "/",
            "feeds (all, page 1 of 20)": "/rss/feeds",
            "feeds (one folder)": "/rss/feeds?folder=Topic3",
            "feeds (failing)": "/rss/feeds?failing=1",
            "feed detail": f"/rss/feeds/{busy}",
            "entry": f"/rss/entries/{entry}",
            "search (text)": "/rss/search?q=lighthouse+keeper",
            "search (folder)": "/rss/search?q=storm&folder=Topic2",
            "contexts": "/contexts",
            "settings": "/settings",
            "live bus": "/live",
            "digests": "/digest/digests",
        }
        pg_pid = host.services.postgres.status().pid
        pg_before = _postgres_cpu_s(pg_pid)
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        results = await measure(f"http://127.0.0.1:{served.port}", pages, args.rounds)
        wall = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
        pg_after = _postgres_cpu_s(pg_pid)
        return {
            "feeds": args.feeds,
            "entries": args.feeds * args.entries_per_feed,
            "rounds": args.rounds,
            "load": timings,
            "pages": results,
            "target_p95_ms": TARGET_P95_MS,
            "met": all(r["p95_ms"] <= TARGET_P95_MS for r in results.values()),
            "machine": {
                "loadavg": os.getloadavg(),
                "cpus": os.cpu_count(),
                "wall_s": round(wall, 1),
                "python_cpu_s": round(
                    cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 1
                ),
                "postgres_cpu_s": round(pg_after - pg_before, 1)
                if pg_after is not None and pg_before is not None
                else None,
            },
        }
    finally:
        if served is not None:
            await served.close()
        await host.close(stop_started_services=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feeds", type=int, default=2000)
    parser.add_argument("--entries-per-feed", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()}", flush=True)
    report = asyncio.run(run(args))
    print(
        f"\n{'page':<28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'CPU ms':>7} {'HTML':>9} {'first load':>11}"
    )
    for name, r in report["pages"].items():
        print(
            f"{name:<28} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['max_ms']:>8} {r['python_cpu_ms']:>7} {r['html_bytes']:>9,} {r['first_load_bytes']:>11,}"
        )
    m = report["machine"]
    print(
        f"\ntarget p95 ≤ {TARGET_P95_MS:g} ms: {'met' if report['met'] else 'MISSED'}; "
        f"load average {tuple(round(x, 2) for x in m['loadavg'])} on {m['cpus']} CPUs; "
        f"this process {m['python_cpu_s']} CPU s, PostgreSQL {m['postgres_cpu_s']} CPU s, over {m['wall_s']} s"
    )
    write_results("console_pages.json", report)


if __name__ == "__main__":
    main()
