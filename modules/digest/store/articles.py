"""mod_digest.articles and its lookup keys: insert with the dedup decision, candidates through btree
rows (mod_digest.dedup_keys), revisions."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from modules.digest.dedup import fingerprint
from modules.digest.dedup.layers import Candidate, Decision, Features, Thresholds
from modules.digest.model import Article

CANDIDATE_LIMIT = 400
_COLUMNS = """a.id, a.cluster_id, a.title_tokens, a.canonical_url, a.content_hash, a.minhash, a.simhash,
              a.entities, a.word_count, a.published_at, a.source_module || ':' || a.stream AS source"""


def _keys_sql(first: int) -> str:
    """An article's lookup keys from parameters $first (band keys), +1 (title prefix words), +2
    (multi-word entities). Words are hashed in SQL so the migration that backfilled the keys and every
    insert agree."""
    return f"""${first}::bigint[]
           || ARRAY(SELECT hashtextextended('t:' || w, 0) FROM unnest(${first + 1}::text[]) w)
           || ARRAY(SELECT hashtextextended('e:' || e, 0) FROM unnest(${first + 2}::text[]) e)"""


@dataclass(frozen=True, slots=True)
class Lookup:
    """The stored article with the same message id (layer 1), else the candidates of layers 2–5; `seen`
    is the highest article id the lookup could see (what `insert` checks nothing was added after)."""

    same_identity: tuple[int, Features] | None
    candidates: list[Candidate]
    seen: int


def _features(row: asyncpg.Record) -> Features:
    return Features(
        title_tokens=frozenset(row["title_tokens"]),
        canonical_url=row["canonical_url"],
        content_hash=row["content_hash"],
        minhash=tuple(row["minhash"]),
        simhash=row["simhash"],
        entities=frozenset(row["entities"]),
        word_count=row["word_count"],
        published_at=row["published_at"],
        source=row["source"],
    )


def title_probe(tokens: frozenset[str], threshold: float) -> list[str]:
    """Prefix filter: if Jaccard(x, y) ≥ t then x and y share a word among their first |x| − ⌈t·|x|⌉ + 1
    (and |y| − ⌈t·|y|⌉ + 1) words in one global order. The order is longest word first (long words are
    rare), so an article is stored under two or three title words and probes with as many."""
    n = len(tokens)
    keep = n - math.ceil(round(threshold * n, 9)) + 1
    return sorted(tokens, key=lambda w: (-len(w), w))[:keep]


def entity_probe(f: Features, t: Thresholds) -> list[str]:
    """Names of two or more words (rare enough to look up by), when the article has enough entities for
    layer 5 to consider it at all."""
    return sorted(e for e in f.entities if " " in e) if len(f.entities) >= t.min_entities else []


def lookup_keys(f: Features, t: Thresholds) -> list[Any]:
    """The parameters of _keys_sql: band keys, title prefix words, multi-word entities."""
    return [fingerprint.bands(f.minhash), title_probe(f.title_tokens, t.title_long), entity_probe(f, t)]


def candidate_query(message_id: uuid.UUID, f: Features, t: Thresholds) -> tuple[str, list[Any]]:
    """The one lookup of every layer (SQL and parameters), separate so benchmarks can EXPLAIN it.

    Each branch is an index probe with its layer's time window; title and entity hits are filtered by
    their real overlap in SQL so only plausible candidates (with their 128 minima) are transferred.

    It also takes the dedup lock (transaction-scoped: two copies arriving at once must not both be
    `unique`) and returns the highest article id of its snapshot in every row (one row of NULLs when
    there is no candidate). The snapshot was taken before the lock was granted, so a writer that held
    the lock meanwhile is not seen: `insert` finds its rows (ids above `seen`) and the caller looks
    again. Without a conflict this saves the lock's own round trip."""
    sql = f"""
        WITH locked AS MATERIALIZED (
            SELECT pg_advisory_xact_lock(hashtext('mod_digest.dedup'))::text AS lock,
                   (SELECT COALESCE(max(id), 0) FROM mod_digest.articles) AS seen
        ), hit AS (
            SELECT id, 'm' AS via FROM mod_digest.articles WHERE message_id = $13
            UNION ALL
            SELECT id, 'u' FROM mod_digest.articles WHERE $1::text IS NOT NULL AND canonical_url = $1
            UNION ALL
            SELECT article_id, 'b' FROM mod_digest.dedup_keys
            WHERE key = ANY($2::bigint[]) AND at BETWEEN $3::timestamptz - $4::interval AND $3 + $4
            UNION ALL
            SELECT article_id, 't' FROM mod_digest.dedup_keys
            WHERE key = ANY(ARRAY(SELECT hashtextextended('t:' || w, 0) FROM unnest($5::text[]) w))
              AND at BETWEEN $3 - $6::interval AND $3 + $6
            UNION ALL
            SELECT article_id, 'e' FROM mod_digest.dedup_keys
            WHERE key = ANY(ARRAY(SELECT hashtextextended('e:' || e, 0) FROM unnest($9::text[]) e))
              AND at BETWEEN $3 - $10::interval AND $3 + $10
        ), one AS (
            SELECT id, bool_or(via = 'm') AS m, bool_or(via IN ('u', 'b')) AS strong,
                   bool_or(via = 't') AS t, bool_or(via = 'e') AS e
            FROM hit GROUP BY id
        ), found AS (
            SELECT {_COLUMNS}, one.m AS same_identity
            FROM one JOIN mod_digest.articles a ON a.id = one.id
            WHERE one.m OR (a.disposition <> 'exact_duplicate' AND (
                     one.strong
                  OR (one.t AND cardinality(ARRAY(SELECT unnest(a.title_tokens) INTERSECT
                                                   SELECT unnest($7::text[]))) >= $8)
                  OR (one.e AND cardinality(ARRAY(SELECT unnest(a.entities) INTERSECT
                                                   SELECT unnest($11::text[]))) >= $12)))
            ORDER BY one.m DESC, a.published_at DESC
            LIMIT $14
        )
        SELECT locked.seen, found.* FROM locked LEFT JOIN found ON true
        ORDER BY found.same_identity DESC NULLS LAST, found.published_at DESC"""
    bands, title_words, entity_words = lookup_keys(f, t)
    params = [
        f.canonical_url,
        bands,
        f.published_at,
        t.fingerprint_window,
        title_words,
        t.title_window,
        sorted(f.title_tokens),
        max(1, int(len(f.title_tokens) * t.title_long)),
        entity_words,
        t.entity_window,
        sorted(f.entities),
        t.min_entities,  # the overlap itself (share of the smaller set) is checked in Python
        message_id,
        CANDIDATE_LIMIT,
    ]
    return sql, params


