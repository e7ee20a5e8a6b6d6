"""Tracing, §4.9 metrics, the per-feed circuit breaker and the per-host rate limit, over real polls
(real feed server, PostgreSQL and JetStream)."""

from __future__ import annotations

import argparse
import asyncio
import gzip
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

from host import outbox, tracing
from host.breaker import BreakerParams
from host.net.fetcher import Fetcher
from host.runtime import Host
from modules.rss import cli, store
from tests.feedserver import FeedServer, Route, ago, rss

BODY = rss([("a", "Alpha", ago(hours=1), "<p>first</p>" * 50), ("b", "Beta", ago(hours=5), "second " * 80)])
GZIP_ROUTE = Route(body=BODY, etag='"v1"', encoding="gzip", headers={"Content-Type": "application/rss+xml"})


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    yield exporter
    tracing.install(None)
    provider.shutdown()


async def add(host: Host, url: str) -> int:
    async with host.require_pool().acquire() as conn:
        row, _ = await store.add_feed(conn, url=url)
    return row.id


async def poll(host: Host) -> dict[str, Any]:
    result = await host.run_job_once("rss.poll")
    assert result.status == "ok", result.error
    return dict(result.metrics)


async def make_due(host: Host) -> None:
    await host.require_pool().execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


async def test_one_trace_per_poll_with_a_span_per_stage(
    rss_host: Callable[..., Any], feed_server: FeedServer, spans: InMemorySpanExporter
) -> None:
    host = await rss_host(parse_workers="0")
    feed_server.route("/feed", GZIP_ROUTE)
    feed_id = await add(host, feed_server.url("/feed"))
    await poll(host)
    assert host.js is not None
    assert await outbox.Relay(host.require_pool(), host.js).drain_all() == 2

    finished = spans.get_finished_spans()
    [root] = by_name(finished, "rss.poll")
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes["feedeater.feed.id"] == feed_id
    assert root.attributes["server.address"] == "127.0.0.1"
    assert root.attributes["http.response.status_code"] == 200
    assert root.attributes["http.response.body.size"] == len(BODY)
    assert root.attributes["feedeater.wire_bytes"] == len(gzip.compress(BODY))
    assert root.attributes["feedeater.entries.new"] == 2
    assert root.attributes["feedeater.entries.updated"] == 0
    trace_id = root.context.trace_id
    children = {
        s.name: s for s in finished if s.parent is not None and s.parent.span_id == root.context.span_id
    }
    assert set(children) == {"rss.fetch", "rss.parse", "rss.store"}
    assert all(s.context.trace_id == trace_id for s in children.values())
    fetch = children["rss.fetch"].attributes
    assert fetch is not None
    assert fetch["http.response.status_code"] == 200 and fetch["feedeater.redirects"] == 0
    under_store = {
        s.name: s
        for s in finished
        if s.parent is not None and s.parent.span_id == children["rss.store"].context.span_id
    }
    assert set(under_store) == {"outbox.emit", "rss.schedule"}
    assert under_store["outbox.emit"].attributes == {"messaging.batch.message_count": 2}
    assert under_store["rss.schedule"].attributes["feedeater.outcome"] == "new_entries"  # type: ignore[index]
    # The relay publishes later, in its own trace.
    [published] = by_name(finished, "outbox.publish")
    assert published.parent is None and published.context.trace_id != trace_id
    assert published.attributes is not None
    assert published.attributes["messaging.batch.message_count"] == 2
    assert published.attributes["feedeater.published"] == 2

    # A second poll is a new trace: 304, no parse, no store; the error-free schedule decision hangs off it.
    spans.clear()
    await make_due(host)
    await poll(host)
    finished = spans.get_finished_spans()
    [root2] = by_name(finished, "rss.poll")
    assert root2.context.trace_id != trace_id
    assert root2.attributes is not None and root2.attributes["http.response.status_code"] == 304
    assert {s.name for s in finished if s.parent is not None} == {"rss.fetch", "rss.schedule"}


async def test_a_failed_fetch_marks_its_spans_as_errors(
    rss_host: Callable[..., Any], feed_server: FeedServer, spans: InMemorySpanExporter
) -> None:
    host = await rss_host()
    feed_server.route("/feed", Route(status=503))
    await add(host, feed_server.url("/feed"))
    await poll(host)
    finished = spans.get_finished_spans()
    [root] = by_name(finished, "rss.poll")
    [fetch] = by_name(finished, "rss.fetch")
    for s in (root, fetch):
        assert not s.status.is_ok and s.status.description == "HTTP 503 Service Unavailable"
        assert s.attributes is not None and s.attributes["error.type"] == "http"


