"""WebSub push-to-event latency: from the hub's POST to the MessageCreated arriving on NATS.

A real hub (tests/websubhub.py) on loopback pushes signed Atom documents, one new entry each (plus the
previous nine, as hubs send the whole feed), to the host's ASGI app (uvicorn, the rss callback routes);
the document goes raw store → parse → intake → outbox, and the outbox relay publishes to JetStream. A
core NATS subscription records when each entry's MessageCreated arrives. Target: p99 ≤ 1 s.

    python bench/websub_latency.py [--pushes 500] [--concurrency 1]

Prints p50/p90/p99/max, pushes/s, CPU seconds of this process, PostgreSQL and NATS, and the load average
before and after (the VM is shared: compare runs at similar load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/websub_latency.py` puts bench/ first, not the repo
    sys.path.insert(0, str(REPO))

import nats  # noqa: E402
from measure import cpu_tree_s, percentile  # noqa: E402  (bench/ is on sys.path when run as a script)

from host import outbox  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import Services, free_port  # noqa: E402
from host.web.app import build_app  # noqa: E402
from host.web.server import serve  # noqa: E402
from modules.rss import store  # noqa: E402
from tests.feedserver import FeedServer, Route  # noqa: E402
from tests.websubhub import Hub  # noqa: E402


def atom(hub: str, topic: str, newest: int, start: datetime) -> bytes:
    """The feed as a hub distributes it: entries newest-9 … newest, one minute apart."""
    entries = "".join(
        f"<entry><id>p{i}</id><title>Push {i}</title><link href='http://example.org/p{i}'/>"
        f"<updated>{(start + timedelta(minutes=i)).isoformat()}</updated>"
        f"<content type='html'>&lt;p&gt;Entry {i} of the latency benchmark.&lt;/p&gt;</content></entry>"
        for i in range(max(0, newest - 9), newest + 1)
    )
    return (
        "<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'><title>Bench</title><id>urn:bench</id>"
        f"<updated>{start.isoformat()}</updated><link rel='hub' href='{hub}'/><link rel='self' href='{topic}'/>"
        f"{entries}</feed>"
    ).encode()


async def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    services = Services(home)
    endpoints = await asyncio.to_thread(services.up)
    pids = {"postgres": services.postgres.status().pid, "nats": services.nats.status().pid}
    port = free_port()
    config = HostConfig(
        home=home,
        database_url=endpoints.database_url,
        nats_url=endpoints.nats_url,
        http_host="127.0.0.1",
        http_port=port,
        host_id="bench-websub",
    )
    env = {
        "FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS": "true",
        "FEEDEATER_RSS_WEBSUB_CALLBACK_BASE": f"http://127.0.0.1:{port}",
        "FEEDEATER_RSS_WEBSUB_HTTP_HUBS": "true",  # the bench's hub speaks plain http on loopback
    }
    host = Host(config, env=env)
    stop = asyncio.Event()
    with FeedServer() as feeds, Hub() as hub:
        try:
            await host.open()
            pool = host.require_pool()
            ctx = await host.context("rss")
            app = await build_app(
                host.health, [(ctx, r) for r in host.specs["rss"].manifest.routes], version="bench"
            )
            served = await serve(app, "127.0.0.1", port)
            assert host.js is not None
            relay = asyncio.create_task(outbox.Relay(pool, host.js).run(stop))
            start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
            topic = feeds.url("/feed")
            feeds.route("/feed", Route(body=atom(hub.url, topic, 0, start)))
            async with pool.acquire() as conn:
                feed, _ = await store.add_feed(conn, url=topic)
            await host.run_job_once("rss.poll")
            for _ in range(300):
                if await pool.fetchval(
                    "SELECT state = 'active' FROM mod_rss.websub WHERE feed_id = $1", feed.id
                ):
                    break
                await asyncio.sleep(0.1)
            else:
                raise SystemExit("the hub never verified the subscription")

            arrived: dict[str, float] = {}
            nc = await nats.connect(endpoints.nats_url)

            async def on_msg(msg: Any) -> None:
                arrived[json.loads(msg.data)["message"]["rss"]["guid"]] = time.perf_counter()

            await nc.subscribe("feedeater.rss.messageCreated", cb=on_msg)
            sent: dict[str, float] = {}
            gate = asyncio.Semaphore(args.concurrency)

            async def push_one(i: int) -> None:
                body = atom(hub.url, topic, i, start)
                async with gate:
                    sent[f"p{i}"] = time.perf_counter()
                    [(status, reply)] = await asyncio.to_thread(hub.publish, topic, body)
                    if status != 202:
                        raise SystemExit(f"push {i}: {status} {reply!r}")

            load_before = os.getloadavg()
            cpu_before = {"bench": cpu_tree_s(os.getpid()), **{k: cpu_tree_s(v) for k, v in pids.items()}}
            t0 = time.perf_counter()
            await asyncio.gather(*(push_one(i) for i in range(1, args.pushes + 1)))
            for _ in range(600):
                if len(set(sent) & set(arrived)) == len(sent):
                    break
                await asyncio.sleep(0.05)
            elapsed = time.perf_counter() - t0
            cpu_after = {"bench": cpu_tree_s(os.getpid()), **{k: cpu_tree_s(v) for k, v in pids.items()}}
            latencies = [arrived[g] - sent[g] for g in sent if g in arrived]
            await nc.close()
            stop.set()
            await relay
            await served.close()
        finally:
            await host.close()
            await asyncio.to_thread(services.down, endpoints.started)
    ms = [x * 1000 for x in latencies]
    return {
        "pushes": args.pushes,
        "concurrency": args.concurrency,
        "events_received": len(latencies),
        "latency_ms": {
            "p50": round(percentile(ms, 50), 1),
            "p90": round(percentile(ms, 90), 1),
            "p99": round(percentile(ms, 99), 1),
            "max": round(max(ms), 1),
        },
        "target_p99_ms": 1000,
        "pushes_per_s": round(args.pushes / elapsed, 1),
        "cpu_s": {k: round(cpu_after[k] - cpu_before[k], 2) for k in cpu_before},
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pushes", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=1, help="pushes in flight at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="websub-bench-") as tmp:
        result = asyncio.run(run(args, Path(tmp)))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
