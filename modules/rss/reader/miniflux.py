"""The Miniflux API v1 (`/v1/...`), the subset reader apps use: the user, feeds, categories (folders),
entries with status/starred filters and paging, status changes, the bookmark (star) toggle, refresh,
OPML. Thin: minifluxwire shapes the JSON; the module's service (modules/rss/service) subscribes,
removes, changes and fetches as every front door does; reads and reading state go to modules.rss.store.
Not served: users and API keys (one user; tokens come from `feedeater api token create`), icons, enclosures,
integrations, entry editing/importing/saving, fetch-content, flush-history, discover.
"""

from __future__ import annotations

import importlib.metadata
from typing import Annotated, Any, Literal, TypeVar

import asyncpg
from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host.module import ModuleContext
from host.web.clientauth import Caller, reader_caller
from host.web.errors import HttpError, describe_validation
from host.web.models import NO_NUL
from modules.rss import store
from modules.rss.reader import minifluxwire as wire
from modules.rss.reader.edge import BadRequest, shaped_errors
from modules.rss.service import feeds
from modules.rss.store import folders, reading

BIGINT = 2**63 - 1
M = TypeVar("M", bound=BaseModel)
Id = Annotated[int, Path(ge=1, le=BIGINT)]


def render(status: int, message: str, headers: dict[str, str] | None) -> Response:
    return JSONResponse({"error_message": message}, status_code=status, headers=headers)


# Request bodies: what feedeater can honour is read; other Miniflux fields are accepted and ignored
# (apps send whole forms), which the README lists.
class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FeedCreate(_Body):
    feed_url: str = Field(min_length=1, max_length=2000, pattern=NO_NUL)
    category_id: int | None = Field(default=None, ge=1, le=BIGINT)
    crawler: bool = False
    disabled: bool = False


class FeedModify(_Body):
    title: str | None = Field(default=None, max_length=1000, pattern=NO_NUL)
    category_id: int | None = Field(default=None, ge=1, le=BIGINT)
    crawler: bool | None = None
    disabled: bool | None = None


class CategoryBody(_Body):
    title: str = Field(min_length=1, max_length=500, pattern=NO_NUL)


class StatusChange(_Body):
    entry_ids: list[Annotated[int, Field(ge=1, le=BIGINT)]] = Field(min_length=1, max_length=10_000)
    status: Literal["read", "unread", "removed"]


async def _body(request: Request, model: type[M]) -> M:
    """The JSON body whatever its Content-Type: newsboat sends JSON labelled as a form (curl's
    default), and Miniflux reads it all the same."""
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as exc:
        raise BadRequest(describe_validation(exc.errors())) from None


def _params(request: Request) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        params.setdefault(key, []).append(value)
    return params


def _not_found(what: str) -> HttpError:
    return HttpError(404, f"{what} not found")


