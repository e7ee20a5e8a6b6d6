"""Every setting of the rss module, declared apart from the code that uses them.

The manifest needs them when any command starts (`feedeater --help` included); importing them from the
fetch, embed and summarize code would load that whole pipeline (~0.5 s) just to print help.
"""

from __future__ import annotations

from host import validate
from host.module import Setting

DEFAULT_SYSTEM_PROMPT = (
    "You summarize an RSS feed's recent content for a feed reader. Reply with one JSON object and nothing "
    'else: {"summaryShort": "<at most 128 characters: what the feed is covering now>", "summaryLong": '
    '"<2-3 sentences on the themes and topics, not individual articles>", "keyPoints": ["<3-6 short '
    'points>"]}. Write in the language of the entries.'
)
DEFAULT_PROMPT_TEMPLATE = """Feed: $feed_title
Description: $feed_description

Previous summary: $previous_summary

Recent entries ($entry_count, newest first):
$entries

Write what this feed is currently covering. Focus on themes and topics, not individual articles."""

MAX_BODY_BYTES_LIMIT = 100 * 1024 * 1024  # the largest max_body_bytes: also what a WebSub push may send
MAX_OPML_BYTES = 10 * 1024 * 1024  # an OPML import (API and console)
# Summaries and article fetches hold their claims without renewing them (a batch of LLM calls or page
# fetches): a lease long enough for the slowest batch, unlike the poll's short renewed `lease_seconds`.
ENRICH_LEASE_SECONDS = 300

CORE: tuple[Setting, ...] = (
    Setting(
        "user_agent",
        "str",
        "feedeater/0.1 (+https://github.com/feedeater/feedeater)",
        "User-Agent sent with every fetch",
        check=validate.not_blank,
    ),
    Setting("timeout_seconds", "float", 30.0, "whole-request deadline per fetch, in seconds", min=1, max=300),
    Setting(
        "max_body_bytes",
        "int",
        10 * 1024 * 1024,
        "largest feed body accepted (enforced while streaming)",
        min=65536,
        max=MAX_BODY_BYTES_LIMIT,
    ),
    Setting(
        "global_concurrency",
        "int",
        50,
        "fetches in flight at once, all hosts together per process",
        min=1,
        max=1000,
    ),
    Setting("per_host_concurrency", "int", 2, "fetches in flight at once to one host name", min=1, max=50),
    Setting(
        "per_host_delay_ms",
        "int",
        0,
        "minimum spacing between request starts to one host",
        min=0,
        max=60000,
    ),
    Setting(
        "per_host_rate",
        "float",
        2.0,
        "requests per second started to one host name, per process (token bucket; 0 = unlimited)",
        min=0,
        max=1000,
    ),
    Setting(
        "per_host_burst",
        "int",
        20,
        "requests to one host that may start at once before per_host_rate paces them",
        min=1,
        max=1000,
    ),
    Setting(
        "circuit_failures",
        "int",
        5,
        "failed polls among a feed's last circuit_window polls that open its circuit (0 = no breaker)",
        min=0,
        max=30,
    ),
    Setting("circuit_window", "int", 10, "recent polls the circuit breaker looks at", min=1, max=30),
    Setting(
        "circuit_cooldown_minutes",
        "float",
        60.0,
        "an open circuit waits this long before one probe poll (doubles per failed probe, up to a day)",
        min=1,
        max=1440,
    ),
    Setting(
        "host_circuit_failures",
        "int",
        10,
        "failed fetches in a row (network errors, 5xx, 429) that rest a host, per process (0 = never)",
        min=0,
        max=30,
    ),
    Setting(
        "host_circuit_cooldown_seconds",
        "int",
        300,
        "a resting host gets one probe request after this long (doubles per failed probe, up to an hour)",
        min=10,
        max=3600,
    ),
    Setting(
        "allow_private_networks",
        "bool",
        False,
        "allow fetching loopback/private addresses (intranets, tests)",
    ),
    Setting(
        "default_interval_minutes", "float", 15.0, "starting poll interval of a new feed", min=1, max=1440
    ),
    Setting("min_interval_minutes", "float", 5.0, "adaptive interval floor", min=1, max=1440),
    Setting("max_interval_minutes", "float", 1440.0, "adaptive interval ceiling", min=5, max=10080),
    Setting(
        "interval_up_factor",
        "float",
        1.25,
        "the interval grows by this factor after a poll with nothing new",
        min=1,
        max=4,
    ),
    Setting(
        "interval_down_factor",
        "float",
        0.75,
        "the interval shrinks by this factor after a poll with new entries",
        min=0.1,
        max=1,
    ),
    Setting(
        "ewma_alpha",
        "float",
        0.3,
        "weight of the newest gap in the entries' inter-arrival average (EWMA)",
        min=0.05,
        max=1,
    ),
    Setting(
        "ewma_blend",
        "float",
        0.5,
        "share of the EWMA in the next interval (the rest is the factor's interval)",
        min=0,
        max=1,
    ),
    Setting(
        "jitter_ratio", "float", 0.15, "each delay moves by up to ± this share of itself", min=0, max=0.9
    ),
    Setting(
        "error_backoff_cap_minutes",
        "float",
        60.0,
        "longest wait between retries of a failing feed",
        min=1,
        max=1440,
    ),
    Setting("max_redirects", "int", 5, "redirects one fetch follows at most", min=0, max=20),
    Setting(
        "max_items_per_document",
        "int",
        5000,
        "entries kept from one document at most (the newest; the others are named in the poll's warning)",
        min=10,
        max=100000,
    ),
    Setting(
        "stale_after_errors",
        "int",
        10,
        "consecutive failures before a feed is flagged stale",
        min=1,
        max=1000,
    ),
    Setting("lookback_hours", "int", 48, "entries published within this window are realtime", min=1, max=168),
    Setting(
        "lookback_grace_minutes",
        "int",
        15,
        "the lookback window is this much wider, so an entry at its edge does not flip with scheduler drift",
        min=0,
        max=180,
    ),
    Setting(
        "retention_days",
        "int",
        90,
        "entries older than this are deleted (tombstones kept)",
        min=1,
        max=36500,
    ),
    Setting("raw_keep", "int", 3, "raw 200 responses kept per feed", min=1, max=100),
    Setting("poll_batch", "int", 500, "feeds claimed per batch by one poll tick", min=1, max=10000),
    Setting(
        "parse_workers",
        "int",
        1,
        "processes that parse feeds beside the event loop (0 = parse in-process)",
        min=0,
        max=32,
    ),
    Setting(
        "lease_seconds",
        "int",
        20,
        "how long a claimed feed is reserved for the claiming host; renewed every quarter of it while its"
        " poll runs, so a stopped host's feeds are taken over this long after it stopped (plus one poll tick)",
        min=4,
        max=3600,
    ),
)

