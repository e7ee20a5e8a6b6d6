"""The rss module's REST API v1, mounted by the host under /api/v1 (Manifest.routes).

A thin typed edge: every handler calls the module's service (modules/rss/service), as the CLI does (so
writes behave exactly like `feedeater rss ...`), and answers with the shared models (service/models.py)
and the API's own (api/models.py). Auth and the error shape come from the host (host.web.auth,
host.web.errors).
"""

from __future__ import annotations

import base64
import re
import uuid
from datetime import datetime
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Body, Path, Query, Response

from host.errors import UserError
from host.module import ModuleContext
from host.web.errors import HttpError, not_found
from modules.rss import store
from modules.rss.api.models import (
    NO_NUL,
    ApiError,
    EntryPage,
    EntryStatePatch,
    FeedCreate,
    FeedPatch,
    RawFetch,
)
from modules.rss.service import cursor, entries, feeds
from modules.rss.service.models import (
    Entry,
    EntrySummary,
    Feed,
    FetchSummary,
    ItemExplanation,
    OpmlImportResult,
    SearchResults,
)
from modules.rss.service.search import search

BIGINT = 2**63 - 1


def inert_download(fetch_id: int) -> dict[str, str]:
    return {
        "Content-Disposition": f'attachment; filename="fetch-{fetch_id}.bin"',
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox; default-src 'none'",
    }


FeedId = Annotated[int, Path(ge=1, le=BIGINT, description="feed id (from GET /api/v1/feeds)")]
FETCH_ID_HINT = "raw fetch ids come from the poll log and `feedeater rss show`"
LIST_HINT = "list feeds with GET /api/v1/feeds"
OPML_TYPES = ["text/x-opml", "application/xml", "text/xml"]
# An ISO 8601 date or date-time as parse_since/parse_until read it; a day that does not exist
# (2025-02-30) still matches and is the documented 400.
_YEAR = r"(\d{3}[1-9]|\d{2}[1-9]\d|\d[1-9]\d{2}|[1-9]\d{3})"
_TIME = r"([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?(Z|[+-]([01]\d|2[0-3]):?[0-5]\d)?)?"
ISO_MOMENT = rf"^{_YEAR}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]){_TIME}$"
CURSOR = r"^[A-Za-z0-9_-]+$"


def documented(pattern: str) -> dict[str, Any]:
    """A pattern the schema states but the handler checks itself, so a miss is its one readable 400
    ("since='x' is not a date: use ISO 8601 …") rather than a 422 quoting the regex."""
    return {"json_schema_extra": {"pattern": pattern}}


def rejected(why: str) -> dict[int | str, dict[str, Any]]:
    """A documented 400: input the schema admits but this operation cannot take (one JSON error)."""
    return {400: {"model": ApiError, "description": why}}


async def _feed(conn: asyncpg.Connection, feed_id: int) -> Feed:
    rows = await feeds.feed_rows(conn, feed_id=feed_id)
    if not rows:
        raise not_found(f"feed {feed_id}", LIST_HINT)
    return Feed.model_validate(rows[0])


def _moment(name: str, raw: str | None) -> str | None:
    """A date parameter in the documented form (ISO_MOMENT), or its one readable 400."""
    if raw is not None and not re.fullmatch(ISO_MOMENT, raw):
        raise UserError(f"{name}={raw!r} is not a date", "use ISO 8601, e.g. 2025-01-31 or 2025-01-31T08:00Z")
    return raw


def _since(raw: str | None) -> datetime | None:
    from modules.rss.search.query import parse_since

    checked = _moment("since", raw)
    return parse_since(checked) if checked else None


def _entry_ref(uid: str) -> int | uuid.UUID:
    """An entry id (digits) or its message id (UUID); anything else is no entry."""
    if uid.isascii() and uid.isdigit() and 0 < int(uid) <= BIGINT:
        return int(uid)
    try:
        return uuid.UUID(uid)
    except ValueError:
        raise not_found(
            f"entry {uid!r}", "give an entry id or its message id (from a listing or a search)"
        ) from None


async def _entry(conn: asyncpg.Connection, uid: str) -> dict[str, Any]:
    """The entry behind an id or message id, or a 404."""
    try:
        return await store.get_entry(conn, _entry_ref(uid))
    except UserError:
        raise not_found(f"entry {uid}", "list entries with GET /api/v1/feeds/{id}/entries") from None


