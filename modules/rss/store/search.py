"""The SQL of hybrid search (search/query.py decides: sizes, floors, which words, the fusion).

Every statement filters entries `e` and feeds `f` by a `Scope`. Vector statements use the indexed
expression of store/embeddings.py verbatim, or the HNSW index is not used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from modules.rss.store.embeddings import vector_expr, vector_type


@dataclass(frozen=True, slots=True)
class Scope:
    """The entries a search looks at: one feed, a folder and its subfolders, an effective-time range."""

    feed: int | None = None
    folder: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # inclusive


def _filters(scope: Scope, args: list[Any]) -> str:
    """SQL conditions on `e` (entries) and `f` (feeds) for the scope; appends their arguments."""
    conds = []
    if scope.feed is not None:
        args.append(scope.feed)
        conds.append(f"e.feed_id = ${len(args)}")
    if scope.folder is not None:
        args.append(scope.folder.lower())
        n = len(args)
        conds.append(  # the folder and its subfolders, case aside
            f"(lower(f.folder) = ${n} OR left(lower(f.folder), length(${n}) + 1) = ${n} || '/')"
        )
    if scope.since is not None:
        args.append(scope.since)
        conds.append(f"e.effective_at >= ${len(args)}")
    if scope.until is not None:
        args.append(scope.until)
        conds.append(f"e.effective_at <= ${len(args)}")
    return "".join(f" AND {c}" for c in conds)


async def custom_plans(conn: asyncpg.Connection) -> None:
    """Plan each statement for its actual words (inside the caller's transaction): a generic plan treats
    "the" like a rare word."""
    await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")


async def feed_exists(conn: asyncpg.Connection, feed_id: int) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM mod_rss.feeds WHERE id = $1", feed_id))


async def folder_names(conn: asyncpg.Connection) -> list[str]:
    """Every folder a feed is in, and those an app created (known while empty, rss/0029)."""
    rows = await conn.fetch(
        "SELECT folder FROM mod_rss.feeds WHERE folder IS NOT NULL UNION SELECT name FROM mod_rss.folders"
    )
    return [r["folder"] for r in rows]


async def vector_hits(
    conn: asyncpg.Connection, scope: Scope, vector: list[float], model: str, k: int, *, ef_search: int
) -> list[tuple[int, float]]:
    """The `k` nearest embedded entries of `model` by cosine, as (entry id, similarity), in index order."""
    dims = len(vector)
    expr = vector_expr(dims)
    args: list[Any] = [vector, model, k]
    where = _filters(scope, args)
    async with conn.transaction():
        # ef_search ≥ k, or HNSW returns fewer than k; iterative scans keep filtered searches from starving.
        await conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
        await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = await conn.fetch(
            f"""SELECT x.entry_id, 1 - ({expr} <=> $1::{vector_type(dims)}({dims})) AS similarity
                FROM mod_rss.entry_embeddings x
                JOIN mod_rss.entries e ON e.id = x.entry_id JOIN mod_rss.feeds f ON f.id = e.feed_id
                WHERE x.dims = {dims} AND x.model = $2{where}
                ORDER BY {expr} <=> $1::{vector_type(dims)}({dims}) LIMIT $3""",
            *args,
        )
    return [(r["entry_id"], float(r["similarity"])) for r in rows]


async def common_words(conn: asyncpg.Connection) -> dict[str, float]:
    """The entries' most common words and the share of entries each is in, from PostgreSQL's statistics
    of `search_tsv` (ANALYZE); empty before the first ANALYZE."""
    row = await conn.fetchrow(
        """SELECT most_common_elems::text::text[] AS words, most_common_elem_freqs AS shares FROM pg_stats
           WHERE schemaname = 'mod_rss' AND tablename = 'entries' AND attname = 'search_tsv'"""
    )
    return dict(zip(row["words"], row["shares"], strict=False)) if row and row["words"] else {}


async def query_words(conn: asyncpg.Connection, text: str) -> tuple[int, list[str]]:
    """(entries in the store, estimated from the statistics; the distinct words of `text` that are no
    stop words)."""
    row = await conn.fetchrow(
        """SELECT coalesce(nullif(greatest(c.reltuples::bigint, 0), 0),
                           (SELECT count(*) FROM mod_rss.entries)) AS total,
                  ARRAY(SELECT DISTINCT word FROM unnest(tsvector_to_array(to_tsvector('simple', $1))) AS t(word)
                        WHERE length(word) > 1 AND length(to_tsvector('english', word)) > 0) AS words
           FROM pg_class c WHERE c.oid = 'mod_rss.entries'::regclass""",
        text,
    )
    assert row is not None
    return int(row["total"]), list(row["words"])


async def rare_word_hits(
    conn: asyncpg.Connection,
    scope: Scope,
    words: Sequence[str],
    k: int,
    *,
    per_word: int,
    total: int,
    max_entries: float,
    min_shared: int,
) -> list[tuple[int, float]]:
    """Entries sharing at least `min_shared` of `words`, ranked by the summed rarity (ln(total / df) /
    ln(total)) of those they share; a word counts when it is in fewer than `per_word` entries and in at
    most `max_entries`. Each word's entries are gathered up to `per_word`; the scope applies to the
    candidates."""
    args: list[Any] = [list(words), per_word, float(total), max_entries, min_shared, k]
    where = _filters(scope, args)
    rows = await conn.fetch(
        f"""WITH pairs AS (SELECT w.word, p.id FROM unnest($1::text[]) AS w(word), LATERAL (
                               SELECT e.id FROM mod_rss.entries e
                               WHERE e.search_tsv @@ quote_literal(w.word)::tsquery LIMIT $2) p),
                 rare AS (SELECT word, ln($3 / count(*)) / ln($3) AS rarity FROM pairs GROUP BY word
                          HAVING count(*) < $2 AND count(*) <= $4),
                 shared AS (SELECT pairs.id, sum(rare.rarity) AS score FROM pairs JOIN rare USING (word)
                            GROUP BY pairs.id HAVING count(*) >= $5)
            SELECT s.id, s.score FROM shared s
            JOIN mod_rss.entries e ON e.id = s.id JOIN mod_rss.feeds f ON f.id = e.feed_id
            WHERE true{where} ORDER BY s.score DESC, s.id DESC LIMIT $6""",
        *args,
    )
    return [(r["id"], float(r["score"])) for r in rows]


async def tsquery(conn: asyncpg.Connection, text: str) -> str:
    """The query as websearch_to_tsquery text ("" when it has no words)."""
    tsq: str = await conn.fetchval("SELECT websearch_to_tsquery('simple', $1)::text", text)
    return tsq


async def text_hits(
    conn: asyncpg.Connection, scope: Scope, tsq: str, k: int, *, newest: int
) -> list[tuple[int, float]]:
    """The `newest` entries matching `tsq`, best `k` by ts_rank_cd."""
    args: list[Any] = [tsq, k]
    where = _filters(scope, args)
    args.append(newest)
    rows = await conn.fetch(
        f"""SELECT id, ts_rank_cd(search_tsv, $1::tsquery) AS rank FROM (
                SELECT e.id, e.search_tsv FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
                WHERE e.search_tsv @@ $1::tsquery{where}
                ORDER BY e.effective_at DESC LIMIT ${len(args)}) newest
            ORDER BY rank DESC, id DESC LIMIT $2""",
        *args,
    )
    return [(r["id"], float(r["rank"])) for r in rows]


async def any_word_hits(
    conn: asyncpg.Connection,
    scope: Scope,
    any_word: str,
    text: str,
    k: int,
    *,
    leave_out: Sequence[int],
    per_word: int,
) -> list[tuple[int, float]]:
    """Up to `k` entries matching any word of `text` (ranked by `any_word`, a tsquery), other than
    `leave_out`. The pool is up to `per_word` entries per word: a rare word brings every entry it is in, a
    common one only a sample. Stop words bring none ('english' reduces them to nothing)."""
    args: list[Any] = [any_word, k, list(leave_out), text, per_word]
    where = _filters(scope, args)
    rows = await conn.fetch(
        f"""WITH pool AS (
                SELECT DISTINCT p.id FROM unnest(tsvector_to_array(to_tsvector('simple', $4))) AS w(word),
                LATERAL (SELECT e.id FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
                         WHERE e.search_tsv @@ quote_literal(w.word)::tsquery{where} LIMIT $5) p
                WHERE length(to_tsvector('english', w.word)) > 0)
            SELECT e.id, ts_rank_cd(e.search_tsv, $1::tsquery) AS rank
            FROM pool JOIN mod_rss.entries e ON e.id = pool.id
            WHERE e.id <> ALL($3::bigint[])
            ORDER BY rank DESC, e.id DESC LIMIT $2""",
        *args,
    )
    return [(r["id"], float(r["rank"])) for r in rows]


async def coverage(conn: asyncpg.Connection, scope: Scope, model: str) -> tuple[int, int]:
    """(entries in scope embedded with `model`, entries in scope)."""
    args: list[Any] = [model]
    where = _filters(scope, args)
    row = await conn.fetchrow(
        f"""SELECT count(*) AS total,
                   count(*) FILTER (WHERE x.status = 'done' AND x.model = $1) AS embedded
            FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
            LEFT JOIN mod_rss.entry_embeddings x ON x.entry_id = e.id
            WHERE true{where}""",
        *args,
    )
    assert row is not None
    return int(row["embedded"]), int(row["total"])


async def title_matches(conn: asyncpg.Connection, scope: Scope, title: str, *, limit: int) -> list[int]:
    """Entries whose lower-cased title is `title`, newest first."""
    args: list[Any] = [title]
    where = _filters(scope, args)
    args.append(limit)
    rows = await conn.fetch(
        f"""SELECT e.id FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
            WHERE md5(lower(e.title)) = md5($1) AND lower(e.title) = $1{where}
            ORDER BY e.effective_at DESC, e.id DESC LIMIT ${len(args)}""",
        *args,
    )
    return [r["id"] for r in rows]


async def details(
    conn: asyncpg.Connection, entry_ids: Sequence[int], tsq: str | None, headline: str
) -> dict[int, asyncpg.Record]:
    """What a result shows, by entry id (entries deleted meanwhile are missing): feed, title, link, date,
    and a snippet (ts_headline with `headline`'s options, or the text's start without a tsquery)."""
    rows = await conn.fetch(
        """SELECT e.id, e.message_id, e.feed_id, f.title AS feed_title, e.title, e.link, e.published,
                   CASE WHEN $2::text IS NULL THEN left(t.best_text, 240)
                        ELSE ts_headline('simple', left(t.best_text, 20000), $2::tsquery, $3) END AS snippet
            FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
            JOIN mod_rss.entry_text t ON t.entry_id = e.id WHERE e.id = ANY($1::bigint[])""",
        list(entry_ids),
        tsq,
        headline,
    )
    return {r["id"]: r for r in rows}
