"""Prometheus metrics of the RSS module (low-cardinality labels only: no per-feed series)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

FETCHES = Counter("feedeater_rss_fetches_total", "Feed fetches by HTTP status or error kind", ["status"])
BYTES = Counter("feedeater_rss_fetched_bytes_total", "Bytes of feed bodies received")
ENTRIES = Counter("feedeater_rss_entries_total", "Entries stored", ["change"])
PARSE_ERRORS = Counter(
    "feedeater_rss_parse_errors_total", "Fetched documents that could not be parsed as feeds"
)
FETCH_SECONDS = Histogram(
    "feedeater_rss_fetch_seconds", "Time to fetch a feed", buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
)
PARSE_SECONDS = Histogram(
    "feedeater_rss_parse_seconds",
    "Time to parse and normalize a feed",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5),
)
POLL_SECONDS = Histogram(
    "feedeater_rss_poll_seconds",
    "Time to poll one feed end to end",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
EMBEDDED = Counter(
    "feedeater_rss_embedded_total", "Entries embedded by this process (rate() of it: the embedding rate)"
)
EMBED_BACKLOG = Gauge(
    "feedeater_rss_embedding_backlog", "Entries waiting to be embedded, as of this process's last embed run"
)
