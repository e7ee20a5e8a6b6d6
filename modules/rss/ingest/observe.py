"""What one poll tells the metrics and the trace (seed 001 §4.9): kept out of poll.py so the poll stays a
sequence of stages. Labels are low-cardinality only (status, encoding, reason): never a feed id or URL."""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

from host import tracing
from host.net.fetcher import FetchResult
from modules.rss import metrics, store
from modules.rss.ingest.schedule import Decision

_ENCODINGS = frozenset({"gzip", "x-gzip", "br", "deflate", "identity"})


def encoding_label(content_encoding: str | None) -> str:
    """The Content-Encoding as a bounded label: a known coding, `identity`, or `other` (stacked, unknown)."""
    coding = (content_encoding or "identity").strip().lower() or "identity"
    return coding.removeprefix("x-") if coding in _ENCODINGS else "other"


def poll_attributes(claim: store.Claim) -> tracing.Attributes | None:
    if not tracing.enabled():
        return None
    return {"feedeater.feed.id": claim.feed.id, "server.address": urlsplit(claim.feed.url).hostname or ""}


def fetched(claim: store.Claim, res: FetchResult) -> None:
    """Metrics of one fetch, and its attributes on the current span (the fetch's, then the poll's)."""
    if res.status == 200 and res.body is not None:
        label = encoding_label(res.headers.get("content-encoding"))
        metrics.WIRE_BYTES.labels(label).inc(res.wire_bytes)
        metrics.DECODED_BYTES.labels(label).inc(len(res.body))
        if res.wire_bytes:
            metrics.COMPRESSION_RATIO.labels(label).observe(len(res.body) / res.wire_bytes)
    elif res.status == 304:
        if claim.last_wire_bytes is None:
            metrics.NOT_MODIFIED_UNKNOWN.inc()
        else:
            metrics.SAVED_BYTES.inc(claim.last_wire_bytes)
    if claim.consecutive_errors and res.error_kind != "circuit_open":
        metrics.RETRIES.labels("recovered" if res.status in (200, 304) else "failed").inc()
    annotate_fetch(res)


def annotate_fetch(res: FetchResult) -> None:
    if not tracing.enabled():
        return
    tracing.annotate(
        {
            "http.response.status_code": res.status,
            "http.response.body.size": len(res.body) if res.body else 0,
            "feedeater.wire_bytes": res.wire_bytes,
            "feedeater.redirects": len(res.redirects),
        }
    )
    if res.error:
        tracing.annotate({"error.type": res.error_kind or "error"})
        tracing.fail(tracing.current(), res.error)


def scheduled(decision: Decision) -> None:
    """A successful poll's schedule: the interval chosen beside the feed's EWMA (seed 001 §10 panel)."""
    metrics.INTERVAL_CHOSEN.labels(decision.reason.split("+", 1)[0]).observe(decision.interval_s)
    if decision.ewma_s is not None:
        metrics.INTERVAL_EWMA.observe(decision.ewma_s)


def finished(counts: Counter[str]) -> None:
    """The poll's entry counts on the poll's span."""
    if tracing.enabled():
        tracing.annotate(
            {"feedeater.entries.new": counts["new"], "feedeater.entries.updated": counts["updated"]}
        )
