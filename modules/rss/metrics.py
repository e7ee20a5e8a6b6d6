"""Prometheus metrics of the RSS module (low-cardinality labels only: no per-feed series)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

FETCHES = Counter("feedeater_rss_fetches_total", "Feed fetches by HTTP status or error kind", ["status"])
BYTES = Counter("feedeater_rss_fetched_bytes_total", "Bytes of feed bodies received")
ENTRIES = Counter("feedeater_rss_entries_total", "Entries stored", ["change"])
ITEMS = Counter(
    "feedeater_rss_items_total",
    "Items of parsed documents at intake (seed 004 §2.6): all, undated (no date), duplicate (already "
    "stored, unchanged)",
    ["kind"],
)
SKIPPED_ITEMS = Counter(
    "feedeater_rss_skipped_items_total",
    "Items left out of parsed documents: empty (no title, body, link or media) or over the item cap",
    ["reason"],
)
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

# Seed 001 §4.9: what conditional GET saves, compression, the schedule's choice against the EWMA, retries.
_INTERVAL_BUCKETS = (60, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400, 604800)
SAVED_BYTES = Counter(
    "feedeater_rss_conditional_saved_bytes_total",
    "Bytes not downloaded thanks to 304 Not Modified (the feed's last 200 body size on the wire)",
)
NOT_MODIFIED_UNKNOWN = Counter(
    "feedeater_rss_not_modified_unknown_size_total", "304 answers for feeds whose last body size is unknown"
)
WIRE_BYTES = Counter(
    "feedeater_rss_wire_bytes_total",
    "Bytes of 200 bodies as received, before Content-Encoding decoding (fetched_bytes is after)",
    ["encoding"],
)
DECODED_BYTES = Counter(
    "feedeater_rss_decoded_bytes_total", "Bytes of 200 bodies after Content-Encoding decoding", ["encoding"]
)
COMPRESSION_RATIO = Histogram(
    "feedeater_rss_compression_ratio",
    "Decoded bytes / wire bytes per 200 response",
    ["encoding"],
    buckets=(1, 1.5, 2, 3, 4, 6, 8, 12, 20),
)
INTERVAL_CHOSEN = Histogram(
    "feedeater_rss_interval_chosen_seconds",
    "Base poll interval the scheduler chose after a successful poll",
    ["reason"],
    buckets=_INTERVAL_BUCKETS,
)
INTERVAL_EWMA = Histogram(
    "feedeater_rss_interval_ewma_seconds",
    "Inter-arrival EWMA of a feed's entries, observed with each chosen interval",
    buckets=_INTERVAL_BUCKETS,
)
RETRIES = Counter(
    "feedeater_rss_retries_total",
    "Polls of a feed whose previous poll failed, by how the retry went",
    ["outcome"],
)
CIRCUIT = Counter(
    "feedeater_rss_circuit_transitions_total", "Per-feed circuit breaker openings and closings", ["to"]
)
FEEDS = Gauge("feedeater_rss_feeds", "Feeds by state, as of this process's last poll tick", ["state"])