async def test_metrics_move_after_real_polls(rss_host: Callable[..., Any], feed_server: FeedServer) -> None:
    host = await rss_host(parse_workers="0", circuit_failures="0")
    feed_server.route("/feed", GZIP_ROUTE)
    await add(host, feed_server.url("/feed"))
    wire = len(gzip.compress(BODY))
    before = {
        "wire": value("feedeater_rss_wire_bytes_total", encoding="gzip"),
        "decoded": value("feedeater_rss_decoded_bytes_total", encoding="gzip"),
        "ratios": value("feedeater_rss_compression_ratio_count", encoding="gzip"),
        "ratio_sum": value("feedeater_rss_compression_ratio_sum", encoding="gzip"),
        "saved": value("feedeater_rss_conditional_saved_bytes_total"),
        "chosen": value("feedeater_rss_interval_chosen_seconds_count", reason="new-entries"),
        "chosen_304": value("feedeater_rss_interval_chosen_seconds_count", reason="not-modified"),
        "ewma": value("feedeater_rss_interval_ewma_seconds_count"),
        "recovered": value("feedeater_rss_retries_total", outcome="recovered"),
        "failed": value("feedeater_rss_retries_total", outcome="failed"),
    }
    await poll(host)  # 200, gzip
    assert value("feedeater_rss_wire_bytes_total", encoding="gzip") - before["wire"] == wire
    assert value("feedeater_rss_decoded_bytes_total", encoding="gzip") - before["decoded"] == len(BODY)
    assert value("feedeater_rss_compression_ratio_count", encoding="gzip") - before["ratios"] == 1
    assert value("feedeater_rss_compression_ratio_sum", encoding="gzip") - before[
        "ratio_sum"
    ] == pytest.approx(len(BODY) / wire)
    assert value("feedeater_rss_interval_chosen_seconds_count", reason="new-entries") - before["chosen"] == 1
    assert value("feedeater_rss_interval_ewma_seconds_count") - before["ewma"] == 1  # two dated entries
    assert value("feedeater_rss_feeds", state="total") == 1

    await make_due(host)
    await poll(host)  # 304: saves the last body's wire size
    assert value("feedeater_rss_conditional_saved_bytes_total") - before["saved"] == wire
    assert (
        value("feedeater_rss_interval_chosen_seconds_count", reason="not-modified") - before["chosen_304"]
        == 1
    )

    feed_server.route("/feed", Route(status=500))
    for _ in range(2):  # the first failure is not a retry; the second is a failed one
        await make_due(host)
        await poll(host)
    assert value("feedeater_rss_feeds", state="due") == 1  # the gauge is read at the start of the tick
    feed_server.route("/feed", GZIP_ROUTE)
    await make_due(host)
    await poll(host)  # 304 again (the validators survived the errors): a recovered retry
    assert value("feedeater_rss_retries_total", outcome="failed") - before["failed"] == 1
    assert value("feedeater_rss_retries_total", outcome="recovered") - before["recovered"] == 1
    assert value("feedeater_rss_conditional_saved_bytes_total") - before["saved"] == 2 * wire


async def show(host: Host, feed_id: int) -> tuple[dict[str, Any], str]:
    data, text = await cli._show(host, argparse.Namespace(feed=str(feed_id)))
    return data, text(data)