async def build(ctx: ModuleContext) -> APIRouter:
    router = APIRouter(
        prefix="/v1",
        include_in_schema=False,  # Miniflux's protocol, not feedeater's REST API
        dependencies=[Depends(reader_caller)],
        route_class=shaped_errors(render),
    )
    pool = ctx.pool

    async def folder_ids(conn: asyncpg.Connection) -> dict[str, int]:
        return {f["name"]: f["id"] for f in await folders.list_folders(conn)}

    async def feeds_json(conn: asyncpg.Connection, folder: str | None = None) -> list[dict[str, Any]]:
        ids = await folder_ids(conn)
        rows = await store.list_feeds(conn)
        return [wire.feed(r, ids) for r in rows if folder is None or (r["folder"] or "") == folder]

    async def feed_json(conn: asyncpg.Connection, feed_id: int) -> dict[str, Any]:
        rows = await store.list_feeds(conn, feed_id=feed_id)
        if not rows:
            raise _not_found(f"feed {feed_id}")
        return wire.feed(rows[0], await folder_ids(conn))

    async def folder_of(conn: asyncpg.Connection, category_id: int) -> str:
        name = await folders.folder_name(conn, category_id)
        if name is None:
            raise _not_found(f"category {category_id}")
        return name

    async def entries_page(
        conn: asyncpg.Connection, request: Request, *, feed_id: int | None = None, folder: str | None = None
    ) -> dict[str, Any]:
        params = _params(request)
        if folder is None and (category := wire.int_param(params, "category_id")) is not None:
            folder = await folders.folder_name(conn, category)
            if folder is None:
                raise BadRequest("invalid category ID")
        query = wire.entry_query(params, feed_id=feed_id, folder=folder)
        if query.where.feed_id is not None and not await store.list_feeds(conn, feed_id=query.where.feed_id):
            raise BadRequest("invalid feed ID")
        rows = await reading.find_entries(
            conn,
            query.where,
            sort=query.sort,
            newest_first=query.newest_first,
            offset=query.offset,
            limit=query.limit,
            content=True,
        )
        total = await reading.count_entries(conn, query.where)
        return {"total": total, "entries": await entries_json(conn, rows)}

    async def entries_json(conn: asyncpg.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Entries with their feeds inside (only the feeds of this page: one query each)."""
        feeds = {feed_id: await feed_json(conn, feed_id) for feed_id in {r["feed_id"] for r in rows}}
        return [wire.entry(r, feeds[r["feed_id"]]) for r in rows]

    async def one_entry(
        entry_id: int, *, feed_id: int | None = None, folder: str | None = None
    ) -> dict[str, Any]:
        async with pool.acquire() as conn:
            where = reading.EntryFilter(ids=[entry_id], feed_id=feed_id, folder=folder)
            rows = await reading.find_entries(conn, where, limit=1, content=True)
            if not rows:
                raise _not_found(f"entry {entry_id}")
            return (await entries_json(conn, rows))[0]

    # -- the user ----------------------------------------------------------------------------------
    @router.get("/me")
    async def me(caller: Annotated[Caller, Depends(reader_caller)]) -> dict[str, Any]:
        return wire.user(caller.name)

    @router.get("/version")
    async def version() -> dict[str, str]:
        return {
            "version": importlib.metadata.version("feedeater"),
            **dict.fromkeys(("commit", "build_date", "go_version", "compiler", "arch", "os"), ""),
        }

    @router.put("/users/{user_id}/mark-all-as-read", status_code=204)
    async def mark_user_read(user_id: Id) -> Response:
        if user_id != wire.USER_ID:
            raise _not_found(f"user {user_id}")
        async with pool.acquire() as conn, conn.transaction():
            await reading.mark_matching(conn, reading.EntryFilter(), read=True)
        return Response(status_code=204)

    # -- feeds -------------------------------------------------------------------------------------
    @router.get("/feeds")
    async def list_feeds() -> list[dict[str, Any]]:
        async with pool.acquire() as conn:
            return await feeds_json(conn)

    @router.get("/feeds/counters")
    async def counters() -> dict[str, dict[str, int]]:
        async with pool.acquire() as conn:
            rows = await reading.state_counts(conn)
        return {
            "reads": {str(r["feed_id"]): r["read"] for r in rows},
            "unreads": {str(r["feed_id"]): r["unread"] for r in rows},
        }

    @router.put("/feeds/refresh", status_code=204)
    async def refresh_all() -> Response:
        async with pool.acquire() as conn:
            await store.poll_soon(conn, [r["id"] for r in await store.list_feeds(conn) if r["enabled"]])
        return Response(status_code=204)

    @router.post("/feeds", status_code=201)
    async def create_feed(request: Request) -> dict[str, int]:
        body = await _body(request, FeedCreate)
        async with pool.acquire() as conn:
            folder = await folder_of(conn, body.category_id) if body.category_id is not None else ""
        changes = {"full_text": True} if body.crawler else {}
        changes |= {"enabled": False} if body.disabled else {}
        added = await feeds.add_feed(ctx, body.feed_url, folder=folder or None, changes=changes)
        if not added.created:
            raise BadRequest("This feed already exists.", f"it is feed {added.feed.id}")
        return {"feed_id": added.feed.id}

    @router.get("/feeds/{feed_id}")
    async def get_feed(feed_id: Id) -> dict[str, Any]:
        async with pool.acquire() as conn:
            return await feed_json(conn, feed_id)

    @router.put("/feeds/{feed_id}", status_code=201)
    async def modify_feed(feed_id: Id, request: Request) -> dict[str, Any]:
        body = await _body(request, FeedModify)
        async with pool.acquire() as conn, conn.transaction():
            await feed_json(conn, feed_id)
            changes: dict[str, Any] = {}
            if body.title is not None:
                changes["title"] = body.title
            if body.category_id is not None:
                changes["folder"] = await folder_of(conn, body.category_id) or None
            if body.crawler is not None:
                changes["full_text"] = body.crawler
            if body.disabled is not None:
                changes["enabled"] = not body.disabled
            await feeds.update_feed(conn, feed_id, changes)
            return await feed_json(conn, feed_id)

    @router.delete("/feeds/{feed_id}", status_code=204)
    async def delete_feed(feed_id: Id) -> Response:
        async with pool.acquire() as conn:
            await feed_json(conn, feed_id)
        await feeds.remove_feeds(pool, [feed_id], ctx)
        return Response(status_code=204)

    @router.put("/feeds/{feed_id}/refresh", status_code=204)
    async def refresh_feed(feed_id: Id) -> Response:
        async with pool.acquire() as conn:
            feed = await feed_json(conn, feed_id)
        if feed["disabled"]:
            raise BadRequest(f"feed {feed_id} is disabled", "enable it first")
        await feeds.fetch_now(ctx, [feed_id])
        return Response(status_code=204)

    @router.get("/feeds/{feed_id}/icon")
    async def feed_icon(feed_id: Id) -> Response:
        raise _not_found(f"icon of feed {feed_id} (feedeater keeps no icons)")

    @router.put("/feeds/{feed_id}/mark-all-as-read", status_code=204)
    async def mark_feed_read(feed_id: Id) -> Response:
        async with pool.acquire() as conn, conn.transaction():
            await feed_json(conn, feed_id)
            await reading.mark_matching(conn, reading.EntryFilter(feed_id=feed_id), read=True)
        return Response(status_code=204)

    @router.get("/feeds/{feed_id}/entries")
    async def feed_entries(feed_id: Id, request: Request) -> dict[str, Any]:
        async with pool.acquire() as conn:
            await feed_json(conn, feed_id)
            return await entries_page(conn, request, feed_id=feed_id)

    @router.get("/feeds/{feed_id}/entries/{entry_id}")
    async def feed_entry(feed_id: Id, entry_id: Id) -> dict[str, Any]:
        return await one_entry(entry_id, feed_id=feed_id)

    # -- categories (folders) ----------------------------------------------------------------------
    @router.get("/categories")
    async def list_categories(request: Request) -> list[dict[str, Any]]:
        counts = wire.parse_bool(request.query_params.get("counts", "")) is True
        async with pool.acquire() as conn:
            rows = await folders.list_folders(conn, counts=counts)
        return [wire.category(r["id"], r["name"], r if counts else None) for r in rows]

    @router.post("/categories", status_code=201)
    async def create_category(request: Request) -> dict[str, Any]:
        body = await _body(request, CategoryBody)
        async with pool.acquire() as conn:
            folder_id, created = await folders.add_folder(conn, body.title)
        if not created:
            raise BadRequest("This category already exists.")
        return wire.category(folder_id, body.title.strip())

    @router.put("/categories/{category_id}", status_code=201)
    async def rename_category(category_id: Id, request: Request) -> dict[str, Any]:
        body = await _body(request, CategoryBody)
        async with pool.acquire() as conn:
            old = await folder_of(conn, category_id)
            if old == "":
                raise BadRequest(
                    f"category {wire.NO_FOLDER_TITLE!r} holds the feeds without a folder: it cannot be renamed"
                )
            await folders.rename_folder(conn, old, body.title)
        return wire.category(category_id, body.title.strip())

    @router.delete("/categories/{category_id}", status_code=204)
    async def delete_category(category_id: Id) -> Response:
        async with pool.acquire() as conn:
            name = await folder_of(conn, category_id)
            if name == "":
                raise BadRequest(f"category {wire.NO_FOLDER_TITLE!r} cannot be deleted")
            await folders.drop_folder(conn, name)
        return Response(status_code=204)

    @router.get("/categories/{category_id}/feeds")
    async def category_feeds(category_id: Id) -> list[dict[str, Any]]:
        async with pool.acquire() as conn:
            return await feeds_json(conn, await folder_of(conn, category_id))

    @router.put("/categories/{category_id}/refresh", status_code=204)
    async def refresh_category(category_id: Id) -> Response:
        async with pool.acquire() as conn:
            listed = await feeds_json(conn, await folder_of(conn, category_id))
            await store.poll_soon(conn, [f["id"] for f in listed if not f["disabled"]])
        return Response(status_code=204)

    @router.put("/categories/{category_id}/mark-all-as-read", status_code=204)
    async def mark_category_read(category_id: Id) -> Response:
        async with pool.acquire() as conn, conn.transaction():
            folder = await folder_of(conn, category_id)
            await reading.mark_matching(conn, reading.EntryFilter(folder=folder), read=True)
        return Response(status_code=204)

    @router.get("/categories/{category_id}/entries")
    async def category_entries(category_id: Id, request: Request) -> dict[str, Any]:
        async with pool.acquire() as conn:
            return await entries_page(conn, request, folder=await folder_of(conn, category_id))

    @router.get("/categories/{category_id}/entries/{entry_id}")
    async def category_entry(category_id: Id, entry_id: Id) -> dict[str, Any]:
        async with pool.acquire() as conn:
            folder = await folder_of(conn, category_id)
        return await one_entry(entry_id, folder=folder)

    # -- entries -----------------------------------------------------------------------------------
    @router.get("/entries")
    async def list_entries(request: Request) -> dict[str, Any]:
        async with pool.acquire() as conn:
            return await entries_page(conn, request)

    @router.put("/entries", status_code=204)
    async def change_status(request: Request) -> Response:
        body = await _body(request, StatusChange)
        if body.status == "removed":
            raise BadRequest("feedeater removes no entries by hand", 'mark them "read" instead')
        async with pool.acquire() as conn, conn.transaction():
            await reading.mark_entries(conn, body.entry_ids, read=body.status == "read", starred=None)
        return Response(status_code=204)

    @router.get("/entries/{entry_id}")
    async def get_entry(entry_id: Id) -> dict[str, Any]:
        return await one_entry(entry_id)

    @router.put("/entries/{entry_id}/bookmark", status_code=204)
    async def toggle_bookmark(entry_id: Id) -> Response:
        async with pool.acquire() as conn, conn.transaction():
            if await reading.toggle_starred(conn, entry_id) is None:
                raise _not_found(f"entry {entry_id}")
        return Response(status_code=204)

    # -- OPML --------------------------------------------------------------------------------------
    @router.get("/export")
    async def export() -> Response:
        return Response(await feeds.export_opml(pool), media_type="text/xml; charset=utf-8")

    @router.post("/import", status_code=201)
    async def import_opml(request: Request) -> dict[str, str]:
        imported = await feeds.import_upload(ctx, await request.body())
        return {"message": f"Feeds imported successfully ({len(imported.added)} new)"}

    return router
