"""The RSS module: polls RSS/Atom/JSON feeds into `mod_rss` and publishes their entries on the bus.

Data flow: fetch → parse → normalize → store → publish (see CLAUDE.md). Importing this package must stay
cheap: every `feedeater` command discovers the module, so jobs, setup and the CLI import their code when
they first run.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping
from typing import Any

from host.ai import AI_SETTINGS
from host.module import Job, JobHandler, Manifest, ModuleContext, ModuleSpec
from modules.rss import settings


async def setup(ctx: ModuleContext) -> None:
    from modules.rss.ingest import poll
    from modules.rss.search import service as search_service

    ctx.state["fetcher"] = poll.make_fetcher(ctx.settings)
    ctx.state["parse_pool"] = poll.make_parse_pool(int(ctx.settings["parse_workers"]))
    if ctx.nats is not None:
        ctx.state["search"] = await search_service.start(ctx)


async def teardown(ctx: ModuleContext) -> None:
    search = ctx.state.pop("search", None)
    if search is not None:
        await search.unsubscribe()
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


def _run(module: str) -> JobHandler:
    """`modules.rss.<module>.run` (e.g. "ingest.poll"), imported when the job first runs: listing jobs or
    printing help must not load the pipeline."""

    async def handler(ctx: ModuleContext) -> Mapping[str, Any]:
        run: JobHandler = importlib.import_module(f"modules.rss.{module}").run
        return await run(ctx)

    return handler


MANIFEST = Manifest(
    name="rss",
    version="0.1.0",
    description="RSS, Atom and JSON Feed polling into mod_rss, published as MessageCreated events",
    jobs=(
        Job("poll", _run("ingest.poll"), "60s", "fetch the feeds that are due"),
        Job(
            "cleanup",
            _run("store.cleanup"),
            "17 3 * * *",
            "retention, raw fetch blobs, published outbox rows",
        ),
        Job("embed", _run("enrich.embed"), "1m", "embed new and revised entries for semantic search"),
        Job(
            "updateContexts",
            _run("enrich.summarize"),
            "5m",
            "summarize feeds with new entries into their contexts",
        ),
        Job(
            "fulltext",
            _run("enrich.fulltext"),
            "5m",
            "fetch and extract the article pages of full-text feeds",
        ),
    ),
    settings=(*settings.CORE, *AI_SETTINGS, *settings.EMBED, *settings.SUMMARY, *settings.FULLTEXT),
    events=("messageCreated", "messageUpdated", "contextUpdated"),
)

MODULE = ModuleSpec(manifest=MANIFEST, setup=setup, teardown=teardown, cli=_cli)
