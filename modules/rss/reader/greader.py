"""The Google Reader API as FreshRSS, Miniflux and BazQux serve it (what Reeder, NetNewsWire, ReadYou,
FeedMe, Fluent Reader and newsboat's "feedhq" source speak): ClientLogin, subscriptions, tags (folders),
unread counts, streams with continuation, item ids, edit-tag for read/starred, mark-all-as-read, and
streams as Atom. Thin: greaderwire shapes requests and answers; the module's service (modules/rss/service)
subscribes, removes and changes feeds as every front door does; modules.rss.store reads and marks.

Not served: item labels of one's own (tags other than folders), broadcast/like/friends, preferences,
OAuth. `T` (the action token) is not checked when the request carries its Authorization header:
header auth cannot be forged cross-site, which is what T guarded against; a POST without the header
may authenticate with T alone (as Miniflux accepts).
"""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.datastructures import FormData

from host.errors import UserError
from host.module import ModuleContext
from host.web.clientauth import Caller, client_login, reader_caller
from host.web.errors import HttpError
from modules.rss import store
from modules.rss.reader import greaderwire as wire
from modules.rss.reader.edge import BadRequest, no_nul, shaped_errors
from modules.rss.service import cursor, feeds
from modules.rss.store import folders, reading

MAX_ITEMS = 1000  # stream/contents
MAX_IDS = 10_000  # stream/items/ids


def render(status: int, message: str, headers: dict[str, str] | None) -> Response:
    extra = {"Google-Bad-Token": "true", "X-Reader-Google-Bad-Token": "true"} if status == 401 else {}
    return PlainTextResponse(message, status_code=status, headers={**(headers or {}), **extra})


def ok() -> PlainTextResponse:
    return PlainTextResponse("OK")


class Params:
    """Query and form fields of one request (apps send either, repeated fields included)."""

    def __init__(self, request: Request, form: FormData | None) -> None:
        self.query, self.form = request.query_params, form

    def all(self, key: str) -> list[str]:
        values = [v for v in (self.form.getlist(key) if self.form else []) if isinstance(v, str)]
        return [no_nul(v, key) for v in values + self.query.getlist(key)]

    def get(self, key: str, default: str = "") -> str:
        values = self.all(key)
        return values[0] if values else default

    def moment(self, key: str) -> datetime | None:
        """A timestamp field (in whatever unit the app sends) as a time; None when absent or 0."""
        stamp = self.number(key, 0)
        try:
            return wire.moment(stamp) if stamp > 0 else None
        except (OverflowError, OSError, ValueError):
            raise BadRequest(f"{key}={stamp} is not a time") from None

    def number(self, key: str, default: int) -> int:
        raw = self.get(key)
        try:
            return int(raw) if raw else default
        except ValueError:
            raise BadRequest(f"{key} must be a number, not {raw[:40]!r}") from None


async def params(request: Request) -> Params:
    form = await request.form() if request.method == "POST" else None
    return Params(request, form)


def _stream(raw: str) -> wire.Stream:
    no_nul(raw, "the stream id")
    try:
        return wire.parse_stream(raw)
    except wire.BadStream:
        raise BadRequest(
            f"unknown stream {raw[:200]!r}",
            "use feed/<id>, user/-/label/<folder> or user/-/state/com.google/<state>",
        ) from None