async def lookup(conn: asyncpg.Connection, message_id: uuid.UUID, f: Features, t: Thresholds) -> Lookup:
    """Layer 1's stored article and the other layers' candidates in one round trip, under the dedup lock
    (call inside a transaction)."""
    sql, params = candidate_query(message_id, f, t)
    rows = await conn.fetch(sql, *params)
    seen: int = rows[0]["seen"]
    if rows[0]["same_identity"]:
        return Lookup((rows[0]["id"], _features(rows[0])), [], seen)
    return Lookup(
        None, [Candidate(r["id"], r["cluster_id"], _features(r)) for r in rows if r["id"] is not None], seen
    )


def _fingerprints(f: Features) -> list[Any]:
    """Column values of title_tokens, minhash, simhash, entities (in that order)."""
    return [sorted(f.title_tokens), list(f.minhash), f.simhash, sorted(f.entities)]


async def insert(
    conn: asyncpg.Connection, a: Article, f: Features, d: Decision, t: Thresholds, seen: int | None
) -> int | None:
    """Store a new article with its disposition and lookup keys (one statement); its cluster is the
    matched article's, else itself. An exact duplicate gets no keys: nothing should match it.

    With `seen` (Lookup.seen), nothing is stored and None is returned when an article above it exists:
    another writer committed after the lookup's snapshot, so the decision may be stale."""
    keys = lookup_keys(f, t) if d.disposition != "exact_duplicate" else [[], [], []]
    new_id: int | None = await conn.fetchval(
        f"""WITH n AS (
               SELECT nextval('mod_digest.articles_id_seq') AS id
               WHERE $30::bigint IS NULL OR NOT EXISTS (SELECT FROM mod_digest.articles WHERE id > $30)
           ),
           a AS (
               INSERT INTO mod_digest.articles (id, message_id, source_module, stream, feed_id, source_name,
                   domain, title, url, canonical_url, body, word_count, published_at, date_uncertain,
                   partial_content, content_hash, depth_signals, title_tokens, minhash, simhash, entities,
                   disposition, layer, match_score, matched_id, cluster_id, revision)
               SELECT n.id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
                      $22, $23, $24, $25, $26, $27, COALESCE($28, n.id), $29
               FROM n
               RETURNING id, published_at
           ),
           k AS (
               INSERT INTO mod_digest.dedup_keys (key, at, article_id)
               SELECT DISTINCT key, a.published_at, a.id FROM a, unnest({_keys_sql(1)}) key
           )
           SELECT id FROM a""",
        *keys,
        a.message_id,
        a.source_module,
        a.stream,
        a.feed_id,
        a.source_name,
        a.domain,
        a.title,
        a.url,
        f.canonical_url,
        a.body,
        a.word_count,
        a.published_at,
        a.date_uncertain,
        a.partial_content,
        a.content_hash,
        list(a.depth_signals),
        *_fingerprints(f),
        d.disposition,
        d.layer,
        d.score,
        d.matched.id if d.matched is not None else None,
        d.matched.cluster_id if d.matched is not None else None,
        a.revision,
        seen,
    )
    return new_id


