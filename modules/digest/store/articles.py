"""mod_digest.articles and its lookup keys: insert with the dedup decision, candidates through btree
rows (mod_digest.dedup_keys), revisions."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from modules.digest.dedup import entities, fingerprint, layers
from modules.digest.dedup.layers import Candidate, Decision, Features, Thresholds
from modules.digest.model import Article

CANDIDATE_LIMIT = 400
FEATURE_COLUMNS = """a.id, a.cluster_id, a.event_id, a.title_tokens, a.canonical_url, a.content_hash, a.minhash,
              a.simhash, a.entities, a.word_count, a.published_at, a.source_module || ':' || a.stream AS source,
              a.text_hash, a.markers, a.domain"""


def _keys_sql(bands: str, title_words: str, entity_words: str) -> str:
    """An article's lookup keys from SQL expressions for its band keys, title prefix words and multi-word
    entities. Words are hashed in SQL so the migration that backfilled the keys and every insert agree."""
    return f"""{bands}
           || ARRAY(SELECT hashtextextended('t:' || w, 0) FROM unnest({title_words}) w)
           || ARRAY(SELECT hashtextextended('e:' || e, 0) FROM unnest({entity_words}) e)"""


@dataclass(frozen=True, slots=True)
class Lookup:
    """For one article: the stored article with the same message id (layer 1), else the candidates of
    layers 2–5."""

    same_identity: tuple[int, Features] | None
    candidates: list[Candidate]


@dataclass(frozen=True, slots=True)
class Found:
    """The lookups of a delivery's articles, in order, and `seen`: the highest article id the lookup
    could see (what `insert` checks nothing was added after)."""

    lookups: list[Lookup]
    seen: int


def features_of(row: asyncpg.Record) -> Features:
    """A stored article's features (a row with the columns of FEATURE_COLUMNS)."""
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
        text_hash=row["text_hash"] or "",
        markers=frozenset(row["markers"]),
        domain=row["domain"],
    )


def candidate(row: asyncpg.Record) -> Candidate:
    return Candidate(row["id"], row["cluster_id"], features_of(row), row["event_id"])


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
    typed = entities.typed(f.entities)
    return sorted(n for n in typed if " " in n) if len(typed) >= t.min_entities else []


def lookup_keys(f: Features, t: Thresholds) -> list[Any]:
    """The parameters of _keys_sql: band keys (with the lead's key), title prefix words, multi-word
    entities. At J = 0.7 the 16 bands of 8 rows find a copy only 61 % of the time; a copy under a new
    headline usually keeps its first words, which the lead key finds whatever the bands say."""
    bands = fingerprint.bands(f.minhash) + ([fingerprint.lead_key(f.lead)] if f.lead else [])
    return [bands, title_probe(f.title_tokens, t.title_long), entity_probe(f, t)]


@dataclass(frozen=True, slots=True)
class Probe:
    """An article's features with its lookup keys (band keys, title prefix words, multi-word entities),
    computed once per article for the lookup, `would_find` and the insert."""

    features: Features
    bands: frozenset[int]
    title_words: frozenset[str]
    entity_words: frozenset[str]

    def keys(self) -> list[list[Any]]:
        """The parameters of _keys_sql."""
        return [sorted(self.bands), sorted(self.title_words), sorted(self.entity_words)]


def probe(f: Features, t: Thresholds) -> Probe:
    bands, title_words, entity_words = lookup_keys(f, t)
    return Probe(f, frozenset(bands), frozenset(title_words), frozenset(entity_words))


def placeholder(index: int) -> int:
    """The id a decision names an article of the same insert by, before it has one (negative)."""
    return -1 - index


def placeholder_index(article_id: int) -> int | None:
    """The index in its insert of the article a placeholder id names; None for a stored id."""
    return -1 - article_id if article_id < 0 else None