async def build(ctx: ModuleContext) -> APIRouter:
    pool = ctx.pool
    route_class = shaped_errors(render)
    router = APIRouter(include_in_schema=False)  # the Google Reader protocol, not feedeater's REST API
    login = APIRouter(route_class=route_class)
    api = APIRouter(prefix="/reader", dependencies=[Depends(reader_caller)], route_class=route_class)

    async def feed_id_of(conn: asyncpg.Connection, stream: wire.Stream) -> int | None:
        """feed/<id> or feed/<url> → the feed's id, None when there is no such feed."""
        if stream.value.isdigit() and int(stream.value) >= 2**63:
            return None
        try:
            return (await store.get_feed(conn, stream.value)).id
        except UserError:
            return None

    async def stream_filter(conn: asyncpg.Connection, p: Params, raw: str) -> reading.EntryFilter | None:
        """The stream's entries narrowed by it/xt (state), ot/nt (time); None: nothing can match."""
        stream = _stream(raw or wire.READING_LIST)
        where = wire.filter_for(stream, await feed_id_of(conn, stream) if stream.kind == "feed" else None)
        if where is None:
            return None
        asked = wire.states([_stream(s) for s in p.all("xt")], include=False) | wire.states(
            [_stream(s) for s in p.all("it")], include=True
        )
        for mine, theirs in ((where.read, asked.read), (where.starred, asked.starred)):
            if None not in (mine, theirs) and mine != theirs:
                return None  # e.g. the read stream without read entries
        return dataclasses.replace(
            where,
            read=where.read if asked.read is None else asked.read,
            starred=where.starred if asked.starred is None else asked.starred,
            since=p.moment("ot"),
            until=p.moment("nt"),
        )

    def position(p: Params) -> Any:
        given = p.get("c")
        if not given:
            return None
        try:
            return cursor.decode(given)
        except cursor.BadCursor:
            raise BadRequest(
                "the continuation is not one this server gave", "pass it back as given"
            ) from None

    async def page(
        conn: asyncpg.Connection, p: Params, raw: str, limit: int
    ) -> tuple[list[dict[str, Any]], str | None]:
        where = await stream_filter(conn, p, raw)
        if where is None:
            return [], None
        count = min(max(p.number("n", 20), 1), limit)
        rows = await reading.find_entries(
            conn, where, newest_first=p.get("r", "d") != "o", after=position(p), limit=count + 1, content=True
        )
        more = rows[count - 1] if len(rows) > count else None
        return rows[:count], cursor.encode(more["effective_at"], more["id"]) if more else None

    # -- login -------------------------------------------------------------------------------------
    @login.api_route("/accounts/ClientLogin", methods=["GET", "POST"])
    async def client_login_(request: Request) -> Response:
        p = await params(request)
        token = await client_login(request, p.get("Email"), p.get("Passwd"))
        if token is None:
            raise HttpError(401, "Error=BadAuthentication")
        if p.get("output") == "json":
            return JSONResponse({"SID": token, "LSID": token, "Auth": token})
        return PlainTextResponse(f"SID={token}\nLSID={token}\nAuth={token}\n")

    # -- the account -------------------------------------------------------------------------------
    @api.get("/api/0/token")
    async def token(caller: Annotated[Caller, Depends(reader_caller)]) -> Response:
        return PlainTextResponse(caller.client_token or "x")

    @api.get("/api/0/user-info")
    async def user_info(caller: Annotated[Caller, Depends(reader_caller)]) -> dict[str, str]:
        return {
            "userId": wire.USER_ID,
            "userName": caller.name,
            "userProfileId": wire.USER_ID,
            "userEmail": caller.name,
        }

    # -- subscriptions and folders -----------------------------------------------------------------
    @api.get("/api/0/subscription/list")
    async def subscriptions() -> dict[str, Any]:
        async with pool.acquire() as conn:
            rows = await store.list_feeds(conn)
        return {"subscriptions": [wire.subscription(r) for r in rows]}

    async def add_feed(url: str, folder: str | None, title: str) -> store.FeedRow:
        changes = {"title": title} if title else None
        return (await feeds.add_feed(ctx, url, folder=folder, changes=changes, change_existing=True)).feed

    @api.post("/api/0/subscription/quickadd")
    async def quickadd(request: Request) -> dict[str, Any]:
        url = (await params(request)).get("quickadd").removeprefix("feed/")
        if not url:
            raise BadRequest("quickadd needs a URL")
        row = await add_feed(url, None, "")
        return {
            "numResults": 1,
            "query": row.url,
            "streamId": f"feed/{row.id}",
            "streamName": row.title or row.url,
        }

    @api.post("/api/0/subscription/edit")
    async def edit_subscription(request: Request) -> Response:
        p = await params(request)
        streams = [_stream(s) for s in p.all("s")]
        if not streams or any(s.kind != "feed" for s in streams):
            raise BadRequest("s must name feeds (feed/<id> or feed/<url>)")
        add, remove, title = p.get("a"), p.get("r"), p.get("t")
        label = _stream(add) if add else None
        if label is not None and label.kind != "label":
            raise BadRequest("a must be a label (user/-/label/<folder>)")
        match p.get("ac"):
            case "subscribe":
                for s in streams:
                    await add_feed(s.value, label.value if label else None, title)
            case "unsubscribe":
                async with pool.acquire() as conn:
                    ids = [feed_id for s in streams if (feed_id := await feed_id_of(conn, s)) is not None]
                await feeds.remove_feeds(pool, list(dict.fromkeys(ids)), ctx)
            case "edit":
                async with pool.acquire() as conn, conn.transaction():
                    for s in streams:
                        feed_id = await feed_id_of(conn, s)
                        if feed_id is None:
                            raise HttpError(404, f"no feed {s.value}")
                        changes: dict[str, Any] = {"title": title} if title else {}
                        if label is not None:
                            changes["folder"] = label.value
                        elif remove and _stream(remove).kind == "label":
                            changes["folder"] = None
                        await feeds.update_feed(conn, feed_id, changes)
            case other:
                raise BadRequest(f"ac {other!r} is not subscribe, unsubscribe or edit")
        return ok()

    @api.get("/api/0/tag/list")
    async def tags() -> dict[str, Any]:
        async with pool.acquire() as conn:
            rows = await folders.list_folders(conn)
        listed = [
            {"id": wire.LABEL + r["name"], "label": r["name"], "type": "folder"} for r in rows if r["name"]
        ]
        return {"tags": [{"id": wire.STARRED}, *listed]}

    @api.post("/api/0/rename-tag")
    async def rename_tag(request: Request) -> Response:
        p = await params(request)
        source, dest = _stream(p.get("s")), _stream(p.get("dest"))
        if source.kind != "label" or dest.kind != "label":
            raise BadRequest("s and dest must be labels (user/-/label/<folder>)")
        async with pool.acquire() as conn:
            if await folders.folder_id(conn, source.value) is None:
                raise HttpError(404, f"no folder {source.value!r}")
            await folders.rename_folder(conn, source.value, dest.value)
        return ok()

    @api.post("/api/0/disable-tag")
    async def disable_tag(request: Request) -> Response:
        streams = [_stream(s) for s in (await params(request)).all("s")]
        if not streams or any(s.kind != "label" for s in streams):
            raise BadRequest("s must be labels (user/-/label/<folder>)")
        async with pool.acquire() as conn:
            for s in streams:
                await folders.drop_folder(conn, s.value)
        return ok()

    # -- streams -----------------------------------------------------------------------------------
    @api.get("/api/0/unread-count")
    async def unread_count() -> dict[str, Any]:
        async with pool.acquire() as conn:
            counts = await reading.state_counts(conn)
            folder_of = {r["id"]: r["folder"] for r in await store.list_feeds(conn)}
        return wire.unread_counts(counts, folder_of)

    @api.get("/api/0/stream/contents/{stream:path}")
    @api.get("/api/0/stream/contents")
    async def stream_contents(request: Request, stream: str = "") -> dict[str, Any]:
        p = await params(request)
        raw = stream or p.get("s") or wire.READING_LIST
        async with pool.acquire() as conn:
            rows, more = await page(conn, p, raw, MAX_ITEMS)
        answer: dict[str, Any] = {
            "direction": "ltr",
            "id": raw,
            "title": raw,
            "self": [{"href": str(request.url)}],
            "updated": int(time.time()),
            "items": [wire.item(r) for r in rows],
        }
        return answer | ({"continuation": more} if more else {})

    @api.get("/api/0/stream/items/ids")
    async def item_ids(request: Request) -> dict[str, Any]:
        p = await params(request)
        async with pool.acquire() as conn:
            where = await stream_filter(conn, p, p.get("s"))
            count = min(max(p.number("n", 20), 1), MAX_IDS)
            ids = (
                await reading.find_entry_ids(
                    conn, where, newest_first=p.get("r", "d") != "o", after=position(p), limit=count + 1
                )
                if where is not None
                else []
            )
        refs = [
            {"id": str(i), "directStreamIds": [], "timestampUsec": str(wire.micros(at))}
            for i, at in ids[:count]
        ]
        answer: dict[str, Any] = {"itemRefs": refs}
        if len(ids) > count:
            answer["continuation"] = cursor.encode(ids[count - 1][1], ids[count - 1][0])
        return answer

    @api.api_route("/api/0/stream/items/contents", methods=["GET", "POST"])
    async def item_contents(request: Request) -> dict[str, Any]:
        p = await params(request)
        ids = [wire.item_id(i) for i in p.all("i")]
        if not ids or None in ids:
            raise BadRequest("i must name items (their long or short ids)")
        async with pool.acquire() as conn:
            rows = await reading.find_entries(
                conn,
                reading.EntryFilter(ids=[i for i in ids if i is not None]),
                newest_first=p.get("r", "d") != "o",
                limit=len(ids),
                content=True,
            )
        return {"direction": "ltr", "id": wire.READING_LIST, "items": [wire.item(r) for r in rows]}

    # -- state -------------------------------------------------------------------------------------
    @api.post("/api/0/edit-tag")
    async def edit_tag(request: Request) -> Response:
        p = await params(request)
        ids = [wire.item_id(i) for i in p.all("i")]
        if not ids or None in ids:
            raise BadRequest("i must name items (their long or short ids)")
        change = wire.states([_stream(s) for s in p.all("r")], include=False) | wire.states(
            [_stream(s) for s in p.all("a")], include=True
        )
        if change != wire.States():
            async with pool.acquire() as conn, conn.transaction():
                await reading.mark_entries(
                    conn, [i for i in ids if i is not None], read=change.read, starred=change.starred
                )
        return ok()

    @api.post("/api/0/mark-all-as-read")
    async def mark_all_as_read(request: Request) -> Response:
        p = await params(request)
        bound = p.moment("ts")
        async with pool.acquire() as conn, conn.transaction():
            where = await stream_filter(conn, p, p.get("s"))
            if where is not None:
                await reading.mark_matching(conn, dataclasses.replace(where, seen_until=bound), read=True)
        return ok()

    # -- Atom (newsboat's "feedhq" source reads each subscription this way) ------------------------
    @api.get("/atom/{stream:path}")
    async def atom(request: Request, stream: str) -> Response:
        p = await params(request)
        async with pool.acquire() as conn:
            rows, more = await page(conn, p, stream, MAX_ITEMS)
            source = _stream(stream)
            title = stream
            if source.kind == "feed" and (feed_id := await feed_id_of(conn, source)) is not None:
                title = (await store.list_feeds(conn, feed_id=feed_id))[0]["title"] or stream
        return Response(
            wire.atom(stream, title, rows, continuation=more),
            media_type="application/atom+xml; charset=utf-8",
        )

    router.include_router(login)
    router.include_router(api)
    return router
