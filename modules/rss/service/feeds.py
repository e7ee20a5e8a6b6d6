"""Subscriptions, the use cases every front door shares: subscribe, remove, change, fetch now, import and
export OPML, and a feed's state in words.

The CLI, the REST API, the console and the reader-app APIs call these (none calls another front door);
they answer in data and `UserError`s, never in terminal or HTTP terms. Imports of the pipeline happen
inside the functions: `rss list` must not load the fetch and parse pipeline (or pydantic).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from host.errors import UserError

if TYPE_CHECKING:
    import asyncpg

    from host.module import ModuleContext
    from modules.rss.store import FeedRow
    from modules.rss.subscriptions.subscribe import Imported

FETCH_NOW_CONCURRENCY = 8  # feeds fetched at once by a fetch-now (`rss add`, `rss import`, refetch)
DEFERRED_CIRCUIT = "deferred: the host's circuit breaker is open (the host failed repeatedly)"
DEFERRED_BUSY = "deferred: another poll is fetching it"


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` (`rss set`, the console's feed settings), validated and converted to the column's value."""
    from modules.rss.store import EDITABLE, EDITABLE_BOUNDS, EDITABLE_FLAGS

    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or key not in EDITABLE:
        raise UserError(f"cannot set {text!r}", f"use key=value with key one of: {', '.join(EDITABLE)}")
    if key in EDITABLE_FLAGS:
        if raw.lower() not in ("true", "false", "yes", "no", "1", "0", "on", "off"):
            raise UserError(f"{key}={raw!r} is not true/false")
        return key, raw.lower() in ("true", "yes", "1", "on")
    if key in ("folder", "title"):
        return key, (raw or None) if key == "folder" else raw
    if raw.lower() in ("", "default", "auto"):
        return key, None
    bounds = EDITABLE_BOUNDS[key]
    try:
        number = float(raw)
    except ValueError:
        raise UserError(f"{key}={raw!r} is not a number", f"give {bounds[2]}, or 'default'") from None
    if not bounds[0] <= number <= bounds[1]:
        raise UserError(
            f"{key}={raw} is out of range", f"use {bounds[0]}–{bounds[1]} {bounds[2]}, or 'default'"
        )
    return key, round(number * 60) if EDITABLE_BOUNDS[key][2] == "minutes" else int(number)