def would_find(new: Probe, old: Probe, t: Thresholds) -> bool:
    """Whether the candidate query would return `old` (not an exact duplicate) for `new`: its branches
    in Python, for the earlier articles of one delivery, which are not stored yet when it runs (pure)."""
    a, b = new.features, old.features

    def near(window: timedelta) -> bool:
        return abs(a.published_at - b.published_at) <= window

    if a.canonical_url is not None and a.canonical_url == b.canonical_url:
        return True
    if not new.bands.isdisjoint(old.bands) and near(t.fingerprint_window):
        return True
    if (
        not new.title_words.isdisjoint(old.title_words)
        and near(t.title_window)
        and len(a.title_tokens & b.title_tokens) >= max(1, int(len(a.title_tokens) * t.title_long))
    ):
        return True
    return (
        not new.entity_words.isdisjoint(old.entity_words)
        and near(t.entity_window)
        and len(entities.names(a.entities) & entities.names(b.entities)) >= t.min_entities
    )


def _iso(at: datetime) -> str:
    return at.isoformat()


def candidate_query(items: Sequence[tuple[uuid.UUID, Probe]], t: Thresholds) -> tuple[str, list[Any]]:
    """The one lookup of every layer for a delivery's articles (SQL and parameters), separate so
    benchmarks can EXPLAIN it. Rows carry `i`, the article's index in `items`.

    Each branch is an index probe per article with its layer's time window; title and entity hits are
    filtered by their real overlap in SQL so only plausible candidates (with their 128 minima) are
    transferred, at most CANDIDATE_LIMIT per article.

    It also takes the dedup lock (transaction-scoped: two copies arriving at once must not both be
    `unique`) and returns the highest article id of its snapshot in every row (one row of NULLs when
    there is no candidate). The snapshot was taken before the lock was granted, so a writer that held
    the lock meanwhile is not seen: `insert` finds its rows (ids above `seen`) and the caller looks
    again. Without a conflict this saves the lock's own round trip."""
    sql = f"""
        WITH locked AS MATERIALIZED (
            SELECT pg_advisory_xact_lock(hashtext('mod_digest.dedup'))::text AS lock,
                   (SELECT COALESCE(max(id), 0) FROM mod_digest.articles) AS seen
        ), x AS MATERIALIZED (
            SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS x(i int, message_id uuid, url text, bands bigint[],
                at timestamptz, title_words text[], title_tokens text[], title_min int, entity_words text[],
                entities text[])
        ), hit AS (
            SELECT x.i, a.id, 'm' AS via FROM x JOIN mod_digest.articles a ON a.message_id = x.message_id
            UNION ALL
            SELECT x.i, a.id, 'u' FROM x JOIN mod_digest.articles a ON a.canonical_url = x.url
            UNION ALL
            SELECT x.i, k.article_id, 'b' FROM x, LATERAL (
                SELECT article_id FROM mod_digest.dedup_keys
                WHERE key = ANY(x.bands) AND at BETWEEN x.at - $2::interval AND x.at + $2) k
            UNION ALL
            SELECT x.i, k.article_id, 't' FROM x, LATERAL (
                SELECT article_id FROM mod_digest.dedup_keys
                WHERE key = ANY(ARRAY(SELECT hashtextextended('t:' || w, 0) FROM unnest(x.title_words) w))
                  AND at BETWEEN x.at - $3::interval AND x.at + $3) k
            UNION ALL
            SELECT x.i, k.article_id, 'e' FROM x, LATERAL (
                SELECT article_id FROM mod_digest.dedup_keys
                WHERE key = ANY(ARRAY(SELECT hashtextextended('e:' || e, 0) FROM unnest(x.entity_words) e))
                  AND at BETWEEN x.at - $4::interval AND x.at + $4) k
        ), one AS (
            SELECT i, id, bool_or(via = 'm') AS m, bool_or(via IN ('u', 'b')) AS strong,
                   bool_or(via = 't') AS t, bool_or(via = 'e') AS e
            FROM hit GROUP BY i, id
        ), found AS (
            SELECT x.i, {FEATURE_COLUMNS}, one.m AS same_identity,
                   row_number() OVER (PARTITION BY x.i ORDER BY one.m DESC, a.published_at DESC, a.id DESC)
                       AS rank
            FROM one JOIN x ON x.i = one.i JOIN mod_digest.articles a ON a.id = one.id
            WHERE one.m OR (a.disposition <> 'exact_duplicate' AND (
                     one.strong
                  OR (one.t AND cardinality(ARRAY(SELECT unnest(a.title_tokens) INTERSECT
                                                   SELECT unnest(x.title_tokens))) >= x.title_min)
                  OR (one.e AND cardinality(ARRAY(SELECT substr(e, strpos(e, ':') + 1) FROM unnest(a.entities) e
                                                   INTERSECT SELECT unnest(x.entities))) >= $5)))
        )
        SELECT locked.seen, found.* FROM locked LEFT JOIN found ON found.rank <= $6
        ORDER BY found.i, found.same_identity DESC NULLS LAST, found.published_at DESC, found.id DESC"""
    rows = []
    for i, (message_id, p) in enumerate(items):
        f = p.features
        bands, title_words, entity_words = p.keys()
        rows.append(
            {
                "i": i,
                "message_id": str(message_id),
                "url": f.canonical_url,
                "bands": bands,
                "at": _iso(f.published_at),
                "title_words": title_words,
                "title_tokens": sorted(f.title_tokens),
                "title_min": max(1, int(len(f.title_tokens) * t.title_long)),
                "entity_words": entity_words,
                # names only (a name typed differently is one name); the overlap itself is Python's
                "entities": sorted(entities.names(f.entities)),
            }
        )
    params = [
        json.dumps(rows),
        t.fingerprint_window,
        t.title_window,
        t.entity_window,
        t.min_entities,
        CANDIDATE_LIMIT,
    ]
    return sql, params


