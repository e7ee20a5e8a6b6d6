"""The tap module: every rss entry event as a line of out/entries/<UTC date>.ndjson, and the raw
payload it was parsed from as out/raw/<date>/<fetch id>.blob (seed 001 §9.3), exactly once.

A durable bus subscription feeds it, so it resumes where it stopped after a crash or a restart; see
`writer` for how the files stay exactly-once. Disabled by default: `feedeater modules enable tap`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from host.migrate import builtin
from host.module import Manifest, ModuleContext, ModuleSpec, ReceivedEvent, Setting, Subscription

if TYPE_CHECKING:
    import asyncpg  # every command discovers this module: the driver loads when a command needs it


async def setup(ctx: ModuleContext) -> None:
    from modules.tap import writer  # imported when the module starts, not by every command

    ctx.state["tap"] = await writer.open_tap(ctx)


async def _handle(ctx: ModuleContext, conn: asyncpg.Connection, events: list[ReceivedEvent]) -> None:
    from modules.tap import writer

    await writer.handle(ctx, conn, events)


MANIFEST = Manifest(
    name="tap",
    version="0.1.0",
    description="NDJSON file taps: rss entry events and raw payloads as flat files, rotated by UTC date",
    subscriptions=(
        Subscription(
            "created",
            "feedeater.rss.messageCreated",
            _handle,
            description="new entries → entries/<date>.ndjson (+ raw/<date>/<fetch id>.blob)",
            batch=True,
        ),
        Subscription(
            "updated",
            "feedeater.rss.messageUpdated",
            _handle,
            description="revised entries → the same files",
            batch=True,
        ),
    ),
    settings=(
        # The tap opens its directory (and its offsets) once at start: a new one applies at a restart.
        Setting(
            "directory", "str", "", "where the tap writes (empty: <FEEDEATER_HOME>/out)", applies="restart"
        ),
        Setting(
            "raw",
            "bool",
            True,
            "also write each fetched payload as raw/<date>/<fetch id>.blob",
            applies="restart",
        ),
    ),
    migrations=builtin("tap"),
    enabled_by_default=False,
)

MODULE = ModuleSpec(manifest=MANIFEST, setup=setup)
