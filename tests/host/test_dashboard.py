"""A running `feedeater run`: docs/grafana-feedeater.json cannot rot (every metric and label it queries is
served), and its polls reach an OTLP collector as traces."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.otlp import OtlpCollector
from tests.services import HostProcess, until

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-feedeater.json"
_SELECTOR = re.compile(r"\b(feedeater_[a-z0-9_]+)(\{[^}]*\})?")
_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def expressions(node: object) -> Iterator[str]:
    """Every PromQL `expr` in the dashboard (panels, nested rows)."""
    if isinstance(node, dict):
        if isinstance(node.get("expr"), str):
            yield node["expr"]
        for value in node.values():
            yield from expressions(value)
    elif isinstance(node, list):
        for value in node:
            yield from expressions(value)


def served(exposition: str) -> dict[str, set[str] | None]:
    """Queryable series names → label names seen on them (None: no samples yet, labels unknown)."""
    out: dict[str, set[str] | None] = {}
    for family in text_string_to_metric_families(exposition):
        labels = {k for s in family.samples for k in s.labels if k != "le"} if family.samples else None
        for suffix in _SUFFIXES.get(family.type, ("",)):
            out[family.name + suffix] = labels
    return out


async def test_every_dashboard_metric_exists_on_a_running_host(
    database_url: str, host_process: Callable[..., HostProcess]
) -> None:
    with FeedServer() as feeds, OtlpCollector() as collector:
        feeds.route("/feed", Route(body=rss([("a", "A", ago(hours=1), "x")]), encoding="gzip"))
        proc = host_process(  # FEEDEATER_HTTP_PORT=0: the banner names the port the system picked
            "dash",
            FEEDEATER_JOB_RSS_POLL="1s",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        )
        try:
            await proc.wait_ready()
            port = proc.port()
            conn = await asyncpg.connect(database_url)
            try:
                await store.add_feed(conn, url=feeds.url("/feed"))
            finally:
                await conn.close()

            async def polled() -> str | None:
                async with httpx.AsyncClient(timeout=5) as client:
                    text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
                return text if 'feedeater_rss_entries_total{change="new"} 1.0' in text else None

            exposition = await until(polled, timeout=60, what="a stored entry in the host's /metrics")
        finally:
            proc.stop()  # flushes the spans
    assert proc.proc.returncode == 0, proc.output()
    polls = [
        s
        for rs in collector.resource_spans()
        for scope in rs.scope_spans
        for s in scope.spans
        if s.name == "rss.poll" and not s.parent_span_id
    ]
    assert polls, "no rss.poll trace reached the collector"
    available = served(exposition)
    referenced: dict[str, set[str]] = {}  # metric → labels the dashboard filters it on
    for expr in expressions(json.loads(DASHBOARD.read_text())):
        for name, selector in _SELECTOR.findall(expr):
            referenced.setdefault(name, set()).update(_LABEL.findall(selector))
    assert len(referenced) >= 20
    missing = sorted(name for name in referenced if name not in available)
    assert not missing, f"the dashboard queries metrics no host serves: {missing}"
    for name, labels in referenced.items():
        known = available[name]
        if known is not None:
            assert labels <= known, f"{name}: the dashboard filters on labels it lacks: {labels - known}"