def changed_settings(row: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The changes (store.EDITABLE keys) that differ from the feed's row (pure): a form sends every field."""
    from modules.rss.store import EDITABLE

    return {k: v for k, v in changes.items() if row[EDITABLE[k]] != v}


def feed_state(row: Mapping[str, Any]) -> str:
    """What a user needs to know first: dead, disabled, circuit open, forbidden or failing (how often), new,
    ok. A 403 is said as such (seeds 000/003): the server refuses us, retrying soon would not help."""
    if row["dead"]:
        return "dead"
    if not row["enabled"]:
        return "disabled"
    if row.get("circuit") == "open":
        return "circuit open" + (
            f" (failing ×{row['consecutive_errors']})" if row["consecutive_errors"] else ""
        )
    if row["consecutive_errors"]:
        what = "forbidden" if row.get("last_status") == 403 else "failing"
        return f"{what} ×{row['consecutive_errors']}" + (" (stale)" if row["stale"] else "")
    if row["last_polled_at"] is None:
        return "new"
    return "ok"


def not_pollable(feed_id: int, *, enabled: bool, dead: bool) -> tuple[str, str] | None:
    """Why a feed cannot be polled now, with the fix (`rss poll`, the API's refetch, the console)."""
    if dead:
        return f"feed {feed_id} is dead", f"enable it again first: `feedeater rss set {feed_id} enabled=true`"
    if not enabled:
        return f"feed {feed_id} is disabled", f"enable it first: `feedeater rss set {feed_id} enabled=true`"
    return None


def fetch_summary(
    feed_ids: Sequence[int], results: Mapping[int, Counter[str] | BaseException], errors: Mapping[int, str]
) -> dict[str, Any]:
    """What fetching these feeds did (pure): a feed counts as fetched only when a request was answered;
    feeds the per-host circuit breaker held back, or that another poll holds, are `deferred` with why
    (an import said "fetched 16 of 91" of 16 feeds never requested)."""
    failed: dict[str, str] = {}
    deferred: dict[str, str] = {}
    new = 0
    for fid in feed_ids:
        result = results.get(fid)
        if result is None:
            deferred[str(fid)] = DEFERRED_BUSY
        elif isinstance(result, BaseException):
            failed[str(fid)] = f"{type(result).__name__}: {result}"
        elif result["status_circuit_open"]:
            deferred[str(fid)] = DEFERRED_CIRCUIT
        elif fid in errors:
            failed[str(fid)] = errors[fid]
        else:
            new += result["new"]
    return {
        "feeds": len(feed_ids),
        "fetched": len(feed_ids) - len(failed) - len(deferred),
        "failed": dict(sorted(failed.items(), key=lambda kv: int(kv[0]))),
        "deferred": dict(sorted(deferred.items(), key=lambda kv: int(kv[0]))),
        "new_entries": new,
    }


async def fetch_now(
    ctx: ModuleContext, feed_ids: list[int], on_done: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Poll these feeds at once, a few at a time, through the poll job's code (fetch_summary's shape);
    `on_done` is called as each feed finishes (the CLI's progress bar)."""
    from modules.rss.ingest import poll
    from modules.rss.store import admin

    results = await poll.poll_now(
        ctx,
        feed_ids,
        concurrency=FETCH_NOW_CONCURRENCY,
        on_done=(lambda _claim, _result: on_done()) if on_done is not None else None,
    )
    async with ctx.pool.acquire() as conn:
        errors = await admin.poll_errors(conn, feed_ids)
    return fetch_summary(feed_ids, results, errors)


async def pollable(conn: asyncpg.Connection, refs: Sequence[str | int]) -> list[int]:
    """`rss poll FEED…`: the feeds' ids once each, when every one exists and may be polled (else nothing)."""
    from modules.rss import store

    feeds = [await store.get_feed(conn, ref) for ref in refs]
    for feed in feeds:
        if (refused := not_pollable(feed.id, enabled=feed.enabled, dead=feed.dead)) is not None:
            raise UserError(*refused)
    return list(dict.fromkeys(f.id for f in feeds))


_POLLS: set[asyncio.Task[Any]] = set()


def poll_soon(ctx: ModuleContext, feed_id: int) -> None:
    """Fetch a feed now, in the background (the console's page answers at once and shows the result later)."""
    from modules.rss.ingest import poll

    task = asyncio.create_task(poll.poll_now(ctx, [feed_id]), name=f"console poll {feed_id}")
    _POLLS.add(task)
    task.add_done_callback(_POLLS.discard)


@dataclass(frozen=True, slots=True)
class Subscribed:
    feed: FeedRow
    created: bool
    notice: str | None  # e.g. the feed has no entries yet


async def add_feed(
    ctx: ModuleContext,
    url: str,
    *,
    folder: str | None = None,
    interval_minutes: float | None = None,
    changes: Mapping[str, Any] | None = None,
    change_existing: bool = False,
) -> Subscribed:
    """Subscribe to a feed, or to the one a page advertises (`subscribe.SeveralFeeds` when it advertises
    several). It is fetched and validated before a connection is taken (that can take seconds). `changes`
    (store.EDITABLE keys) apply in the same transaction to a new feed, and to one already subscribed when
    `change_existing` (Google Reader renames it; Miniflux refuses a duplicate instead)."""
    from modules.rss import store
    from modules.rss.subscriptions import subscribe

    subscribe.check_interval(interval_minutes)
    fetcher = ctx.state["fetcher"]
    validated = await subscribe.validate(fetcher, url)
    async with ctx.pool.acquire() as conn, conn.transaction():
        row, created = await subscribe.subscribe(
            conn, fetcher, url, folder=folder, interval_minutes=interval_minutes, validated=validated
        )
        if changes and (created or change_existing):
            row = await store.update_feed(conn, row.id, dict(changes))
    return Subscribed(row, created, validated.notice)


async def remove_feeds(
    pool: asyncpg.Pool,
    refs: Sequence[str | int],
    context: ModuleContext | Callable[[], Awaitable[ModuleContext]],
) -> list[int]:
    """Unsubscribe (their entries go with them): every feed exists or nothing is removed; feeds pushed
    by a WebSub hub are unsubscribed there too, with the module's fetcher (the CLI passes how to build
    the context: its setup loads the fetch pipeline, ~0.5 s, needed only then)."""
    from modules.rss import store
    from modules.rss.store import websub as websub_store

    async with pool.acquire() as conn, conn.transaction():
        feeds = [await store.get_feed(conn, ref) for ref in refs]
        pushed = await websub_store.unsubscribing(conn, [f.id for f in feeds])
        for feed in feeds:
            await store.remove_feed(conn, feed.id)
    if pushed:
        from modules.rss.websub import subscribe as websub

        await websub.unsubscribe(await context() if callable(context) else context, pushed)
    return [f.id for f in feeds]


async def update_feed(conn: asyncpg.Connection, ref: str | int, changes: Mapping[str, Any]) -> FeedRow:
    """Per-feed overrides (store.EDITABLE keys; parse_assignment makes them from `key=value`)."""
    from modules.rss import store

    feed = await store.get_feed(conn, ref)
    return await store.update_feed(conn, feed.id, dict(changes)) if changes else feed


async def feed_rows(
    conn: asyncpg.Connection, folder: str | None = None, *, feed_id: int | None = None
) -> list[dict[str, Any]]:
    """Feeds with their poll state, entry count and `state` in words (all, a folder, or one feed)."""
    from modules.rss import store

    return [{**r, "state": feed_state(r)} for r in await store.list_feeds(conn, folder, feed_id=feed_id)]


async def unknown_folder(conn: asyncpg.Connection, folder: str) -> UserError:
    """The error for a folder that holds no feed: a typo must not look like an empty folder."""
    from modules.rss.store import views

    known = [f["folder"] for f in await views.folders(conn) if f["folder"]]
    return UserError(
        f"no folder {folder!r}",
        f"folders: {', '.join(known)}" if known else "no feed is in a folder (rss add --folder NAME)",
    )


async def show_feed(conn: asyncpg.Connection, ref: str | int) -> dict[str, Any]:
    """One feed with its state, ten recent entries, its WebSub subscription and archive walk (`rss show`)."""
    from modules.rss import store
    from modules.rss.store import backfill as backfill_store
    from modules.rss.store import websub as websub_store

    feed = await store.get_feed(conn, ref)
    (row,) = await feed_rows(conn, feed_id=feed.id)
    return {
        **row,
        "recent_entries": await store.list_entries(conn, feed_id=feed.id, limit=10),
        "websub": await websub_store.describe(conn, feed.id),
        "backfill": await backfill_store.status(conn, feed.id),
    }


async def import_opml(pool: asyncpg.Pool, data: bytes, *, allow_private_networks: bool) -> Imported:
    """Add every feed of an OPML document (vetted as `rss add` vets a URL; no fetching);
    `opml.OpmlError` when the document cannot be read."""
    from modules.rss.subscriptions import subscribe

    async with pool.acquire() as conn:
        return await subscribe.import_opml(conn, data, allow_private_networks=allow_private_networks)


async def import_upload(ctx: ModuleContext, body: bytes) -> Imported:
    """An uploaded OPML document (the REST and Miniflux APIs; the gate caps its size, the routers'
    max_body_bytes): `rss import`'s vetting, one UserError (a 400) for what cannot be imported."""
    from modules.rss.subscriptions.opml import OpmlError

    try:
        return await import_opml(
            ctx.pool, body, allow_private_networks=bool(ctx.settings["allow_private_networks"])
        )
    except OpmlError as exc:
        raise UserError(f"cannot import this OPML: {exc}", "send an OPML 1.0/2.0 document") from None


async def export_opml(pool: asyncpg.Pool) -> bytes:
    from modules.rss.subscriptions import subscribe

    async with pool.acquire() as conn:
        return await subscribe.export(conn)
