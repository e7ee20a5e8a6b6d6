"""The Miniflux API v1 on the wire (pure): feedeater rows → Miniflux's JSON objects, and Miniflux's
query parameters → a store EntryFilter. Shapes follow Miniflux's model package (field names, the
{"total", "entries"} envelope, RFC 3339 times, status "read"/"unread"); there is one user, id 1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from modules.rss.reader.edge import BadRequest, no_nul
from modules.rss.store.folders import NO_FOLDER_ID
from modules.rss.store.reading import EntryFilter, Sort

USER_ID = 1
NO_FOLDER_TITLE = "All"  # Miniflux's default category: the feeds without a folder
ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time, what Miniflux sends for "never"
MAX_LIMIT = 10_000
ORDERS: dict[str, Sort] = {
    "published_at": "published",
    "id": "id",
    "created_at": "created",
    "changed_at": "changed",
}


def when(dt: datetime | None) -> str:
    """RFC 3339 in UTC, whole seconds (newsboat's date parser takes no fractions)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if dt is not None else ZERO_TIME


def category(folder_id: int, name: str, counts: Mapping[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": folder_id,
        "title": name or NO_FOLDER_TITLE,
        "user_id": USER_ID,
        "hide_globally": False,
    }
    if counts is not None:
        out |= {"feed_count": counts["feeds"], "total_unread": counts["unread"]}
    return out


def feed(row: Mapping[str, Any], folder_ids: Mapping[str, int]) -> dict[str, Any]:
    """A feed row (store.list_feeds) as Miniflux's Feed; `folder_ids` maps folder names to their ids."""
    name = row["folder"] or ""
    return {
        "id": row["id"],
        "user_id": USER_ID,
        "feed_url": row["url"],
        "site_url": row["site_url"] or "",
        "title": row["title"] or row["url"],
        "description": row.get("description") or "",
        "checked_at": when(row.get("last_polled_at")),
        "next_check_at": when(row.get("next_poll_at")),
        "etag_header": "",
        "last_modified_header": "",
        "parsing_error_message": row.get("last_error") or "",
        "parsing_error_count": row.get("consecutive_errors") or 0,
        "scraper_rules": "",
        "rewrite_rules": "",
        "crawler": bool(row["full_text"]),  # Miniflux's "fetch original content" is feedeater's full_text
        "blocklist_rules": "",
        "keeplist_rules": "",
        "urlrewrite_rules": "",
        "user_agent": "",
        "cookie": "",
        "username": "",
        "password": "",
        "disabled": not row["enabled"] or bool(row["dead"]),
        "no_media_player": False,
        "ignore_http_cache": False,
        "allow_self_signed_certificates": False,
        "fetch_via_proxy": False,
        "hide_globally": False,
        "category": category(folder_ids.get(name, NO_FOLDER_ID), name),
        "icon": None,  # feedeater keeps no icons
    }


def entry(row: Mapping[str, Any], feed_json: Mapping[str, Any]) -> dict[str, Any]:
    """An entry row (store.find_entries(content=True)) as Miniflux's Entry, with its feed inside."""
    return {
        "id": row["id"],
        "user_id": USER_ID,
        "feed_id": row["feed_id"],
        "status": "read" if row["read_at"] is not None else "unread",
        "hash": str(row["message_id"]),
        "title": row["title"] or "",
        "url": row["link"] or "",
        "comments_url": "",
        "published_at": when(row["effective_at"]),
        "created_at": when(row["first_seen"]),
        "changed_at": when(row["changed_at"]),
        "content": row["content_html"],
        "author": ", ".join(row["authors"] or ()),
        "share_code": "",
        "starred": row["starred_at"] is not None,
        "reading_time": row["reading_time_minutes"],
        "enclosures": [
            {
                "id": row["id"] * 1000 + i,  # unique, but /v1/enclosures is not served
                "user_id": USER_ID,
                "entry_id": row["id"],
                "url": e.get("url") or "",
                "mime_type": e.get("type") or "",
                "size": e.get("length") or 0,
                "media_progression": 0,
            }
            for i, e in enumerate(row["enclosures"] or ())
        ],
        "feed": feed_json,
        "tags": [],
    }


def user(name: str) -> dict[str, Any]:
    return {
        "id": USER_ID,
        "username": name,
        "is_admin": True,
        "theme": "light_serif",
        "language": "en_US",
        "timezone": "UTC",
        "entry_sorting_direction": "desc",
        "entry_sorting_order": "published_at",
        "stylesheet": "",
        "google_id": "",
        "openid_connect_id": "",
        "entries_per_page": 100,
        "keyboard_shortcuts": True,
        "show_reading_time": True,
        "entry_swipe": True,
        "last_login_at": None,
        "display_mode": "standalone",
        "default_reading_speed": 265,
        "cjk_reading_speed": 500,
        "default_home_page": "unread",
        "categories_sorting_order": "unread_count",
        "mark_read_on_view": True,
    }


@dataclass(frozen=True, slots=True)
class EntryQuery:
    where: EntryFilter
    sort: Sort
    newest_first: bool
    offset: int
    limit: int


def int_param(params: Mapping[str, Sequence[str]], key: str, default: int | None = None) -> int | None:
    values = params.get(key) or []
    if not values or values[-1] == "":
        return default
    try:
        value = int(values[-1])
    except ValueError:
        raise BadRequest(f"{key} must be an integer, not {values[-1][:40]!r}") from None
    if abs(value) >= 2**63:  # PostgreSQL's bigint
        raise BadRequest(f"{key}={value} is out of range")
    return value


def _time(params: Mapping[str, Sequence[str]], key: str) -> datetime | None:
    stamp = int_param(params, key)
    try:
        return datetime.fromtimestamp(stamp, UTC) if stamp is not None and stamp > 0 else None
    except (OverflowError, OSError, ValueError):
        raise BadRequest(f"{key}={stamp} is not a Unix time") from None


def parse_bool(raw: str) -> bool | None:
    """Go's strconv.ParseBool, which Miniflux uses; None for anything else."""
    return {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}.get(raw.lower())


def entry_query(
    params: Mapping[str, Sequence[str]], *, feed_id: int | None = None, folder: str | None = None
) -> EntryQuery:
    """Miniflux's entry filters (status, starred, order, direction, offset, limit, before/after,
    published_*, changed_*, *_entry_id, search) as one query; unsupported values are a 400."""
    statuses = set(params.get("status") or [])
    if bad := statuses - {"read", "unread", "removed"}:
        raise BadRequest(f"status {sorted(bad)[0]!r} is not one of read, unread, removed")
    read = None if {"read", "unread"} <= statuses or not statuses & {"read", "unread"} else "read" in statuses
    if statuses == {"removed"}:  # feedeater removes nothing by hand: no entry has that status
        read, ids = None, ()
    else:
        ids = None
    order = (params.get("order") or ["published_at"])[-1]
    if order not in ORDERS:
        raise BadRequest(f"order {order!r} is not supported", f"use one of {', '.join(ORDERS)}")
    direction = (params.get("direction") or ["asc"])[-1]
    if direction not in ("asc", "desc"):
        raise BadRequest(f"direction {direction!r} is not asc or desc")
    limit = int_param(params, "limit", 100)
    offset = int_param(params, "offset", 0)
    assert limit is not None and offset is not None
    if limit < 0 or offset < 0:
        raise BadRequest("offset and limit must not be negative")
    starred_raw = (params.get("starred") or [""])[-1]
    search = no_nul((params.get("search") or [""])[-1], "search").strip() or None
    where = EntryFilter(
        feed_id=feed_id if feed_id is not None else int_param(params, "feed_id"),
        folder=folder,
        read=read,
        starred=parse_bool(starred_raw) if starred_raw else None,
        since=_time(params, "published_after") or _time(params, "after"),
        until=_time(params, "published_before") or _time(params, "before"),
        changed_since=_time(params, "changed_after"),
        changed_until=_time(params, "changed_before"),
        ids=ids,
        after_id=int_param(params, "after_entry_id"),
        before_id=int_param(params, "before_entry_id"),
        search=search,
    )
    # Miniflux reads limit=0 as "no limit": here the most one page may hold.
    return EntryQuery(where, ORDERS[order], direction == "desc", offset, min(limit, MAX_LIMIT) or MAX_LIMIT)
