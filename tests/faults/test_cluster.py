"""A three-node JetStream cluster (issue #24): replicated streams (R3) and consumers, a host connected
through FEEDEATER_NATS_URL with all three servers, ingesting without pause while nodes die and return.

Faults, in one run of the host (it is never restarted): the node it is connected to is killed mid-ingest,
then restarted; the leader of the shared stream (a node holding a replica, not the connected one) is
killed, then restarted. After each, publishing and both subscriptions resume by themselves; at the end
every event is in its stream exactly once and every subscription handled each event exactly once. The
time without publishing around each fault is printed (`-s`) from JetStream's stored timestamps; it is
measured, never asserted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client

from host import bus, streams
from host.runtime import Host
from host.services import EmbeddedNats, cluster_url, nats_cluster
from tests import ticker
from tests.services import BusReader, make_host, running, until

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[EmbeddedNats]]:
    nodes = nats_cluster(tmp_path / "cluster")
    try:
        for node in nodes:
            node.start()
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def connected_node(nc: Client, nodes: list[EmbeddedNats]) -> EmbeddedNats:
    assert nc.connected_url is not None
    return next(n for n in nodes if n.fixed_port == nc.connected_url.port)


async def leader(nc: Client, stream: str) -> str | None:
    answer = await bus.api(nc, f"STREAM.INFO.{stream}")
    return (answer.get("cluster") or {}).get("leader")


async def all_current(nc: Client) -> bool:
    """Every bus stream has a leader and two current replicas (a restarted node has caught up)."""
    for stream in streams.BUS_STREAMS:
        try:
            cluster = (await bus.api(nc, f"STREAM.INFO.{stream}")).get("cluster") or {}
        except (bus.ApiError, TimeoutError):
            return False
        replicas = cluster.get("replicas") or []
        if not cluster.get("leader") or len(replicas) != 2 or not all(r.get("current") for r in replicas):
            return False
    return True


async def flowing(host: Host, since: float, count: int = 40) -> bool:
    """`count` ticks published and handled by both messageCreated subscriptions after `since`."""
    return bool(
        await host.require_pool().fetchval(
            """SELECT (SELECT count(*) FROM host.outbox WHERE subject = 'feedeater.ticker.messageCreated'
                         AND published_at > to_timestamp($1)) >= $2
                  AND (SELECT count(*) FROM mod_ticker.seen WHERE consumer = 'created' AND at > to_timestamp($1)) >= $2
                  AND (SELECT count(*) FROM mod_ticker.seen WHERE consumer = 'everything' AND at > to_timestamp($1)) >= $2""",
            since,
            count,
        )
    )


async def counts(host: Host) -> str:
    """Events in (ticks, outbox rows) and out (published, handled per subscription) right now."""
    row = await host.require_pool().fetchrow(
        """SELECT (SELECT count(*) FROM mod_ticker.emitted) AS ticks,
                  (SELECT count(*) FROM host.outbox WHERE subject LIKE 'feedeater.ticker.%') AS written,
                  (SELECT count(*) FROM host.outbox WHERE subject LIKE 'feedeater.ticker.%'
                     AND published_at IS NOT NULL) AS published,
                  (SELECT count(*) FROM mod_ticker.seen WHERE consumer = 'everything') AS handled"""
    )
    assert row is not None
    return f"{row['ticks']} ticks, {row['written']} events written, {row['published']} published, {row['handled']} handled"


def gap_around(stored: list[float], at: float) -> float:
    """Seconds between the last event stored before `at` and the first stored after it (pure)."""
    before = max((t for t in stored if t <= at), default=None)
    after = min((t for t in stored if t > at), default=None)
    return float("nan") if before is None or after is None else after - before


async def test_cluster_loses_and_regains_nodes_while_the_host_ingests(
    tmp_path: Path, database_url: str, cluster: list[EmbeddedNats]
) -> None:
    host = make_host(tmp_path, database_url, cluster_url(cluster))
    ticker.install(host)
    faults: list[tuple[str, float, str]] = []  # what, when, the counts then

    async def fault(what: str) -> float:
        at = time.time()
        faults.append((what, at, await counts(host)))
        return at

    async with running(host):
        nc = host.nc
        assert nc is not None and bus.known_servers(nc) == 3
        for stream in streams.BUS_STREAMS:
            config = await bus.stream_config(nc, stream)
            assert config is not None and config["num_replicas"] == 3  # auto: three servers known
        await until(lambda: flowing(host, 0), what="ingest flowing", timeout=120)
        consumer = await nc.jetstream().consumer_info(streams.SHARED, "ticker_created")
        assert consumer.cluster is not None and len(consumer.cluster.replicas or []) == 2  # R3, as its stream

        victim = connected_node(nc, cluster)
        victim.kill()
        at = await fault(f"connected node {victim.node and victim.node.name} killed")
        await until(
            lambda: flowing(host, at), what="ingest flowing after the connected node died", timeout=120
        )
        assert connected_node(nc, cluster) is not victim

        victim.start()
        at = await fault(f"node {victim.node and victim.node.name} restarted")
        await until(lambda: all_current(nc), what="the restarted node caught up", timeout=120)
        await until(lambda: flowing(host, at), what="ingest flowing after the restart", timeout=120)

        # A node holding a replica: the shared stream's leader, moved off the connected node if need be.
        here = connected_node(nc, cluster)
        for _ in range(10):
            name = await leader(nc, streams.SHARED)
            if name and here.node is not None and name != here.node.name:
                break
            await bus.api(nc, f"STREAM.LEADER.STEPDOWN.{streams.SHARED}")
            await asyncio.sleep(1)
        holder = next(n for n in cluster if n.node is not None and n.node.name == name)
        holder.kill()
        at = await fault(f"stream leader {name} killed")
        await until(lambda: flowing(host, at), what="ingest flowing after the leader died", timeout=120)
        holder.start()
        at = await fault(f"node {name} restarted")
        await until(lambda: all_current(nc), what="the restarted leader caught up", timeout=120)
        await until(lambda: flowing(host, at), what="ingest flowing after the second restart", timeout=120)

        emitted = await ticker.stop(host)
        await until(lambda: ticker.drained(host), what="outbox drained", timeout=180)
        sent = await ticker.assert_every_event_once(host, nc)
        assert len([s for s in sent.values() if s.endswith(".messageCreated")]) == emitted
        report = await host.health()
        assert report["status"] == "ok", report["degraded"]
        units = {u["name"]: u for u in report["units"] if u["module"] == "ticker"}
        assert all(u["state"] == "running" for u in units.values())  # resumed, the host never restarted
        stored = sorted(
            m["_stored"]
            for m in await BusReader(nc.jetstream(), stream=streams.SHARED).all("feedeater.ticker.>")
        )
        handled = {c: await ticker.handled(host, c) for c in ticker.SUBSCRIBED}
    print(
        f"\ncluster faults: {emitted} ticks, {len(sent)} events in, {len(stored)} messageCreated stored, handled {handled}"
    )
    for what, at, then in faults:
        print(f"  {what}: no publishing for {gap_around(stored, at):.2f} s; at the fault {then}")
    print("  restarts of the ticker's units: " + ", ".join(f"{n} {u['restarts']}" for n, u in units.items()))