async def build(ctx: ModuleContext) -> APIRouter:
    from modules.rss.search.query import CoverageCache

    router = APIRouter()
    pool = ctx.pool
    coverage_cache = CoverageCache()

    # -- feeds -----------------------------------------------------------------------------------
    @router.get("/feeds", summary="Subscriptions with their poll state")
    async def list_feeds(
        folder: str | None = Query(
            default=None, max_length=500, pattern=NO_NUL, description="a folder and its subfolders"
        ),
    ) -> list[Feed]:
        async with pool.acquire() as conn:
            rows = await feeds.feed_rows(conn, folder)
        return [Feed.model_validate(r) for r in rows]

    @router.post(
        "/feeds",
        status_code=201,
        summary="Subscribe (the URL is fetched and validated first, as `rss add`)",
        responses={
            200: {"model": Feed, "description": "already subscribed"},
            **rejected("the URL cannot be fetched, is not a feed, or is a page advertising several feeds"),
        },
    )
    async def add_feed(body: FeedCreate, response: Response) -> Feed:
        added = await feeds.add_feed(
            ctx, body.url, folder=body.folder, interval_minutes=body.interval_minutes
        )
        if not added.created:
            response.status_code = 200
        async with pool.acquire() as conn:
            return await _feed(conn, added.feed.id)

    @router.get("/feeds/{feed_id}", summary="One subscription with its poll state")
    async def get_feed(feed_id: FeedId) -> Feed:
        async with pool.acquire() as conn:
            return await _feed(conn, feed_id)

    @router.patch("/feeds/{feed_id}", summary="Change per-feed overrides (as `rss set`)")
    async def patch_feed(feed_id: FeedId, body: FeedPatch) -> Feed:
        changes = body.changes()
        async with pool.acquire() as conn, conn.transaction():
            await _feed(conn, feed_id)
            await feeds.update_feed(conn, feed_id, changes)
            return await _feed(conn, feed_id)

    @router.delete("/feeds/{feed_id}", status_code=204, summary="Unsubscribe (deletes its entries)")
    async def delete_feed(feed_id: FeedId) -> Response:
        async with pool.acquire() as conn:
            await _feed(conn, feed_id)
        await feeds.remove_feeds(pool, [feed_id], ctx)
        return Response(status_code=204)

    @router.post("/feeds/{feed_id}/refetch", summary="Fetch the feed now, due or not")
    async def refetch(feed_id: FeedId) -> FetchSummary:
        async with pool.acquire() as conn:
            feed = await _feed(conn, feed_id)
        if (refused := feeds.not_pollable(feed_id, enabled=feed.enabled, dead=feed.dead)) is not None:
            fix = f'enable it first: PATCH /api/v1/feeds/{feed_id} with {{"enabled": true}}'
            raise HttpError(409, refused[0], fix)
        return FetchSummary.model_validate(await feeds.fetch_now(ctx, [feed_id]))

    @router.get(
        "/feeds/{feed_id}/why",
        summary="Why an item was (not) announced, as `feedeater rss why`",
        description="Seen in which fetch, with which identity; announced or not and why (before the lookback"
        " cutoff, first poll, archive page, filtered by a processor, over the item cap, …); what the next"
        " poll will do. The item is a guid, a link, an entry id or a message id.",
    )
    async def why(
        feed_id: FeedId,
        item: str = Query(
            min_length=1, max_length=4096, pattern=NO_NUL, description="guid, link, entry id or message id"
        ),
    ) -> ItemExplanation:
        async with pool.acquire() as conn:
            await _feed(conn, feed_id)
            explanation = await entries.explain(conn, ctx.settings, feed_id, item)
        return ItemExplanation.of(explanation)

    @router.get(
        "/feeds/{feed_id}/entries",
        summary="A feed's entries, newest first, one page at a time",
        responses=rejected("`since` names a day that does not exist, or `cursor` is not one this API gave"),
    )
    async def feed_entries(
        feed_id: FeedId,
        since: str | None = Query(
            default=None, max_length=40, **documented(ISO_MOMENT), description="ISO 8601 date or time"
        ),
        cursor_: str | None = Query(
            default=None,
            alias="cursor",
            max_length=200,
            **documented(CURSOR),
            description="next_cursor of the previous page",
        ),
        limit: int = Query(default=50, ge=1, le=1000),
        unread: bool = Query(default=False, description="only entries not marked read"),
        starred: bool = Query(default=False, description="only starred entries"),
    ) -> EntryPage:
        try:
            if cursor_ is not None and not re.fullmatch(CURSOR, cursor_):
                raise cursor.BadCursor(cursor_)
            before = cursor.decode(cursor_) if cursor_ is not None else None
        except cursor.BadCursor:
            raise HttpError(
                400, "the cursor is not one this API gave", "pass next_cursor from the previous page as is"
            ) from None
        after = _since(since)
        try:
            async with pool.acquire() as conn:
                rows, next_cursor = await entries.page(
                    conn,
                    feed=feed_id,
                    since=after,
                    unread=unread,
                    starred=starred,
                    before=before,
                    limit=limit,
                )
        except entries.NoSuchFeed:
            raise not_found(f"feed {feed_id}", LIST_HINT) from None
        return EntryPage(items=[EntrySummary.model_validate(r) for r in rows], next_cursor=next_cursor)

    # -- entries and raw fetches -------------------------------------------------------------------
    @router.get("/entries/{uid}", summary="One entry by id or message id")
    async def get_entry(uid: str = Path(max_length=64)) -> Entry:
        async with pool.acquire() as conn:
            return Entry.model_validate(await _entry(conn, uid))

    @router.patch("/entries/{uid}", summary="Mark an entry read or unread, starred or not (as `rss mark`)")
    async def patch_entry(body: EntryStatePatch, uid: str = Path(max_length=64)) -> Entry:
        async with pool.acquire() as conn, conn.transaction():
            entry_id = (await _entry(conn, uid))["id"]
            await store.mark_entries(conn, [entry_id], read=body.read, starred=body.starred)
            return Entry.model_validate(await store.get_entry(conn, entry_id))

    async def _raw(fetch_id: int) -> dict[str, Any]:
        async with pool.acquire() as conn:
            row = await store.get_raw(conn, fetch_id)
        if row is None:
            raise not_found(f"raw fetch {fetch_id} (only the newest few per feed are kept)", FETCH_ID_HINT)
        return row

    @router.get("/raw/{fetch_id}", summary="A stored raw response: headers and body (base64)")
    async def get_raw(fetch_id: int = Path(ge=1, le=BIGINT)) -> RawFetch:
        row = await _raw(fetch_id)
        return RawFetch.model_validate({**row, "body_base64": base64.b64encode(row["body"]).decode()})

    @router.get(
        "/raw/{fetch_id}/body",
        summary="A stored raw response's body, byte for byte, as a download (its headers: GET /raw/{id})",
        response_class=Response,
        responses={200: {"content": {"application/octet-stream": {}}}},
    )
    async def get_raw_body(fetch_id: int = Path(ge=1, le=BIGINT)) -> Response:
        # A feed server chose these bytes: served with its Content-Type they would run as a page of this
        # origin (the console's). Always an inert download: no type to sniff, no scripts, no framing.
        row = await _raw(fetch_id)
        return Response(row["body"], media_type="application/octet-stream", headers=inert_download(fetch_id))

    # -- search ----------------------------------------------------------------------------------
    @router.get(
        "/search",
        summary="Hybrid search (semantic + full text), as `feedeater search`",
        responses=rejected(
            "the query has no words, `feed` does not exist, a date does not exist, or `until` is before `since`"
        ),
    )
    async def search_entries(
        q: str = Query(
            min_length=1, max_length=1000, pattern=NO_NUL, description='words, "a phrase", or -excluded'
        ),
        feed: int | None = Query(default=None, ge=1, le=BIGINT),
        folder: str | None = Query(default=None, max_length=500, pattern=NO_NUL),
        since: str | None = Query(
            default=None, max_length=40, **documented(ISO_MOMENT), description="ISO 8601 date or time"
        ),
        until: str | None = Query(
            default=None,
            max_length=40,
            **documented(ISO_MOMENT),
            description="ISO 8601 date or time, inclusive; a date means to the end of that day (UTC)",
        ),
        limit: int = Query(default=10, ge=1, le=100),
    ) -> SearchResults:
        since, until = _moment("since", since), _moment("until", until)
        fields = {"query": q, "feed": feed, "folder": folder, "since": since, "until": until, "limit": limit}
        request = {k: v for k, v in fields.items() if v is not None}
        response = await search(pool, ctx.ai, request, coverage_cache=coverage_cache)
        return SearchResults.model_validate(response, from_attributes=True)

    # -- OPML ------------------------------------------------------------------------------------
    @router.get(
        "/opml",
        summary="Export every subscription as OPML",
        response_class=Response,
        responses={200: {"content": {"text/x-opml": {}}}},
    )
    async def export_opml() -> Response:
        return Response(await feeds.export_opml(pool), media_type="text/x-opml; charset=utf-8")

    @router.post(
        "/opml",
        summary="Import an OPML document (idempotent; feeds are polled by the poll job)",
        responses={
            **rejected("the body is not an OPML 1.0/2.0 document"),
            413: {"model": ApiError, "description": "the document is larger than 10 MiB"},
        },
    )
    async def import_opml(
        body: bytes = Body(
            default=b"",
            media_type="text/x-opml",
            openapi_examples={"opml": {"value": "<opml version='2.0'>…</opml>"}},
        ),
    ) -> OpmlImportResult:
        return OpmlImportResult.model_validate((await feeds.import_upload(ctx, body)).as_dict())

    return router