async def lookup(conn: asyncpg.Connection, items: Sequence[tuple[uuid.UUID, Probe]], t: Thresholds) -> Found:
    """Layer 1's stored article or the other layers' candidates of each (message id, probe), in one
    round trip under the dedup lock (call inside a transaction)."""
    sql, params = candidate_query(items, t)
    rows = await conn.fetch(sql, *params)
    by_item: list[list[asyncpg.Record]] = [[] for _ in items]
    for r in rows:
        if r["i"] is not None:
            by_item[r["i"]].append(r)
    lookups = []
    for found in by_item:
        if found and found[0]["same_identity"]:
            lookups.append(Lookup((found[0]["id"], features_of(found[0])), []))
        else:
            lookups.append(Lookup(None, [candidate(r) for r in found]))
    return Found(lookups, rows[0]["seen"])


def _fingerprints(f: Features) -> list[Any]:
    """Column values of title_tokens, minhash, simhash, entities, text_hash, markers (in that order)."""
    return [
        sorted(f.title_tokens),
        list(f.minhash),
        f.simhash,
        sorted(f.entities),
        f.text_hash,
        sorted(f.markers),
    ]


def details(f: Features, d: Decision) -> list[dict[str, Any]]:
    """What a decision rests on, kept with it: every layer's check of the article against its match."""
    if d.matched is None:
        return []
    return [asdict(c) for c in layers.explain(f, d.matched.features)]


def _ref(article_id: int | None) -> tuple[int | None, int | None]:
    """(stored id, None) or (None, index in the insert) for a match or cluster id (see `placeholder`)."""
    if article_id is None:
        return None, None
    index = placeholder_index(article_id)
    return (article_id, None) if index is None else (None, index)


