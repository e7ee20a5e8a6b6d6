"""NDJSON tap throughput (issue #11): entry events per second the tap writes through its real consumer.

Steps: embedded PostgreSQL + NATS in a temporary FEEDEATER_HOME; N synthetic rss MessageCreated events
(messages of ~1 KB) go through the outbox and the relay onto JetStream; then the tap's `created`
subscription runs as `feedeater run` runs it (host.consumers.Consumer: one transaction per event with
the processed-id record, the offset row lock, the write and fsync) until every event is in the file.
Reports events/s, bytes/s, CPU seconds of this process and of PostgreSQL, and the machine's load.

    PYTHONPATH=$PWD .venv/bin/python bench/tap_throughput.py [--events 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/tap_throughput.py` puts bench/ first, not the repo
    sys.path.insert(0, str(REPO))

from measure import cpu_tree_s  # noqa: E402  (bench/ is on sys.path when run as a script)

from host import consumers, outbox  # noqa: E402
from host.config import HostConfig  # noqa: E402
from host.events import iso_z, message_created  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.supervise import Unit  # noqa: E402
from tests.services import module_installed  # noqa: E402


def message(i: int) -> dict[str, object]:
    mid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-tap-{i}"))
    return {
        "id": mid,
        "createdAt": iso_z(datetime.now(UTC)),
        "source": {"module": "rss", "stream": "1"},
        "realtime": True,
        "Message": f"entry {i} " + "lorem ipsum dolor sit amet " * 30,
        "From": "bench",
        "tags": {"source": "rss", "feedId": "1"},
        "rss": {"feedId": 1, "guid": f"g{i}", "fetchId": None},
    }


def postmaster(home: Path) -> int | None:
    pids = [int(p.read_text().split()[0]) for p in home.rglob("postmaster.pid")]
    return pids[0] if pids else None


async def run(events: int) -> None:
    load_start = os.getloadavg()
    with (
        tempfile.TemporaryDirectory(prefix="tap-bench-") as tmp,
        module_installed(Path(tmp) / "site", "tap", "modules.tap:MODULE"),
    ):
        home = Path(tmp) / "home"
        config = HostConfig(home, None, None, "127.0.0.1", 0, "bench")
        host = Host(config, env={"FEEDEATER_TAP_DIRECTORY": str(Path(tmp) / "out")})
        await host.open()
        try:
            pool = host.require_pool()
            await host.set_enabled("tap", True)
            emit = outbox.emitter("rss", ("messageCreated",))
            async with pool.acquire() as conn, conn.transaction():
                await emit(conn, *(message_created("rss", message(i)) for i in range(events)))
            assert host.js is not None
            await outbox.Relay(pool, host.js).drain_all()
            ctx = await host.context("tap")
            sub = next(s for s in host.specs["tap"].manifest.subscriptions if s.name == "created")
            consumer = consumers.Consumer(ctx, sub, host.js, Unit("tap", "created", "subscription"))
            pg = postmaster(home)
            pg_cpu0 = cpu_tree_s(pg) if pg else 0.0
            me0 = resource.getrusage(resource.RUSAGE_SELF)
            started = time.monotonic()
            task = asyncio.create_task(consumer.run())
            count = "SELECT count(*) FROM host.processed_events WHERE consumer = 'tap.created'"
            while await pool.fetchval(count) < events:
                if task.done():
                    task.result()
                await asyncio.sleep(0.05)
            seconds = time.monotonic() - started
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            me1 = resource.getrusage(resource.RUSAGE_SELF)
            pg_cpu = (cpu_tree_s(pg) - pg_cpu0) if pg else float("nan")
            size = sum(p.stat().st_size for p in (Path(tmp) / "out" / "entries").iterdir())
        finally:
            await host.close(stop_started_services=True)
    host_cpu = (me1.ru_utime - me0.ru_utime) + (me1.ru_stime - me0.ru_stime)
    print(
        f"events: {events}  wall: {seconds:.2f} s  → {events / seconds:.0f} events/s, {size / seconds / 1e6:.2f} MB/s"
    )
    print(
        f"cpu: host process {host_cpu:.2f} s ({host_cpu / events * 1000:.2f} ms/event), postgres {pg_cpu:.2f} s"
    )
    print(
        f"load avg at start {load_start[0]:.2f} / at end {os.getloadavg()[0]:.2f}  (cores: {os.cpu_count()})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3000)
    asyncio.run(run(parser.parse_args().events))


if __name__ == "__main__":
    main()
