"""mod_digest.articles: insert with the dedup decision, candidate lookup through the GIN indexes, revisions."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Any

import asyncpg

from modules.digest.dedup import fingerprint
from modules.digest.dedup.layers import Candidate, Decision, Features, Thresholds
from modules.digest.model import Article

CANDIDATE_LIMIT = 400
_SELECT = """SELECT id, cluster_id, title_tokens, canonical_url, content_hash, minhash, simhash, entities,
                    word_count, published_at, source_module || ':' || stream AS source FROM mod_digest.articles"""


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


async def lock_dedup(conn: asyncpg.Connection) -> None:
    """Serialize dedup decisions across hosts (two copies arriving at once must not both be `unique`)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('mod_digest.dedup'))")


async def by_message(conn: asyncpg.Connection, message_id: uuid.UUID) -> tuple[int, Features] | None:
    row = await conn.fetchrow(
        f"{_SELECT} WHERE message_id = $1",
        message_id,
    )
    return None if row is None else (row["id"], _features(row))


def candidate_query(f: Features, t: Thresholds) -> tuple[str, list[Any]]:
    """The candidate lookup (SQL and parameters), separate so benchmarks can EXPLAIN it."""
    sql = f"""{_SELECT}
           WHERE disposition <> 'exact_duplicate' AND (
                 ($1::text IS NOT NULL AND canonical_url = $1)
              OR (bands && $2::bigint[] AND published_at BETWEEN $3::timestamptz - $4::interval AND $3 + $4)
              OR (title_tokens && $12::text[] AND published_at BETWEEN $3 - $6::interval AND $3 + $6
                  AND cardinality(ARRAY(SELECT unnest(title_tokens) INTERSECT SELECT unnest($5::text[]))) >= $7)
              OR (cardinality($8::text[]) >= $9 AND entities && $13::text[]
                  AND published_at BETWEEN $3 - $10::interval AND $3 + $10
                  AND cardinality(ARRAY(SELECT unnest(entities) INTERSECT SELECT unnest($8::text[]))) >= $9))
           ORDER BY published_at DESC
           LIMIT $11"""
    params = [
        f.canonical_url,
        fingerprint.bands(f.minhash),
        f.published_at,
        t.fingerprint_window,
        sorted(f.title_tokens),
        t.title_window,
        max(1, int(len(f.title_tokens) * t.title_long)),
        sorted(f.entities),
        t.min_entities,  # the overlap itself (share of the smaller set) is checked in Python
        t.entity_window,
        CANDIDATE_LIMIT,
        title_probe(f.title_tokens, t.title_long),
        [e for e in f.entities if " " in e],  # names of two or more words: rare enough to probe with
    ]
    return sql, params


def title_probe(tokens: frozenset[str], threshold: float) -> list[str]:
    """Prefix filter: a title with Jaccard ≥ `threshold` shares at least ⌈threshold·n⌉ of our n words, so
    it contains one of any n − ⌈threshold·n⌉ + 1 of them. We probe the index with that many of our
    longest words (long words are rare), instead of all of them (common words match thousands of rows)."""
    n = len(tokens)
    keep = n - math.ceil(threshold * n) + 1
    return sorted(tokens, key=lambda w: (-len(w), w))[:keep]


async def candidates(conn: asyncpg.Connection, f: Features, t: Thresholds) -> list[Candidate]:
    """Stored articles any layer could match, found through indexes and filtered in SQL before transfer."""
    sql, params = candidate_query(f, t)
    rows = await conn.fetch(sql, *params)
    return [Candidate(r["id"], r["cluster_id"], _features(r)) for r in rows]


def _fingerprints(f: Features) -> list[Any]:
    """Column values of title_tokens, bands, minhash, simhash, entities (in that order)."""
    return [
        sorted(f.title_tokens),
        fingerprint.bands(f.minhash),
        list(f.minhash),
        f.simhash,
        sorted(f.entities),
    ]


async def insert(conn: asyncpg.Connection, a: Article, f: Features, d: Decision) -> int:
    """Store a new article with its disposition; its cluster is the matched article's, else itself."""
    new_id: int = await conn.fetchval("SELECT nextval('mod_digest.articles_id_seq')")
    cluster = d.matched.cluster_id if d.matched is not None else new_id
    await conn.execute(
        """INSERT INTO mod_digest.articles (id, message_id, source_module, stream, feed_id, source_name, domain,
               title, url, canonical_url, body, word_count, published_at, date_uncertain, partial_content,
               content_hash, depth_signals, title_tokens, bands, minhash, simhash, entities, disposition, layer,
               match_score, matched_id, cluster_id, revision)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                   $21, $22, $23, $24, $25, $26, $27, $28)""",
        new_id,
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
        cluster,
        a.revision,
    )
    return new_id


async def revise(conn: asyncpg.Connection, article_id: int, a: Article, f: Features) -> None:
    """Layer 1 revision: replace the stored content in place; a unique article is flagged `revision`."""
    await conn.execute(
        """UPDATE mod_digest.articles SET title = $2, url = $3, canonical_url = $4, body = $5, word_count = $6,
               partial_content = $7, content_hash = $8, depth_signals = $9, title_tokens = $10, bands = $11,
               minhash = $12, simhash = $13, entities = $14, revision = GREATEST(revision + 1, $15),
               disposition = CASE WHEN disposition = 'unique' THEN 'revision' ELSE disposition END,
               updated_at = now()
           WHERE id = $1""",
        article_id,
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