def _row(i: int, a: Article, p: Probe, d: Decision) -> dict[str, Any]:
    """One article of `insert` as JSON; an exact duplicate gets no keys: nothing should match it."""
    f = layers.story_features(p.features, d)
    bands, title_words, entity_words = p.keys() if d.disposition != "exact_duplicate" else ([], [], [])
    title_tokens, minhash, simhash, entity_names, text_hash, marks = _fingerprints(f)
    cluster, event = layers.groups(d, placeholder(i))
    matched_id, matched_i = _ref(d.matched.id if d.matched is not None else None)
    cluster_id, cluster_i = _ref(cluster)
    event_id, event_i = _ref(event)
    return {
        "i": i,
        "message_id": str(a.message_id),
        "source_module": a.source_module,
        "stream": a.stream,
        "feed_id": a.feed_id,
        "source_name": a.source_name,
        "domain": a.domain,
        "title": a.title,
        "url": a.url,
        "guid": a.guid,
        "canonical_url": f.canonical_url,
        "body": a.body,
        "word_count": a.word_count,
        "published_at": _iso(a.published_at),
        "date_uncertain": a.date_uncertain,
        "partial_content": a.partial_content,
        "content_hash": a.content_hash,
        "depth_signals": list(a.depth_signals),
        "title_tokens": title_tokens,
        "minhash": minhash,
        "simhash": simhash,
        "entities": entity_names,
        "text_hash": text_hash,
        "markers": marks,
        "disposition": d.disposition,
        "layer": d.layer,
        "match_score": d.score,
        "candidates": d.candidates,
        "details": json.dumps(details(f, d)),
        "matched_id": matched_id,
        "matched_i": matched_i,
        "cluster_id": cluster_id,
        "cluster_i": cluster_i,
        "event_id": event_id,
        "event_i": event_i,
        "revision": a.revision,
        "bands": bands,
        "title_words": title_words,
        "entity_words": entity_words,
    }


async def insert(
    conn: asyncpg.Connection,
    batch: Sequence[tuple[Article, Probe, Decision]],
    seen: int | None,
) -> bool:
    """Store new articles with their dispositions, their first decision (mod_digest.decisions) and their
    lookup keys (one statement); story cluster and event come from `layers.groups`. Matches, clusters and
    events may name articles of the same insert (`placeholder`).

    With `seen` (Found.seen), nothing is stored and False is returned when an article above it exists:
    another writer committed after the lookup's snapshot, so the decisions may be stale."""
    rows = [_row(i, a, p, d) for i, (a, p, d) in enumerate(batch)]
    stored: int = await conn.fetchval(
        f"""WITH x AS MATERIALIZED (
               SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS x(i int, message_id uuid, source_module text,
                   stream text, feed_id bigint, source_name text, domain text, title text, url text, guid text,
                   canonical_url text, body text, word_count int, published_at timestamptz,
                   date_uncertain bool, partial_content bool, content_hash text, depth_signals text[],
                   title_tokens text[], minhash bigint[], simhash bigint, entities text[], text_hash text,
                   markers text[], disposition text, layer text, match_score real, candidates int,
                   details text, matched_id bigint, matched_i int, cluster_id bigint, cluster_i int,
                   event_id bigint, event_i int, revision int, bands bigint[], title_words text[],
                   entity_words text[])
           ),
           n AS MATERIALIZED (
               SELECT i, nextval('mod_digest.articles_id_seq') AS id FROM (SELECT i FROM x ORDER BY i) o
               WHERE $2::bigint IS NULL OR NOT EXISTS (SELECT FROM mod_digest.articles WHERE id > $2)
           ),
           r AS MATERIALIZED (
               SELECT x.*, n.id, COALESCE(x.matched_id, m.id) AS matched, COALESCE(x.cluster_id, c.id) AS cluster,
                      COALESCE(x.event_id, e.id) AS event
               FROM x JOIN n ON n.i = x.i LEFT JOIN n m ON m.i = x.matched_i LEFT JOIN n c ON c.i = x.cluster_i
                    LEFT JOIN n e ON e.i = x.event_i
           ),
           a AS (
               INSERT INTO mod_digest.articles (id, message_id, source_module, stream, feed_id, source_name,
                   domain, title, url, guid, canonical_url, body, word_count, published_at, date_uncertain,
                   partial_content, content_hash, depth_signals, title_tokens, minhash, simhash, entities,
                   text_hash, markers, disposition, layer, match_score, matched_id, cluster_id, event_id,
                   revision)
               SELECT id, message_id, source_module, stream, feed_id, source_name, domain, title, url, guid,
                      canonical_url, body, word_count, published_at, date_uncertain, partial_content,
                      content_hash, depth_signals, title_tokens, minhash, simhash, entities, text_hash, markers,
                      disposition, layer, match_score, matched, cluster, event, revision
               FROM r
               RETURNING id
           ),
           h AS (
               INSERT INTO mod_digest.decisions (article_id, revision, disposition, layer, score, matched_id,
                   cluster_id, event_id, candidates, details)
               SELECT id, revision, disposition, layer, match_score, matched, cluster, event, candidates,
                      details::jsonb
               FROM r
           ),
           k AS (
               INSERT INTO mod_digest.dedup_keys (key, at, article_id)
               SELECT DISTINCT key, r.published_at, r.id
               FROM r, unnest({_keys_sql("r.bands", "r.title_words", "r.entity_words")}) key
           )
           SELECT count(*) FROM a""",
        json.dumps(rows),
        seen,
    )
    return stored > 0


