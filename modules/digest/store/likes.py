"""mod_digest.likes: articles the user liked (`feedeater digest like <article-id>`), whose text joins the
interest keywords in the profile that topic relevance compares articles with."""

from __future__ import annotations

from typing import Any

import asyncpg

PROFILE_LIKES = 50  # the most recent likes make the profile: tastes move, and the profile stays cheap


async def like(conn: asyncpg.Connection, article_id: int) -> dict[str, Any] | None:
    """Like an article (again: no change); None when there is no such article."""
    return await conn.fetchrow(
        """WITH a AS (SELECT id, title FROM mod_digest.articles WHERE id = $1),
                l AS (INSERT INTO mod_digest.likes (article_id) SELECT id FROM a ON CONFLICT DO NOTHING)
           SELECT id, title FROM a""",
        article_id,
    )


async def unlike(conn: asyncpg.Connection, article_id: int) -> bool:
    return bool(
        await conn.fetchval("DELETE FROM mod_digest.likes WHERE article_id = $1 RETURNING true", article_id)
    )


async def list_all(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT l.article_id, a.title, a.source_name, l.liked_at FROM mod_digest.likes l
           JOIN mod_digest.articles a ON a.id = l.article_id ORDER BY l.liked_at DESC"""
    )
    return [dict(r) for r in rows]


async def profile_texts(conn: asyncpg.Connection) -> list[tuple[str, str]]:
    """(title, body) of the most recent liked articles."""
    rows = await conn.fetch(
        """SELECT a.title, a.body FROM mod_digest.likes l JOIN mod_digest.articles a ON a.id = l.article_id
           ORDER BY l.liked_at DESC LIMIT $1""",
        PROFILE_LIKES,
    )
    return [(r["title"], r["body"]) for r in rows]
