"""The RSS module: polls RSS/Atom/JSON feeds into `mod_rss` and publishes their entries on the bus.

Data flow: fetch → parse → normalize → store → publish (see CLAUDE.md).
"""

from __future__ import annotations

import argparse

from host.ai import AI_SETTINGS
from host.migrate import builtin
from host.module import Job, Manifest, ModuleContext, ModuleSpec, Service, Setting
from modules.rss.enrich import embed, summarize
from modules.rss.ingest import poll
from modules.rss.search import service as search_service
from modules.rss.store import cleanup


async def setup(ctx: ModuleContext) -> None:
    ctx.state["fetcher"] = poll.make_fetcher(ctx.settings)
    ctx.state["parse_pool"] = poll.make_parse_pool(int(ctx.settings["parse_workers"]))


async def teardown(ctx: ModuleContext) -> None:
    parse_pool = ctx.state.pop("parse_pool", None)
    if parse_pool is not None:
        parse_pool.shutdown(wait=False, cancel_futures=True)
    fetcher = ctx.state.pop("fetcher", None)
    if fetcher is not None:
        await fetcher.aclose()


def _cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from modules.rss import cli
    from modules.rss.search import cli as search_cli

    cli.register(sub)
    search_cli.register(sub)


MANIFEST = Manifest(
    name="rss",
    version="0.1.0",
    description="RSS, Atom and JSON Feed polling into mod_rss, published as MessageCreated events",
    jobs=(
        Job("poll", poll.run, "60s", "fetch the feeds that are due"),
        Job("cleanup", cleanup.run, "17 3 * * *", "retention, raw fetch blobs"),
        embed.JOB,
        *summarize.JOBS,
    ),
    services=(
        Service("search", search_service.serve, needs_bus=True, description="NATS request/reply search"),
    ),
    settings=(
        Setting(
            "user_agent",
            "str",
            "feedeater/0.1 (+https://github.com/feedeater/feedeater)",
            "User-Agent sent with every fetch",
        ),
        Setting(
            "timeout_seconds", "float", 30.0, "whole-request deadline per fetch, in seconds", min=1, max=300
        ),
        Setting(
            "max_body_bytes",
            "int",
            10 * 1024 * 1024,
            "largest feed body accepted (enforced while streaming)",
            min=65536,
            max=100 * 1024 * 1024,
        ),
        Setting(
            "global_concurrency",
            "int",
            50,
            "fetches in flight at once, all hosts together per process",
            min=1,
            max=1000,
        ),
        Setting(
            "per_host_concurrency", "int", 2, "fetches in flight at once to one host name", min=1, max=50
        ),
        Setting(
            "per_host_delay_ms",
            "int",
            0,
            "minimum spacing between request starts to one host",
            min=0,
            max=60000,
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
            "stale_after_errors",
            "int",
            10,
            "consecutive failures before a feed is flagged stale",
            min=1,
            max=1000,
        ),
        Setting(
            "lookback_hours", "int", 48, "entries published within this window are realtime", min=1, max=168
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
            300,
            "how long a claimed feed is reserved for the claiming host",
            min=30,
            max=3600,
        ),
        *AI_SETTINGS,
        *embed.SETTINGS,
        *summarize.SETTINGS,
    ),
    events=("messageCreated", "messageUpdated", "contextUpdated"),
    migrations=builtin("rss"),
)

MODULE = ModuleSpec(
    manifest=MANIFEST,
    setup=setup,
    teardown=teardown,
    cli=_cli,
    live_messages=cleanup.live_messages,
    live_sources=cleanup.live_sources,
)
