"""The tap's subscription handler and its start-up recovery.

Exactly once in the files: the handler locks the file's row, cuts the file back to the committed offset,
appends and fsyncs, then raises the offset in the transaction where the host records the event as
processed. Either both commit (the line is there once) or neither (the event comes again and its
leftover bytes are cut off first); at start every file is cut back, so nothing uncommitted stays visible.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
from prometheus_client import Counter

from host.module import ModuleContext, ReceivedEvent
from modules.tap import files, lines, store

log = logging.getLogger("feedeater.tap")

LINES = Counter("feedeater_tap_lines_total", "Entry events written to the NDJSON tap")
BLOBS = Counter("feedeater_tap_blobs_total", "Raw payloads written to the tap", ["outcome"])


@dataclass(frozen=True, slots=True)
class Tap:
    root: Path
    directory_id: uuid.UUID
    raw: bool  # write raw payloads (the setting, and rss_public.raw_fetches exists)


def resolve_directory(setting: str, home: Path | None) -> Path:
    """`tap.directory`, or <FEEDEATER_HOME>/out when unset (./out without a home)."""
    if setting:
        return Path(setting).expanduser().resolve()
    return (home / "out") if home is not None else Path("out").resolve()


async def open_tap(ctx: ModuleContext) -> Tap:
    """Identify the directory and cut every file back to its committed offset (crash recovery)."""
    root = resolve_directory(str(ctx.settings["directory"]), ctx.home)
    directory_id = await asyncio.to_thread(files.directory_id, root)
    async with ctx.pool.acquire() as conn, conn.transaction():
        raw = bool(ctx.settings["raw"]) and await store.has_raw_view(conn)
        for path, committed in await store.lines_files(conn, directory_id):
            if await asyncio.to_thread(files.cut_back, root / path, committed):
                log.info("tap: %s cut back to its committed %d bytes", path, committed)
    if ctx.settings["raw"] and not raw:
        log.warning("tap: raw payloads are not written: rss_public.raw_fetches is missing (no rss module?)")
    log.info("tap: writing entry events to %s", root)
    return Tap(root, directory_id, raw)


async def handle(ctx: ModuleContext, conn: asyncpg.Connection, events: list[ReceivedEvent]) -> None:
    """One delivery's entry events → their lines in entries/<date>.ndjson, one append and fsync per file
    (+ each fetch's raw payload once). One fsync per event capped the tap at ~400 events/s; the host hands
    a failing batch back one event at a time, so exactly once holds per event as before."""
    tap: Tap = ctx.state["tap"]
    by_path: dict[str, list[bytes]] = {}
    for event in events:
        at = event.stored_at or datetime.now(UTC)
        by_path.setdefault(lines.entries_path(at), []).append(lines.entry_line(event, at))
    for path, chunk in sorted(by_path.items()):  # one order of row locks for every host
        committed = await store.lock_lines(conn, tap.directory_id, path)
        offset = await asyncio.to_thread(files.append, tap.root / path, committed, b"".join(chunk))
        await store.commit_offset(conn, tap.directory_id, path, offset)
    LINES.inc(len(events))
    if tap.raw:
        for fetch_id in dict.fromkeys(f for e in events if (f := lines.fetch_id(e.payload)) is not None):
            await _raw(conn, tap, fetch_id)


async def _raw(conn: asyncpg.Connection, tap: Tap, fetch_id: int) -> None:
    """The fetch's body as raw/<date>/<fetch id>.blob, written by the first of its events only."""
    fetched_at = await store.raw_fetched_at(conn, fetch_id)
    if fetched_at is None:
        BLOBS.labels("gone").inc()
        log.debug("tap: raw fetch %s is no longer kept by rss", fetch_id)
        return
    path = lines.raw_path(fetch_id, fetched_at)
    if not await store.claim_blob(conn, tap.directory_id, path):
        return
    body = await store.raw_body(conn, fetch_id)
    if body is None:  # pruned between the two reads
        await store.forget(conn, tap.directory_id, path)
        BLOBS.labels("gone").inc()
        return
    await asyncio.to_thread(files.write_whole, tap.root / path, body)
    await store.commit_offset(conn, tap.directory_id, path, len(body))
    BLOBS.labels("written").inc()
