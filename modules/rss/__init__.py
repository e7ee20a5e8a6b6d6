"""The RSS module: polls RSS/Atom/JSON feeds into `mod_rss` and publishes their entries on the bus.

Data flow: fetch → parse → normalize → store → publish (see CLAUDE.md). Importing this package must stay
cheap: every `feedeater` command discovers the module, so jobs, services, hooks and the CLI import their
code when they first run.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from host.ai import AI_SETTINGS
from host.migrate import builtin
from host.module import Job, Manifest, ModuleContext, ModuleSpec, Routes, Service, lazy
from modules.rss import settings


async def setup(ctx: ModuleContext) -> None:
    from modules.rss.ingest import document, poll

    ctx.state["fetcher"] = poll.make_fetcher(ctx.settings)
    ctx.state["parse_pool"] = document.make_parse_pool(int(ctx.settings["parse_workers"]))


async def teardown(ctx: ModuleContext) -> None:
    from modules.rss.ingest import document

    parse_pool = ctx.state.pop("parse_pool", None)
    if parse_pool is not None:
        await document.close_parse_pool(parse_pool)
    fetcher = ctx.state.pop("fetcher", None)
    if fetcher is not None:
        await fetcher.aclose()


async def reconfigure(ctx: ModuleContext, changed: frozenset[str]) -> None:
    """Settings changed while running: a new fetcher (user agent, limits, private networks; per-host
    rate and breaker state start afresh), a new parse pool when `parse_workers` changed, and the values
    derived once from settings are derived again. The replaced objects close once calls in flight end."""
    from modules.rss.ingest import document, poll

    old = ctx.state.get("fetcher")
    ctx.state["fetcher"] = poll.make_fetcher(ctx.settings)
    if old is not None:
        ctx.retire(old.aclose)
    if "parse_workers" in changed:
        old_pool = ctx.state.get("parse_pool")
        ctx.state["parse_pool"] = document.make_parse_pool(int(ctx.settings["parse_workers"]))
        if old_pool is not None:
            ctx.retire(lambda: document.close_parse_pool(old_pool))
    for derived in ("schedule_params", "breaker_params", "robots"):
        ctx.state.pop(derived, None)
    if "allow_private_networks" in changed and ctx.settings["allow_private_networks"]:
        from modules.rss import store

        async with ctx.pool.acquire() as conn:
            if retried := await store.retry_blocked(conn):
                ctx.log.info("private networks allowed: %d feeds refused before are polled again", retried)


def _cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from modules.rss import cli
    from modules.rss.search import cli as search_cli

    cli.register(sub, search_cli.add_reembed)
    search_cli.register(sub)


def _lazy(target: str) -> Callable[..., Awaitable[Any]]:
    """`modules.rss.<module>:<function>` (e.g. "ingest.poll:run"), imported on the first call: listing
    jobs or printing help must not load the pipeline."""
    return lazy(f"modules.rss.{target}")


MANIFEST = Manifest(
    name="rss",
    version="0.1.0",
    description="RSS, Atom and JSON Feed polling into mod_rss, published as MessageCreated events",
    jobs=(
        Job("poll", _lazy("ingest.poll:run"), "30s", "fetch the feeds that are due"),
        Job("cleanup", _lazy("store.cleanup:run"), "17 3 * * *", "retention, raw fetch blobs"),
        Job("embed", _lazy("enrich.embed:run"), "1m", "embed new and revised entries for semantic search"),
        Job(
            "updateContexts",
            _lazy("enrich.summarize:run"),
            "5m",
            "summarize feeds with new entries into their contexts",
        ),
        Job(
            "fulltext",
            _lazy("enrich.fulltext:run"),
            "5m",
            "fetch and extract the article pages of full-text feeds",
        ),
        Job(
            "websub", _lazy("websub.renew:run"), "1m", "renew WebSub leases; fall back to polling on failure"
        ),
        Job("backfill", _lazy("backfill.walk:run"), "1m", "walk RFC 5005 archive pages once per feed"),
    ),
    services=(
        Service(
            "search", _lazy("search.service:serve"), needs_bus=True, description="NATS request/reply search"
        ),
    ),
    routes=(
        Routes(
            "api",
            _lazy("api.routes:build"),
            description="REST API v1: feeds, entries, raw, search, OPML",
            max_body_bytes=settings.MAX_OPML_BYTES,
        ),
        Routes(
            "console",
            _lazy("console.pages:build"),
            prefix="/rss",
            pages=(("Feeds", "/feeds"), ("Search", "/search")),
            description="web console pages: feeds, feed detail, entries, search",
            max_body_bytes=settings.MAX_OPML_BYTES + 64 * 1024,  # the OPML upload and its form
        ),
        Routes(
            "websub",
            _lazy("websub.routes:build"),
            prefix="/websub",
            public=True,  # hubs carry no token: pushes are checked by their HMAC signature
            description="WebSub callbacks",
            max_body_bytes=settings.MAX_BODY_BYTES_LIMIT,  # the callback enforces rss.max_body_bytes itself
        ),
        Routes(
            "miniflux",
            _lazy("reader.miniflux:build"),
            prefix="",
            public=True,  # reader apps send their own credentials: host.web.clientauth checks them
            max_body_bytes=settings.MAX_OPML_BYTES,  # POST /v1/import
            description="Miniflux API v1 for reader apps (/v1)",
        ),
        Routes(
            "greader",
            _lazy("reader.greader:build"),
            prefix="",
            public=True,
            description="Google Reader API for reader apps (/accounts/ClientLogin, /reader/api/0)",
        ),
    ),
    settings=(
        *settings.CORE,
        *AI_SETTINGS,
        *settings.EMBED,
        *settings.SUMMARY,
        *settings.FULLTEXT,
        *settings.PUSH,
    ),
    events=("messageCreated", "messageUpdated", "contextUpdated"),
    migrations=builtin("rss"),
)

MODULE = ModuleSpec(
    manifest=MANIFEST,
    setup=setup,
    teardown=teardown,
    cli=_cli,
    live_messages=_lazy("store.cleanup:live_messages"),
    live_sources=_lazy("store.cleanup:live_sources"),
    reconfigure=reconfigure,
)
