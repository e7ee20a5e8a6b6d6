"""Console pages of the rss module: feeds (folder tree, health, schedule; add, import/export, settings,
remove), feed detail (entries with infinite scroll, schedule decisions, fetch history, entries per day),
entry view (sanitized content in a sandboxed frame, earlier revisions), and the hybrid search.

A front door over the module's service (modules/rss/service), as the CLI is: the console accepts exactly
what `feedeater rss ...` accepts (`service.parse_assignment`, `service.add_feed`) and says the same thing
when it refuses. Pages read their views straight from store/views.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import html
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from host.console import svg
from host.console.render import add_templates, fragment, page
from host.errors import UserError
from host.module import ModuleContext
from modules.rss.service import cursor, entries
from modules.rss.service import feeds as service
from modules.rss.store import list_entries, views

T = TypeVar("T")
FEEDS_PER_PAGE = 50  # rendering is the page's main cost: 100 rows took ~2× as long
ENTRIES_PER_PAGE = 30
# Per-feed settings the feed page edits, in `rss set` terms, with their unit.
FEED_SETTINGS = (
    ("title", "Title", ""),
    ("folder", "Folder", "path such as Tech/Python; empty for none"),
    ("interval", "Interval", "minutes; empty for adaptive"),
    ("lookback", "Lookback", "hours; empty for the module default"),
    ("retention", "Retention", "days; empty for the module default"),
)
# The document inside the entry's sandboxed frame: our stylesheet, links open outside the frame.
FRAME = (
    '<!doctype html><html><head><meta charset="utf-8"><base target="_blank">'
    '<link rel="stylesheet" href="/static/console/frame.css"></head><body>{}</body></html>'
)


def highlight(snippet: str) -> Markup:
    """A search snippet (plain text, matches between « and ») as escaped HTML with <mark> (pure)."""
    return Markup(html.escape(snippet).replace("«", "<mark>").replace("»", "</mark>"))


def frame_document(content_html: str, base: str | None) -> str:
    """The srcdoc of the entry frame: content sanitized again here (defence in depth; it was sanitized
    when parsed), shown without scripts by the sandbox."""
    from modules.rss.parse.sanitize import sanitize_html

    return FRAME.format(sanitize_html(content_html, base))


def schedule_text(row: dict[str, Any]) -> str:
    """Why the feed is polled when it is, in words (pure)."""
    if row["dead"]:
        return "never: the feed is gone (410); re-enable it to try again"
    if not row["enabled"]:
        return "never: disabled"
    if row["interval_override_s"]:
        return f"fixed interval {row['interval_override_s'] // 60} min (set on this feed)"
    return row["interval_reason"] or "first poll"


def health(row: dict[str, Any]) -> tuple[str, str]:
    """(label, css class) of a feed's state: the CLI's words (`rss list`), coloured (pure)."""
    label = service.feed_state(row)
    return label, "ok" if label == "ok" else "bad" if label == "dead" or label.startswith("failing") else ""


def revision_changes(current: dict[str, Any], earlier: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each earlier version (newest first) with what the version after it changed: the title, and words
    removed/added by a word diff of the plain text (pure; the first 5,000 words, to bound the diff)."""
    out = []
    newer = current
    for old in earlier:
        before, after = old["content_text"].split()[:5000], newer["content_text"].split()[:5000]
        removed = added = 0
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after).get_opcodes():
            if tag != "equal":
                removed, added = removed + i2 - i1, added + j2 - j1
        out.append(
            old | {"title_changed": old["title"] != newer["title"], "removed": removed, "added": added}
        )
        newer = old
    return out


def _annotate(row: dict[str, Any]) -> None:
    """What the feed table and the feed page show beside the columns: state and schedule in words."""
    row["health"] = health(row)
    row["schedule"] = schedule_text(row)