EMBED: tuple[Setting, ...] = (
    Setting("embed_batch_size", "int", 32, "entries per embedding request", min=1, max=512),
    Setting(
        "embed_max_chars",
        "int",
        1500,
        "title + text cut to this many characters before embedding (e5's window is 512 tokens)",
        min=100,
        max=100_000,
    ),
    Setting(
        "embed_run_seconds",
        "int",
        240,
        "one embed run stops claiming batches after this long; the next run continues",
        min=10,
        max=86_400,
    ),
)

SUMMARY = (
    Setting(
        "summary_normal_hours",
        "float",
        3.0,
        "how often a normal-volume feed (1-10 entries/day) is summarized again",
        min=0.5,
        max=48,
    ),
    Setting(
        "summary_max_entries", "int", 100, "most entries put into one feed's summary input", min=5, max=500
    ),
    Setting(
        "summary_excerpt_chars",
        "int",
        300,
        "characters of plain text per entry in the prompt",
        min=0,
        max=2000,
    ),
    Setting(
        "summary_prompt_chars",
        "int",
        16000,
        "prompt size budget; older entries lose their excerpts, then drop out",
        min=2000,
        max=200000,
    ),
    Setting("summary_concurrency", "int", 4, "feeds summarized at once", min=1, max=64),
    Setting("summary_system_prompt", "str", DEFAULT_SYSTEM_PROMPT, "system prompt of the context summarizer"),
    Setting(
        "summary_prompt_template",
        "str",
        DEFAULT_PROMPT_TEMPLATE,
        "user prompt; placeholders $feed_title $feed_description $previous_summary $entry_count $entries",
    ),
)

FULLTEXT = (
    Setting(
        "fulltext_auto_partial",
        "bool",
        False,
        "also fetch the article of entries whose feed gives only an excerpt (partial_content)",
    ),
    Setting("fulltext_batch", "int", 50, "article pages fetched per fulltext run", min=1, max=5000),
    Setting(
        "fulltext_max_attempts",
        "int",
        4,
        "fetch attempts per article on transient errors, with backoff",
        min=1,
        max=20,
    ),
    Setting(
        "fulltext_max_age_days",
        "int",
        7,
        "only entries this recent get their article fetched (no archive crawl when a feed is switched on)",
        min=1,
        max=3650,
    ),
    Setting(
        "fulltext_robots_ttl_minutes",
        "int",
        720,
        "how long a site's robots.txt is cached in memory",
        min=1,
        max=10080,
    ),
)

PUSH: tuple[Setting, ...] = (
    Setting(
        "websub_callback_base",
        "str",
        "",
        "public base URL of this host's HTTP endpoint as hubs reach it (e.g. https://feeds.example.org); "
        "callbacks are <base>/websub/<token>. Empty: WebSub is off",
        check=validate.url(empty=True),
    ),
    Setting(
        "websub_http_hubs",
        "bool",
        False,
        "also subscribe at http:// hubs (their hub.secret travels in clear text, which WebSub §5.1 "
        "forbids; for a hub on your own network). Off: only https hubs, feeds at others are polled",
    ),
    Setting(
        "websub_lease_seconds",
        "int",
        10 * 86400,
        "subscription lease asked of hubs (they may grant another)",
        min=3600,
        max=365 * 86400,
    ),
    Setting(
        "websub_verify_timeout_seconds",
        "int",
        600,
        "a hub that has not verified a (re)subscription within this time has failed: polling resumes",
        min=10,
        max=86400,
    ),
    Setting(
        "websub_safety_poll_hours",
        "float",
        24.0,
        "while a push subscription is active the feed is still polled this often",
        min=1,
        max=168,
    ),
    Setting(
        "websub_retry_hours",
        "float",
        24.0,
        "after a hub failed, wait this long before subscribing at it again",
        min=0.1,
        max=720,
    ),
    Setting(
        "backfill_max_pages",
        "int",
        50,
        "archive pages (RFC 5005 prev-archive / next) one backfill walks at most",
        min=1,
        max=10000,
    ),
)