async def test_circuit_opens_on_flapping_and_a_successful_probe_closes_it(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    host = await rss_host(
        circuit_failures="2", circuit_window="3", circuit_cooldown_minutes="90", parse_workers="0"
    )
    ok, broken = Route(body=BODY), Route(status=502)
    feed_server.route("/feed", broken)
    feed_id = await add(host, feed_server.url("/feed"))
    opened = value("feedeater_rss_circuit_transitions_total", to="opened")
    closed = value("feedeater_rss_circuit_transitions_total", to="closed")
    for route in (ok, broken):  # flapping: broken, ok, broken → 2 failures among the last 3 polls
        await poll(host)
        feed_server.route("/feed", route)
        await make_due(host)
    started = datetime.now(UTC)
    await poll(host)
    data, text = await show(host, feed_id)
    assert data["circuit"] == "open" and data["state"] == "circuit open (failing ×1)"
    assert data["next_poll_at"] >= started + timedelta(minutes=90)  # the cool-down, not the 1-minute backoff
    assert data["interval_reason"].endswith("+circuit-open")
    assert "circuit:" in text and "one probe at" in text
    assert value("feedeater_rss_circuit_transitions_total", to="opened") - opened == 1
    assert await poll(host) == {}  # not due: nothing is claimed while the circuit is open
    assert value("feedeater_rss_feeds", state="circuit_open") == 1

    await make_due(host)  # the cool-down passed: the next poll is the probe, and it fails
    started = datetime.now(UTC)
    await poll(host)
    data, _ = await show(host, feed_id)
    assert data["circuit"] == "open" and data["next_poll_at"] >= started + timedelta(minutes=180)
    feed_server.route("/feed", ok)
    await make_due(host)
    await poll(host)
    data, text = await show(host, feed_id)
    assert data["circuit"] == "closed" and data["state"] == "ok" and "circuit:" not in text
    assert "circuit" not in data["interval_reason"]  # back on the adaptive schedule
    assert value("feedeater_rss_circuit_transitions_total", to="closed") - closed == 1
    assert len(feed_server.requests_to("/feed")) == 5


async def test_many_feeds_on_one_host_respect_its_rate(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    """30 feeds on one host, no concurrency cap to hide behind: the server never sees more than
    burst + rate × window requests in any window (a count of server-side arrivals, not a timing)."""
    rate, burst, feeds = 10.0, 3, 30
    host = await rss_host(
        per_host_rate=str(rate), per_host_burst=str(burst), per_host_concurrency="50", parse_workers="0"
    )
    for i in range(feeds):
        feed_server.route(f"/f/{i}", Route(body=BODY))
        await add(host, feed_server.url(f"/f/{i}"))
    metrics = await poll(host)
    assert metrics["status_200"] == feeds
    arrivals = sorted(r.received_at for r in feed_server.requests)
    assert len(arrivals) == feeds
    for window in (0.2, 0.5, 1.0):
        busiest = max(sum(1 for t in arrivals[i:] if t - first <= window) for i, first in enumerate(arrivals))
        # +1: network jitter may bring two arrivals closer together than their starts were
        assert busiest <= burst + rate * window + 1, (window, busiest)


async def test_a_failing_host_rests_then_one_probe_closes_its_circuit(feed_server: FeedServer) -> None:
    """Fetcher level, with an injected clock: after 3 failures in a row no request reaches the host until
    the cool-down ends; then one probe goes out, and its success lets everything through again."""
    clock = [1000.0]
    params = BreakerParams(failures=3, window=3, cooldown_s=60, max_cooldown_s=600)
    feed_server.route("/a", Route(status=503))
    feed_server.route("/b", Route(body=BODY))
    async with Fetcher(
        user_agent="t", allow_private_networks=True, host_circuit=params, clock=lambda: clock[0]
    ) as fetcher:
        assert [(await fetcher.fetch(feed_server.url("/a"))).status for _ in range(3)] == [503] * 3
        refused = await fetcher.fetch(feed_server.url("/b"))  # same host, other feed: not even asked
        assert refused.error_kind == "circuit_open" and refused.retry_after_s == 60
        assert len(feed_server.requests) == 3
        assert value("feedeater_fetch_hosts_circuit_open") >= 1
        clock[0] += 60
        probe, other = await asyncio.gather(
            fetcher.fetch(feed_server.url("/b")), fetcher.fetch(feed_server.url("/b"))
        )
        assert sorted([probe.status, other.status]) == [0, 200]  # one probe at a time
        assert (await fetcher.fetch(feed_server.url("/b"))).status == 200  # closed
        assert len(feed_server.requests) == 5


async def test_a_feed_refused_by_its_hosts_circuit_waits_without_counting_a_failure(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    host = await rss_host(
        host_circuit_failures="2", host_circuit_cooldown_seconds="600", circuit_failures="0"
    )
    feed_server.route("/down", Route(status=500))
    feed_server.route("/fine", Route(body=BODY))
    down = [await add(host, feed_server.url(f"/down?{i}")) for i in range(2)]
    await poll(host)  # two 500s from one host: its circuit opens
    fine = await add(host, feed_server.url("/fine"))
    started = datetime.now(UTC)
    assert (await poll(host)).get("status_circuit_open") == 1
    assert len(feed_server.requests) == 2
    data, _ = await show(host, fine)
    assert data["consecutive_errors"] == 0 and data["last_polled_at"] is None and data["state"] == "new"
    assert data["next_poll_at"] >= started + timedelta(seconds=600)
    assert [(await show(host, f))[0]["consecutive_errors"] for f in down] == [1, 1]


async def test_fetches_in_flight_when_a_host_circuit_opens_do_not_count_as_failed_probes(
    feed_server: FeedServer,
) -> None:
    params = BreakerParams(failures=2, window=2, cooldown_s=60, max_cooldown_s=600)
    # All four are in flight together: none is answered before the fourth arrives.
    feed_server.route("/slow", Route(status=503, hold_until=lambda: feed_server.peak_concurrency() >= 4))
    async with Fetcher(
        user_agent="t", allow_private_networks=True, per_host_limit=10, host_circuit=params, clock=lambda: 0.0
    ) as fetcher:
        results = await asyncio.gather(*(fetcher.fetch(feed_server.url(f"/slow?{i}")) for i in range(4)))
        assert [r.status for r in results] == [503] * 4
        refused = await fetcher.fetch(feed_server.url("/slow"))
    assert refused.error_kind == "circuit_open" and refused.retry_after_s == 60  # one opening, not three