def tree(folders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Folder paths → tree rows (path, name, depth, feeds under it, failing under it), parents first (pure)."""
    totals: dict[str, list[int]] = {}
    for f in folders:
        parts = f["folder"].split("/") if f["folder"] else []
        for depth in range(len(parts) + 1):
            key = "/".join(parts[:depth])
            t = totals.setdefault(key, [0, 0])
            t[0] += f["feeds"]
            t[1] += f["failing"]
    return [
        {
            "path": key,
            "name": key.rsplit("/", 1)[-1] if key else "All feeds",
            "depth": key.count("/") + 1 if key else 0,
            "feeds": t[0],
            "failing": t[1],
        }
        for key, t in sorted(totals.items())
    ]


async def build(ctx: ModuleContext) -> APIRouter:
    add_templates("modules.rss.console")
    router = APIRouter()
    from modules.rss.search.query import CoverageCache

    coverage = CoverageCache()

    async def _with(read: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """One read on its own pooled connection, so a page's reads run concurrently (asyncio.gather)."""
        async with ctx.pool.acquire() as conn:
            return await read(conn, *args, **kwargs)

    async def feeds_page(
        request: Request, status: int = 200, *, notice: str | None = None, **extra: Any
    ) -> HTMLResponse:
        q = request.query_params
        folder = q.get("folder")
        failing = q.get("failing") == "1"
        number = max(int(q.get("page", "1")) if q.get("page", "1").isdigit() else 1, 1)
        (rows, total), folder_rows = await asyncio.gather(
            _with(
                views.feed_page,
                folder=folder,
                failing=failing,
                offset=(number - 1) * FEEDS_PER_PAGE,
                limit=FEEDS_PER_PAGE,
            ),
            _with(views.folders),
        )
        for r in rows:
            _annotate(r)
        return page(
            request,
            "rss/feeds.html",
            status,
            title="Feeds",
            rows=rows,
            total=total,
            tree=tree(folder_rows),
            folder=folder,
            failing=failing,
            page_number=number,
            pages=max((total + FEEDS_PER_PAGE - 1) // FEEDS_PER_PAGE, 1),
            notice=notice,
            **{"add_error": None, "choices": [], "url": "", "imported": None, "import_error": None, **extra},
        )

    @router.get("/feeds")
    async def feeds(request: Request) -> HTMLResponse:
        return await feeds_page(request)

    @router.post("/feeds", response_model=None)
    async def add(request: Request) -> Response:
        from modules.rss.subscriptions import subscribe

        form = await request.form()
        url = str(form.get("url") or "").strip()
        folder = str(form.get("folder") or "").strip() or None
        try:
            if not url:
                raise UserError("give the URL of a feed or of a page that links to one")
            subscribe.vet_url(url, allow_private_networks=bool(ctx.settings["allow_private_networks"]))
            added = await service.add_feed(ctx, url, folder=folder)
        except subscribe.SeveralFeeds as exc:
            return await feeds_page(request, 409, choices=exc.found, url=url, add_error=exc.message)
        except (UserError, subscribe.BlockedURLError) as exc:
            return await feeds_page(request, 400, add_error=str(exc), url=url)
        if added.created:
            service.poll_soon(ctx, added.feed.id)
        return RedirectResponse(f"/rss/feeds/{added.feed.id}" + ("?empty=1" if added.notice else ""), 303)

    @router.post("/feeds/import", response_model=None)
    async def import_opml(request: Request) -> Response:
        from modules.rss.subscriptions.opml import OpmlError

        form = await request.form()
        upload = form.get("opml")
        data = await upload.read() if upload is not None and hasattr(upload, "read") else b""
        if not data:
            return await feeds_page(request, 400, import_error="choose an OPML file to import")
        try:
            result = await service.import_opml(
                ctx.pool, data, allow_private_networks=bool(ctx.settings["allow_private_networks"])
            )
        except OpmlError as exc:
            return await feeds_page(request, 400, import_error=str(exc))
        for feed_id in result.added:
            service.poll_soon(ctx, feed_id)
        return await feeds_page(request, imported=result)

    @router.get("/feeds/export.opml")
    async def export() -> Response:
        return Response(
            await service.export_opml(ctx.pool),
            media_type="text/x-opml; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="feedeater.opml"'},
        )

    async def detail(
        request: Request, feed_id: int, status: int = 200, errors: dict[str, str] | None = None, **extra: Any
    ) -> HTMLResponse:
        before = _before(request.query_params.get("before"))
        try:
            row, entries, fetches, decisions, days = await asyncio.gather(
                _with(views.feed, feed_id),
                _with(list_entries, feed_id=feed_id, before=before, limit=ENTRIES_PER_PAGE),
                _with(views.fetches, feed_id),
                _with(views.schedule_log, feed_id),
                _with(views.per_day, feed_id),
            )
        except UserError as exc:
            return page(request, "error.html", 404, title="No such feed", message=str(exc))
        _annotate(row)
        return page(
            request,
            "rss/feed.html",
            status,
            title=row["title"] or row["url"],
            feed=row,
            entries=entries,
            more=_more(feed_id, entries),
            fetches=fetches,
            decisions=decisions,
            chart=svg.bars(days, label="entries per day, last 30 days"),
            settings=FEED_SETTINGS,
            errors=errors or {},
            values=extra.pop("values", None) or _values(row),
            **extra,
        )

    @router.get("/feeds/{feed_id}")
    async def feed(request: Request, feed_id: int) -> HTMLResponse:
        return await detail(request, feed_id)

    @router.get("/feeds/{feed_id}/entries")
    async def more_entries(feed_id: int, before: str | None = None) -> HTMLResponse:
        async with ctx.pool.acquire() as conn:
            entries = await list_entries(
                conn, feed_id=feed_id, before=_before(before), limit=ENTRIES_PER_PAGE
            )
        return fragment("rss/entry_rows.html", entries=entries, more=_more(feed_id, entries))

    @router.post("/feeds/{feed_id}/settings", response_model=None)
    async def save_feed(request: Request, feed_id: int) -> Response:
        form = await request.form()
        values = {key: str(form.get(key) or "").strip() for key, _, _ in FEED_SETTINGS}
        values["enabled"] = "true" if form.get("enabled") else "false"
        values["full_text"] = "true" if form.get("full_text") else "false"
        changes: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for key, raw in values.items():
            try:
                k, v = service.parse_assignment(f"{key}={raw}")
                changes[k] = v
            except UserError as exc:
                errors[key] = str(exc)
        if errors:
            return await detail(request, feed_id, 400, errors, values=values)
        async with ctx.pool.acquire() as conn, conn.transaction():
            changed = service.changed_settings(await views.feed(conn, feed_id), changes)
            await service.update_feed(conn, feed_id, changed)
        return RedirectResponse(f"/rss/feeds/{feed_id}?saved={len(changed)}#settings", 303)

    @router.post("/feeds/{feed_id}/poll")
    async def poll_now(feed_id: int) -> RedirectResponse:
        async with ctx.pool.acquire() as conn:
            feed = await views.feed(conn, feed_id)
        if (
            service.not_pollable(feed_id, enabled=feed["enabled"], dead=feed["dead"]) is not None
        ):  # as `rss poll`
            return RedirectResponse(f"/rss/feeds/{feed_id}?polling=refused", 303)
        service.poll_soon(ctx, feed_id)
        return RedirectResponse(f"/rss/feeds/{feed_id}?polling=1", 303)

    @router.get("/feeds/{feed_id}/remove")
    async def confirm_remove(request: Request, feed_id: int) -> HTMLResponse:
        async with ctx.pool.acquire() as conn:
            row = await views.feed(conn, feed_id)
        return page(request, "rss/remove.html", title=f"Remove {row['title'] or row['url']}?", feed=row)

    @router.post("/feeds/{feed_id}/remove")
    async def remove(feed_id: int) -> RedirectResponse:
        with contextlib.suppress(UserError):  # already gone: the list says so all the same
            await service.remove_feeds(ctx.pool, [feed_id], ctx)
        return RedirectResponse(f"/rss/feeds?removed={feed_id}", 303)

    @router.get("/entries/{entry_id}")
    async def entry(request: Request, entry_id: int) -> HTMLResponse:
        async with ctx.pool.acquire() as conn:
            try:
                row = await views.entry(conn, entry_id)
            except UserError as exc:
                return page(request, "error.html", 404, title="No such entry", message=str(exc))
            earlier = await views.entry_revisions(conn, entry_id) if row["revision"] > 1 else []
            why = await _why(conn, row)
        content = row["content_html"] or row["summary_html"] or ""
        return page(
            request,
            "rss/entry.html",
            title=row["best_title"] or "(untitled)",  # the article page's when the feed had none
            e=row,
            srcdoc=frame_document(content, row["link"]) if content else None,
            revisions=revision_changes(row, earlier),
            why=why,
        )

    async def _why(conn: asyncpg.Connection, row: dict[str, Any]) -> Any:
        """The entry's announcement explained, as `rss why` gives it (by its guid: exact)."""
        return await entries.explain(conn, ctx.settings, row["feed_id"], row["guid"])

    @router.post("/entries/{entry_id}/state")
    async def entry_state(request: Request, entry_id: int) -> RedirectResponse:
        """Read/unread and star/unstar, through store.reading as `rss mark` and the reader-app APIs."""
        from modules.rss.store import mark_entries

        form = await request.form()
        flags = {key: form.get(key) == "1" for key in ("read", "starred") if form.get(key) in ("0", "1")}
        async with ctx.pool.acquire() as conn, conn.transaction():
            await mark_entries(conn, [entry_id], read=flags.get("read"), starred=flags.get("starred"))
        return RedirectResponse(f"/rss/entries/{entry_id}", 303)

    @router.get("/search")
    async def search(request: Request) -> HTMLResponse:
        from modules.rss.service.search import search as run_search

        q = request.query_params
        text = (q.get("q") or "").strip()
        form = {k: q.get(k, "") for k in ("q", "feed", "folder", "since", "until")}
        response = error = None
        if text:
            try:
                feed = form["feed"].strip()
                data: dict[str, Any] = {
                    "query": text,
                    "limit": 20,
                    "feed": int(feed) if feed.isdigit() else feed,
                }
                data.update({k: form[k] for k in ("folder", "since", "until") if form[k].strip()})
                data = {k: v for k, v in data.items() if v != ""}
                response = await run_search(ctx.pool, ctx.ai, data, coverage_cache=coverage)
            except UserError as exc:
                error = str(exc)
        async with ctx.pool.acquire() as conn:
            folder_rows = await views.folders(conn)
        return page(
            request,
            "rss/search.html",
            400 if error else 200,
            title="Search",
            form=form,
            response=response,
            error=error,
            highlight=highlight,
            folders=[f["folder"] for f in folder_rows if f["folder"]],
        )

    return router


def _more(feed_id: int, entries: list[dict[str, Any]]) -> dict[str, str] | None:
    """The link to the next page of entries (and its fragment for infinite scroll), when there may be one."""
    if len(entries) < ENTRIES_PER_PAGE:
        return None
    last = entries[-1]
    token = cursor.encode(last["effective_at"], last["id"])
    return {
        "href": f"/rss/feeds/{feed_id}?before={token}#entries",
        "fragment": f"/rss/feeds/{feed_id}/entries?before={token}",
    }


def _before(raw: str | None) -> tuple[Any, int] | None:
    """The position of an entry cursor (the API's), or None to start at the newest (a bad one too)."""
    try:
        return cursor.decode(raw) if raw else None
    except cursor.BadCursor:
        return None


def _values(row: dict[str, Any]) -> dict[str, str]:
    """The feed's settings as the form shows them (`rss set` units)."""
    return {
        "title": row["title"] or "",
        "folder": row["folder"] or "",
        "interval": str(row["interval_override_s"] // 60) if row["interval_override_s"] else "",
        "lookback": str(row["lookback_hours"] or ""),
        "retention": str(row["retention_days"] or ""),
        "enabled": "true" if row["enabled"] else "false",
        "full_text": "true" if row["full_text"] else "false",
    }