async def revise(
    conn: asyncpg.Connection, article_id: int, old: Features, a: Article, f: Features, t: Thresholds
) -> None:
    """Layer 1 revision: replace the stored content and lookup keys in place (a unique article is
    flagged `revision`) and add the decision to the article's history; its story and event stay."""
    await conn.execute(
        f"""WITH gone AS (
               DELETE FROM mod_digest.dedup_keys
               WHERE article_id = $4 AND key = ANY({_keys_sql("$5::bigint[]", "$6::text[]", "$7::text[]")})
           ),
           u AS (
               UPDATE mod_digest.articles SET title = $8, url = $9, canonical_url = $10, body = $11,
                   word_count = $12, partial_content = $13, content_hash = $14, depth_signals = $15,
                   title_tokens = $16, minhash = $17, simhash = $18, entities = $19, text_hash = $20,
                   markers = $21, revision = GREATEST(revision + 1, $22),
                   disposition = CASE WHEN disposition = 'unique' THEN 'revision' ELSE disposition END,
                   guid = COALESCE($23, guid), updated_at = now()
               WHERE id = $4
               RETURNING id, published_at, disposition, revision, cluster_id, event_id
           ),
           h AS (
               INSERT INTO mod_digest.decisions (article_id, revision, disposition, layer, score, cluster_id,
                   event_id)
               SELECT id, revision, 'revision', 'guid', 1.0, cluster_id, event_id FROM u
           )
           INSERT INTO mod_digest.dedup_keys (key, at, article_id)
           SELECT DISTINCT key, u.published_at, u.id
           FROM u, unnest({_keys_sql("$1::bigint[]", "$2::text[]", "$3::text[]")}) key
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
        a.guid,
    )


async def window(conn: asyncpg.Connection, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Every article published in [start, end) with its source's tier and its feed's health."""
    rows = await conn.fetch(
        """SELECT a.id, a.message_id, a.source_module, a.stream, a.feed_id, a.source_name, a.domain, a.title,
                  a.url, a.canonical_url, a.body, a.word_count, a.published_at, a.date_uncertain,
                  a.partial_content, a.depth_signals, a.entities, a.disposition, a.layer, a.match_score,
                  a.matched_id, a.cluster_id, a.event_id, a.revision, s.tier
           FROM mod_digest.articles a
           LEFT JOIN mod_digest.sources s ON s.domain = a.domain
           WHERE a.published_at >= $1 AND a.published_at < $2""",
        start,
        end,
    )
    return [dict(r) for r in rows]
