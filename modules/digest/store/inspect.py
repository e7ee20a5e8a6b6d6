"""Reading dedup decisions back (CLI `digest article|cluster|explain`, the API and the console): an
article with its decision history, a story cluster with why each article joined, two articles' features."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

import asyncpg

from host.errors import UserError
from modules.digest.assemble.stories import representative
from modules.digest.dedup import layers
from modules.digest.store.articles import FEATURE_COLUMNS, features_of

_SUMMARY = """a.id, a.message_id, a.title, a.source_name, a.url, a.guid, a.published_at, a.disposition,
              a.layer, a.match_score, a.matched_id, a.cluster_id, a.event_id, a.word_count, a.revision, a.domain"""
FIX = "give an article id (a digest's `id`) or a message id (UUID)"


async def resolve(conn: asyncpg.Connection, ref: str) -> int:
    """An article id from its number or its message id (the source's UUID)."""
    text = ref.strip()
    if text.isascii() and text.isdigit():
        if int(text) > 2**63 - 1:
            raise UserError(f"no article {ref}", FIX)
        found = await conn.fetchval("SELECT id FROM mod_digest.articles WHERE id = $1", int(text))
    else:
        try:
            message_id = uuid.UUID(text)
        except ValueError:
            raise UserError(f"{ref!r} is not an article id or a message id", FIX) from None
        found = await conn.fetchval("SELECT id FROM mod_digest.articles WHERE message_id = $1", message_id)
    if found is None:
        raise UserError(f"no article {ref}", "see `feedeater digest build` for the ids a digest shows")
    return int(found)


def _plain(row: asyncpg.Record) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, uuid.UUID) else v) for k, v in dict(row).items()}


async def article(conn: asyncpg.Connection, article_id: int) -> dict[str, Any]:
    """An article with its current decision, the features behind it, its match, story cluster, event
    links and every decision taken about it (oldest first)."""
    row = await conn.fetchrow(
        f"""SELECT {_SUMMARY}, a.canonical_url, a.content_hash, a.text_hash, a.markers, a.entities,
                   cardinality(a.title_tokens) AS title_words, a.received_at, a.updated_at,
                   (SELECT count(*) FROM mod_digest.articles c WHERE c.cluster_id = a.cluster_id) AS cluster_size,
                   (SELECT count(DISTINCT e.cluster_id) FROM mod_digest.articles e WHERE e.event_id = a.event_id)
                       AS event_stories
            FROM mod_digest.articles a WHERE a.id = $1""",
        article_id,
    )
    if row is None:
        raise UserError(f"no article {article_id}", "see `feedeater digest build` for the ids a digest shows")
    out = _plain(row)
    history = await conn.fetch(
        """SELECT decided_at, revision, disposition, layer, score, matched_id, cluster_id, event_id,
                  candidates, details
           FROM mod_digest.decisions WHERE article_id = $1 ORDER BY id""",
        article_id,
    )
    out["history"] = [_plain(h) for h in history]
    out["details"] = next((h["details"] for h in reversed(history) if h["details"]), [])
    out["candidates"] = next(
        (h["candidates"] for h in reversed(history) if h["candidates"] is not None), None
    )
    matched = None
    if row["matched_id"] is not None:
        m = await conn.fetchrow(
            f"SELECT {_SUMMARY} FROM mod_digest.articles a WHERE a.id = $1", row["matched_id"]
        )
        matched = _plain(m) if m is not None else None
    out["matched"] = matched
    links = await conn.fetch(
        f"""SELECT {_SUMMARY} FROM mod_digest.articles a
            WHERE a.event_id = $1 AND a.id = a.cluster_id AND a.cluster_id <> $2 ORDER BY a.id""",
        row["event_id"],
        row["cluster_id"],
    )
    out["event_links"] = [_plain(r) for r in links]  # the other stories of its event, by their first article
    return out


async def cluster(conn: asyncpg.Connection, cluster_id: int) -> dict[str, Any]:
    """A story cluster: its articles (oldest first) with how each joined, the one a digest shows, and the
    other stories of its event."""
    rows = await conn.fetch(
        f"SELECT {_SUMMARY} FROM mod_digest.articles a WHERE a.cluster_id = $1 ORDER BY a.id", cluster_id
    )
    if not rows:
        member = await conn.fetchval("SELECT cluster_id FROM mod_digest.articles WHERE id = $1", cluster_id)
        if member is None:
            raise UserError(f"no story cluster {cluster_id}", "give a cluster id from `digest article ID`")
        return await cluster(conn, int(member))  # an article's id leads to its cluster
    members = [_plain(r) for r in rows]
    event_id = members[0]["event_id"]
    others = await conn.fetch(
        f"""SELECT {_SUMMARY},
                   (SELECT count(*) FROM mod_digest.articles c WHERE c.cluster_id = a.id) AS size
            FROM mod_digest.articles a
            WHERE a.event_id = $1 AND a.id = a.cluster_id AND a.id <> $2 ORDER BY a.id""",
        event_id,
        cluster_id,
    )
    return {
        "cluster_id": cluster_id,
        "event_id": event_id,
        "representative": representative(members)["id"],
        "articles": members,
        "event_stories": [_plain(r) for r in others],
    }


async def explain(conn: asyncpg.Connection, a: int, b: int) -> dict[str, Any]:
    """How every dedup layer compares two stored articles (layers.explain over their stored features)."""
    rows = {
        r["id"]: r
        for r in await conn.fetch(
            f"SELECT {FEATURE_COLUMNS}, a.title, a.source_name FROM mod_digest.articles a WHERE a.id = ANY($1::bigint[])",
            [a, b],
        )
    }
    for ref in (a, b):
        if ref not in rows:
            raise UserError(
                f"no article {ref}", "give two article ids (a digest's `id`, `digest article ID`)"
            )
    checks = layers.explain(features_of(rows[b]), features_of(rows[a]))
    return {
        "a": {"id": a, "title": rows[a]["title"], "source": rows[a]["source_name"]},
        "b": {"id": b, "title": rows[b]["title"], "source": rows[b]["source_name"]},
        "same_story": rows[a]["cluster_id"] == rows[b]["cluster_id"],
        "same_event": rows[a]["event_id"] == rows[b]["event_id"],
        "checks": [asdict(c) for c in checks],
    }
