"""Folders as reader apps see them: stable integer ids (rss/0029) for Miniflux categories and the
labels of the Google Reader API. Id 1 stands for the feeds without a folder; it has no row."""

from __future__ import annotations

from typing import Any

import asyncpg

from host.errors import UserError

NO_FOLDER_ID = 1


async def list_folders(conn: asyncpg.Connection, *, counts: bool = False) -> list[dict[str, Any]]:
    """Every folder by name with its id (feeds without a folder: id 1, name ""); `counts` adds its
    feeds and unread entries (a pass over the entries: only where an app asks for them)."""
    if not counts:
        rows = await conn.fetch("SELECT id, name FROM mod_rss.folders ORDER BY name")
        return [{"id": NO_FOLDER_ID, "name": ""}, *(dict(r) for r in rows)]
    rows = await conn.fetch(
        """WITH feeds AS (
               SELECT coalesce(f.folder, '') AS name, count(DISTINCT f.id) AS feeds,
                      count(e.id) FILTER (WHERE e.id IS NOT NULL AND s.read_at IS NULL) AS unread
               FROM mod_rss.feeds f LEFT JOIN mod_rss.entries e ON e.feed_id = f.id
               LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id
               GROUP BY 1)
           SELECT $1::int AS id, '' AS name, coalesce(feeds.feeds, 0) AS feeds, coalesce(feeds.unread, 0) AS unread
           FROM (SELECT 1) one LEFT JOIN feeds ON feeds.name = ''
           UNION ALL
           SELECT d.id, d.name, coalesce(feeds.feeds, 0), coalesce(feeds.unread, 0)
           FROM mod_rss.folders d LEFT JOIN feeds ON feeds.name = d.name
           ORDER BY name""",
        NO_FOLDER_ID,
    )
    return [{**dict(r), "feeds": int(r["feeds"]), "unread": int(r["unread"])} for r in rows]


async def folder_name(conn: asyncpg.Connection, folder_id: int) -> str | None:
    """The folder behind an id ("" for id 1, the feeds without a folder), or None when there is none."""
    if folder_id == NO_FOLDER_ID:
        return ""
    if not 0 < folder_id < 2**31:  # the column is an integer: no such id
        return None
    name: str | None = await conn.fetchval("SELECT name FROM mod_rss.folders WHERE id = $1", folder_id)
    return name


async def folder_id(conn: asyncpg.Connection, name: str) -> int | None:
    if name == "":
        return NO_FOLDER_ID
    found: int | None = await conn.fetchval("SELECT id FROM mod_rss.folders WHERE name = $1", name)
    return found


async def add_folder(conn: asyncpg.Connection, name: str) -> tuple[int, bool]:
    """A folder by name, created when new: (id, created)."""
    name = _valid(name)
    created = await conn.fetchval(
        "INSERT INTO mod_rss.folders (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id", name
    )
    if created is not None:
        return int(created), True
    existing = await folder_id(conn, name)
    assert existing is not None
    return existing, False


async def rename_folder(conn: asyncpg.Connection, old: str, new: str) -> None:
    """Rename a folder and move its feeds (exactly that folder: subfolders are folders of their own)."""
    new = _valid(new)
    if await folder_id(conn, new) is not None:
        raise UserError(f"a folder {new!r} exists already", "choose another name, or move the feeds into it")
    async with conn.transaction():
        await conn.execute("UPDATE mod_rss.folders SET name = $2 WHERE name = $1", old, new)
        await conn.execute(
            "UPDATE mod_rss.feeds SET folder = $2, updated_at = now() WHERE folder = $1", old, new
        )


async def drop_folder(conn: asyncpg.Connection, name: str) -> int:
    """Delete a folder; its feeds stay, without a folder (nothing is unsubscribed). Returns how many moved."""
    async with conn.transaction():
        moved = await conn.execute(
            "UPDATE mod_rss.feeds SET folder = NULL, updated_at = now() WHERE folder = $1", name
        )
        await conn.execute("DELETE FROM mod_rss.folders WHERE name = $1", name)
    return int(moved.split()[-1])


def _valid(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 500 or any(ord(c) < 32 for c in name):
        raise UserError(
            f"folder name {name!r} is empty, too long or has control characters", "give a short name"
        )
    return name