async def revise(
    conn: asyncpg.Connection, article_id: int, old: Features, a: Article, f: Features, t: Thresholds
) -> None:
    """Layer 1 revision: replace the stored content and lookup keys in place; a unique article is
    flagged `revision`."""
    await conn.execute(
        f"""WITH gone AS (
               DELETE FROM mod_digest.dedup_keys
               WHERE article_id = $4 AND key = ANY({_keys_sql(5)})
           ),
           u AS (
               UPDATE mod_digest.articles SET title = $8, url = $9, canonical_url = $10, body = $11,
                   word_count = $12, partial_content = $13, content_hash = $14, depth_signals = $15,
                   title_tokens = $16, minhash = $17, simhash = $18, entities = $19,
                   revision = GREATEST(revision + 1, $20),
                   disposition = CASE WHEN disposition = 'unique' THEN 'revision' ELSE disposition END,
                   updated_at = now()
               WHERE id = $4
               RETURNING id, published_at, disposition
           )
           INSERT INTO mod_digest.dedup_keys (key, at, article_id)
           SELECT DISTINCT key, u.published_at, u.id FROM u, unnest({_keys_sql(1)}) key
           WHERE u.disposition <> 'exact_duplicate'""",
        *lookup_keys(f, t),
        article_id,
        *lookup_keys(old, t),
        a.title,
        a.url,
        f.canonical_url,
        a.body,
        a.word_count,
        a.partial_content,
        a.content_hash,
        list(a.depth_signals),
        *_fingerprints(f),
        a.revision,
    )


async def window(conn: asyncpg.Connection, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Every article published in [start, end) with its source's tier and its feed's health."""
    rows = await conn.fetch(
        """SELECT a.id, a.message_id, a.source_module, a.stream, a.feed_id, a.source_name, a.domain, a.title,
                  a.url, a.canonical_url, a.body, a.word_count, a.published_at, a.date_uncertain,
                  a.partial_content, a.depth_signals, a.entities, a.disposition, a.layer, a.cluster_id,
                  a.revision, s.tier
           FROM mod_digest.articles a
           LEFT JOIN mod_digest.sources s ON s.domain = a.domain
           WHERE a.published_at >= $1 AND a.published_at < $2""",
        start,
        end,
    )
    return [dict(r) for r in rows]
