"""Context summaries: the pure decisions (cadence, prompt, reply validation, extractive centrality), then the
updateContexts job end to end — real PostgreSQL and JetStream, the OpenAI-compatible stand-in server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from host import contexts, outbox
from host.ai import AIServices, build_ai
from host.events import utf16_len
from host.jobs import run_job
from host.module import ModuleContext
from host.runtime import Host
from modules.rss import MANIFEST
from modules.rss import settings as rss_settings
from modules.rss.enrich import summarize
from modules.rss.enrich.summarize import ReplyError, Summary
from modules.rss.ingest import publish
from modules.rss.store.summaries import WindowEntry
from tests.fakeai import FakeAI
from tests.rss.test_fulltext import add_entries, add_feed, make_entry, module_ctx
from tests.services import BusReader

NOW = datetime(2025, 3, 12, 12, 0, tzinfo=UTC)
VALID = json.dumps({
    "summaryShort": "Database operations: queues in Postgres, vacuum tuning",
    "summaryLong": "The feed covers running PostgreSQL as a job queue. It also discusses vacuum tuning.",
    "keyPoints": ["Queues in PostgreSQL", "Vacuum tuning", "Queues in PostgreSQL", "  "],
})  # fmt: skip


def window_entry(i: int, title: str, text: str = "", *, days_ago: float = 0) -> WindowEntry:
    return WindowEntry(i, uuid.uuid4(), title, NOW - timedelta(days=days_ago), text)


class ScriptedSummarizer:
    """The Summarizer protocol with canned replies, for the pure ask/repair tests."""

    model = "scripted"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    async def complete_json(self, system: str, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0)


# -- cadence -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("per_day", "cadence"), [(25.0, "high"), (10.0, "high"), (9.9, "normal"), (1.0, "normal"), (0.9, "low")]
)
def test_cadence_by_volume(per_day: float, cadence: str) -> None:
    assert summarize.cadence_of(per_day) == cadence


def _decide(new: int, per_day: float, last: datetime | None) -> summarize.Due:
    return summarize.decide(
        new_entries=new,
        entries_per_day=per_day,
        last_summarized_at=last,
        now=NOW,
        normal_interval=timedelta(hours=3),
    )


def test_no_new_entries_never_resummarizes() -> None:
    for per_day in (50.0, 5.0, 0.1):
        assert not _decide(0, per_day, None).due
        assert not _decide(0, per_day, NOW - timedelta(days=30)).due


def test_cadence_decides_when_new_entries_are_summarized() -> None:
    just_now = NOW - timedelta(minutes=30)
    assert _decide(3, 5.0, None).due and _decide(1, 40.0, None).due  # never summarized: at once
    assert _decide(1, 40.0, just_now).due  # high volume: every 30 min
    busy = _decide(1, 40.0, NOW - timedelta(minutes=10))
    assert not busy.due and busy.reason == "high volume, next summary in 20 min"
    assert _decide(1, 0.2, NOW - timedelta(minutes=5)).due  # low volume: on each new entry
    waiting = _decide(4, 5.0, just_now)
    assert not waiting.due and waiting.cadence == "normal" and "150 min" in waiting.reason
    assert _decide(4, 5.0, NOW - timedelta(hours=3)).due


# -- prompt --------------------------------------------------------------------------------------
def test_excerpt_is_one_line_cut_at_a_word() -> None:
    assert summarize.excerpt("one  two\n\nthree", 100) == "one two three"
    assert summarize.excerpt("alpha beta gamma delta", 13) == "alpha beta…"
    assert summarize.excerpt("Donaudampfschifffahrt", 8) == "Donaudam…"


def test_prompt_lists_dated_entries_newest_first_with_the_previous_summary() -> None:
    entries = [
        window_entry(2, "Vacuum tuning", "Autovacuum defaults are tuned for tables that grow.", days_ago=1),
        window_entry(1, "Queues in Postgres", "SKIP LOCKED lets workers share a table.", days_ago=3),
    ]
    prompt = summarize.build_prompt(
        rss_settings.DEFAULT_PROMPT_TEMPLATE,
        feed_title="Pragmatic Backend",
        feed_description="",
        previous_summary="It was about backups.",
        entries=entries,
        excerpt_chars=300,
        budget_chars=10_000,
    )
    assert "Feed: Pragmatic Backend" in prompt and "Description: No description" in prompt
    assert "Previous summary: It was about backups." in prompt
    assert "Recent entries (2, newest first):" in prompt
    assert prompt.index("- [2025-03-11] Vacuum tuning\n  Autovacuum defaults") < prompt.index(
        "- [2025-03-09] Queues in Postgres\n  SKIP LOCKED"
    )


def test_prompt_template_is_a_setting_and_leaves_other_dollars_and_braces_alone() -> None:
    prompt = summarize.build_prompt(
        'Summarize $feed_title for $$5 as {"json": true}; $unknown stays.\n$entries',
        feed_title="F",
        feed_description="",
        previous_summary=None,
        entries=[window_entry(1, "Only")],
        excerpt_chars=100,
        budget_chars=10_000,
    )
    assert prompt == 'Summarize F for $5 as {"json": true}; $unknown stays.\n- [2025-03-12] Only'


def test_prompt_budget_drops_old_excerpts_first_then_old_entries() -> None:
    entries = [window_entry(i, f"Title {i}", "word " * 60, days_ago=i) for i in range(10)]

    def build(budget: int) -> str:
        return summarize.build_prompt(
            "$entries",
            feed_title="",
            feed_description="",
            previous_summary=None,
            entries=entries,
            excerpt_chars=200,
            budget_chars=budget,
        )

    full = build(100_000)
    assert full.count("word") > 300
    trimmed = build(len(full) - 150)
    assert len(trimmed) <= len(full) - 150
    assert "Title 9" in trimmed and trimmed.rstrip().endswith("Title 9")  # the oldest lost its excerpt
    assert "Title 0\n  word" in trimmed  # the newest kept its excerpt
    titles_only = build(200)
    assert len(titles_only) <= 200 and "Title 0" in titles_only and "Title 9" not in titles_only
    assert build(5) == "- [2025-03-12] Title 0"  # one entry always stays


# -- the reply -----------------------------------------------------------------------------------
def test_a_valid_reply_is_normalized() -> None:
    got = summarize.parse_reply(VALID)
    assert got.short == "Database operations: queues in Postgres, vacuum tuning"
    assert got.long.startswith("The feed covers")
    assert got.key_points == ("Queues in PostgreSQL", "Vacuum tuning")  # deduplicated, blanks dropped


def test_fences_and_chatter_around_the_object_are_tolerated() -> None:
    assert summarize.parse_reply(f"```json\n{VALID}\n```").short.startswith("Database")
    assert summarize.parse_reply(f"Here you go:\n{VALID}\nHope this helps!").long.startswith("The feed")


def test_summary_short_is_cut_to_128_utf16_units() -> None:
    reply = json.dumps({"summaryShort": "🚀" * 100, "summaryLong": "Long enough.", "keyPoints": []})
    short = summarize.parse_reply(reply).short
    assert utf16_len(short) <= 128 and short.endswith("…")


def test_key_points_are_optional_and_capped() -> None:
    assert summarize.parse_reply('{"summaryShort": "s", "summaryLong": "l"}').key_points == ()
    many = json.dumps({"summaryShort": "s", "summaryLong": "l", "keyPoints": [f"p{i}" for i in range(20)]})
    assert len(summarize.parse_reply(many).key_points) == summarize.KEY_POINTS_MAX


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("The feed is about databases.", "no JSON object"),
        ('{"summaryShort": "s", "summaryLong": }', "not valid JSON"),
        ('{"summaryShort": "s"}', "summaryLong must be a non-empty string"),
        ('{"summaryShort": "  ", "summaryLong": "l"}', "summaryShort must be a non-empty string"),
        ('{"summaryShort": "s", "summaryLong": "l", "keyPoints": "one, two"}', "keyPoints must be an array"),
        ('{"summaryShort": "s", "summaryLong": "l", "keyPoints": [1, 2]}', "keyPoints must be an array"),
        (json.dumps({"summaryShort": "s", "summaryLong": "x " * 1000}), "write 2-3 sentences"),
    ],
)
def test_invalid_replies_say_what_is_wrong(reply: str, error: str) -> None:
    with pytest.raises(ReplyError, match=error):
        summarize.parse_reply(reply)


def test_repair_prompt_quotes_the_reply_and_the_error() -> None:
    repaired = summarize.repair_prompt("ORIGINAL", "x" * 5000, "the reply is not valid JSON")
    assert repaired.startswith(
        "ORIGINAL\n\nYour previous reply could not be used: the reply is not valid JSON."
    )
    assert (
        "x" * summarize.REPLY_ECHO_MAX + "…" in repaired
        and "x" * (summarize.REPLY_ECHO_MAX + 1) not in repaired
    )
    assert repaired.rstrip().endswith('"keyPoints": [string, ...]}.')


async def test_ask_llm_repairs_once() -> None:
    good = ScriptedSummarizer(VALID)
    assert (await summarize.ask_llm(good, "sys", "P"))[1] is False and good.prompts == ["P"]

    fixed = ScriptedSummarizer("not json at all", VALID)
    summary, repaired = await summarize.ask_llm(fixed, "sys", "P")
    assert repaired and summary.short.startswith("Database")
    assert "no JSON object" in fixed.prompts[1] and "not json at all" in fixed.prompts[1]

    hopeless = ScriptedSummarizer("nope", '{"summaryShort": 3}', VALID)
    with pytest.raises(ReplyError, match="summaryShort"):
        await summarize.ask_llm(hopeless, "sys", "P")
    assert len(hopeless.prompts) == 2  # exactly one repair attempt


# -- extractive summary --------------------------------------------------------------------------
def test_tokens_work_across_scripts() -> None:
    keys = [
        k for k, _ in summarize.tokens("Die Wärmepumpe und der Altbau: 2025 war's ein Test, 東京都の天気")
    ]
    assert keys == ["wärmepumpe", "altbau", "war's", "test", "東京", "京都", "都の", "の天", "天気"]
    assert [form for _, form in summarize.tokens("Москва ПРИНЯЛА решение")] == [
        "Москва",
        "ПРИНЯЛА",
        "решение",
    ]
    assert summarize.tokens("the and of 42 a ok") == []


def test_lead_sentence_skips_a_repeated_title_and_cuts_long_ones() -> None:
    assert summarize.lead_sentence("Rates rise", "Rates rise. The central bank moved again. More.") == (
        "The central bank moved again."
    )
    assert summarize.lead_sentence("T", "") == ""
    assert len(summarize.lead_sentence("T", "word " * 200)) <= summarize.LEAD_CHARS + 1


def test_centrality_picks_what_the_window_keeps_coming_back_to() -> None:
    entries = [
        window_entry(1, "Conference notes", "Talks and hallway track.", days_ago=0),
        window_entry(
            2, "Why we moved our queue to PostgreSQL", "Queue rows and SKIP LOCKED workers.", days_ago=1
        ),
        window_entry(3, "A queue is just a table", "Queue workers claim rows with SKIP LOCKED.", days_ago=2),
        window_entry(4, "Vacuum tuning for busy queue tables", "Queue tables need autovacuum.", days_ago=3),
        window_entry(5, "A queue is just a table", "Queue workers claim rows with SKIP LOCKED.", days_ago=4),
    ]
    picked = summarize.representative(entries, history=[])
    titles = [entries[i].title for i in picked]
    assert titles[0] in {"A queue is just a table", "Why we moved our queue to PostgreSQL"}
    assert titles.count("A queue is just a table") == 1  # duplicates are left out
    assert titles[-1] == "Conference notes"  # the outlier comes last


def test_extractive_summary_reads_as_sentences_about_the_feed() -> None:
    entries = [
        window_entry(
            1, "Vacuum tuning for busy queue tables", "Autovacuum keeps queue tables small.", days_ago=0
        ),
        window_entry(
            2, "Why we moved our queue to PostgreSQL", "Queue rows are claimed with SKIP LOCKED.", days_ago=2
        ),
        window_entry(
            3, "A queue is just a table", "Queue workers claim rows. Then they delete them.", days_ago=4
        ),
        window_entry(4, "Conference notes", "Talks and hallway track.", days_ago=5),
    ]
    got = summarize.extractive_summary("Pragmatic Backend", entries, history=[])
    lead = got.key_points[0]
    second = got.key_points[1]
    assert got.short == f"Lately, Pragmatic Backend covers “{lead}” and “{second}”."
    assert utf16_len(got.short) <= 128
    assert got.long.startswith(f"4 entries (2025-03-07 to 2025-03-12). Mostly about “{lead}”: ")
    assert "Also: “" in got.long and got.long.endswith(".")
    assert "queue" in lead.lower() and got.key_points[-1] == "Conference notes"


def test_the_short_summary_is_one_sentence_that_fits() -> None:
    long_title = "A very long headline " * 5
    assert summarize.short_sentence("Feed", ["Short one", long_title]) == "Lately, Feed covers “Short one”."
    assert summarize.short_sentence("", ["Solo"]) == "Lately, this feed covers “Solo”."
    cut = summarize.short_sentence("Feed", [long_title * 2])
    assert cut.startswith("Lately, Feed covers “A very long") and cut.endswith("…")
    assert utf16_len(cut) == 128


def test_extractive_summary_of_one_untitled_entry_without_words() -> None:
    got = summarize.extractive_summary("", [window_entry(1, "", "42 17")], history=[])
    assert got == Summary("Recent entries", "1 entry (2025-03-12).", ())


# -- the job -------------------------------------------------------------------------------------
@pytest.fixture
def fake_ai() -> Iterator[FakeAI]:
    with FakeAI() as server:
        yield server


@pytest.fixture
async def llm(fake_ai: FakeAI) -> AsyncIterator[AIServices]:
    """An OpenAI-compatible chat summarizer and embedder pointed at the stand-in server, without retries."""
    services = build_ai({
        "summarizer": "openai", "embedder": "openai", "openai_base_url": fake_ai.base_url,
        "chat_model": "fake-chat", "embedding_model": "fake-embed", "ai_retries": 0, "ai_timeout_seconds": 5,
    })  # fmt: skip
    yield services
    await services.aclose()


async def update_contexts(ctx: ModuleContext, host: Host) -> dict[str, Any]:
    """Run the job, then relay the outbox to JetStream."""
    result = await run_job(ctx, MANIFEST.job("updateContexts"), trigger="manual")
    assert result.status == "ok", result.error
    assert host.js is not None
    await outbox.Relay(host.require_pool(), host.js).drain_all()
    return dict(result.metrics)


def chat_requests(fake_ai: FakeAI) -> list[list[dict[str, str]]]:
    return [body["messages"] for path, body in fake_ai.requests if path == "/v1/chat/completions"]


def recent_entries(prefix: str, count: int, *, every_hours: float = 24) -> list[Any]:
    now = datetime.now(UTC)
    topics = ["PostgreSQL queues", "Vacuum tuning", "Backups and restores", "Replication lag", "Index bloat"]
    return [
        make_entry(
            f"{prefix}{i}",
            title=f"{topics[i % len(topics)]} ({prefix}{i})",
            text=f"Notes on {topics[i % len(topics)].lower()} from running PostgreSQL in production.",
            published=now - timedelta(hours=1 + every_hours * i),
        )
        for i in range(count)
    ]


async def test_round_trip_entries_to_context_on_the_bus(
    host: Host, bus: BusReader, fake_ai: FakeAI, llm: AIServices, tmp_path: Path
) -> None:
    feed = await add_feed(host, recent_entries("e", 5), title="Pragmatic Backend")
    fake_ai.chat_replies.append(VALID)
    ctx = await module_ctx(host, ai=llm)
    metrics = await update_contexts(ctx, host)
    assert metrics["summarized"] == 1 and metrics["llm"] == 1 and metrics.get("fallback", 0) == 0

    events = await bus.all("feedeater.rss.contextUpdated", expect=1)
    assert len(events) == 1
    event = events[0]
    newest = publish.message_id(feed.id, "e0")  # published most recently
    assert event["type"] == "ContextUpdated" and event["messageId"] == str(newest)
    context = event["context"]
    assert context["ownerModule"] == "rss" and context["sourceKey"] == f"feed:{feed.id}"
    assert context["summaryShort"] == "Database operations: queues in Postgres, vacuum tuning"
    assert context["keyPoints"] == ["Queues in PostgreSQL", "Vacuum tuning"]
    assert len(context["embedding"]) == fake_ai.dims
    assert fake_ai.embedded_inputs() == [context["summaryLong"]]

    system, user = chat_requests(fake_ai)[0]
    assert system["content"] == rss_settings.DEFAULT_SYSTEM_PROMPT
    assert "Feed: Pragmatic Backend" in user["content"] and "Previous summary: none" in user["content"]
    assert user["content"].index("(e0)") < user["content"].index("(e4)")

    async with host.require_pool().acquire() as conn:
        stored = await contexts.get(conn, "rss", f"feed:{feed.id}")
    assert stored is not None and stored["message_id"] == newest and stored["version"] == 1
    assert stored["meta"]["method"] == "llm" and stored["meta"]["model"] == "fake-chat"
    assert stored["meta"]["entries"] == 5 and stored["meta"]["cadence"] == "low"
    assert stored["message_count"] == 5  # linked from each message's contextRef

    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_")}
    env |= {"FEEDEATER_HOME": str(tmp_path), "FEEDEATER_DATABASE_URL": host.config.database_url or ""}
    cli = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "host.cli", "contexts", "show", f"rss:feed:{feed.id}", "--json"),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(cli.communicate(), timeout=60)
    assert cli.returncode == 0, err.decode()
    assert json.loads(out)["summary_short"] == context["summaryShort"]

    # Nothing new: not summarized again, nothing published.
    metrics = await update_contexts(ctx, host)
    assert metrics.get("summarized", 0) == 0
    assert len(chat_requests(fake_ai)) == 1
    assert len(await bus.all("feedeater.rss.contextUpdated", expect=2, timeout=1)) == 1

    # A new entry on a low-volume feed: summarized again, with the previous summary in the prompt.
    async with host.require_pool().acquire() as conn:
        await add_entries(conn, feed, [make_entry("late", title="Logical replication slots")])
    fake_ai.chat_replies.append(VALID)
    assert (await update_contexts(ctx, host))["summarized"] == 1
    second = (await bus.all("feedeater.rss.contextUpdated", expect=2))[-1]
    assert second["messageId"] == str(publish.message_id(feed.id, "late"))
    assert second["_msg_id"] != event["_msg_id"]  # a new version is a new event
    prompt = chat_requests(fake_ai)[1][1]["content"]
    assert "Previous summary: The feed covers running PostgreSQL" in prompt
    assert prompt.index("Logical replication slots") < prompt.index("(e0)")


async def test_non_json_reply_is_repaired_and_articles_feed_the_prompt(
    host: Host, fake_ai: FakeAI, llm: AIServices
) -> None:
    feed = await add_feed(host, recent_entries("r", 3))
    await host.require_pool().execute(
        """INSERT INTO mod_rss.entry_fulltext (entry_id, link, status, full_text, next_attempt_at)
           SELECT id, 'http://x.test/a', 'done', 'Extracted article about write-ahead log archiving.', NULL
           FROM mod_rss.entries WHERE guid = 'r1'"""
    )
    fake_ai.chat_replies.extend(["Sure! This feed is about PostgreSQL operations.", VALID])
    ctx = await module_ctx(host, ai=llm)
    metrics = await update_contexts(ctx, host)
    assert metrics["llm"] == 1 and metrics["repaired"] == 1
    first, repair = chat_requests(fake_ai)
    assert "Extracted article about write-ahead log archiving." in first[1]["content"]
    assert "could not be used: the reply contains no JSON object" in repair[1]["content"]
    assert "Sure! This feed is about PostgreSQL operations." in repair[1]["content"]
    async with host.require_pool().acquire() as conn:
        stored = await contexts.get(conn, "rss", f"feed:{feed.id}")
    assert stored is not None and stored["meta"]["repaired"] is True and stored["meta"]["method"] == "llm"


async def test_llm_down_falls_back_to_the_extractive_summary(
    host: Host, bus: BusReader, fake_ai: FakeAI, llm: AIServices
) -> None:
    feed = await add_feed(host, recent_entries("d", 4), title="Pragmatic Backend")
    fake_ai.fail(500)  # chat and embeddings both down
    metrics = await update_contexts(await module_ctx(host, ai=llm), host)
    assert metrics["summarized"] == 1 and metrics["extractive"] == 1 and metrics["fallback"] == 1
    [event] = await bus.all("feedeater.rss.contextUpdated", expect=1)
    assert "embedding" not in event["context"]  # a failing embedder does not block the context
    assert event["context"]["summaryShort"].startswith("Lately, Pragmatic Backend covers “")
    assert event["messageId"] == str(publish.message_id(feed.id, "d0"))
    async with host.require_pool().acquire() as conn:
        stored = await contexts.get(conn, "rss", f"feed:{feed.id}")
    assert stored is not None
    assert stored["meta"]["method"] == "extractive" and stored["meta"]["model"] is None
    assert stored["meta"]["fallbackReason"].startswith("summarizer failed: ProviderError")


async def test_a_second_invalid_reply_falls_back_cleanly(
    host: Host, fake_ai: FakeAI, llm: AIServices
) -> None:
    feed = await add_feed(host, recent_entries("i", 2))
    fake_ai.chat_replies.extend(["{not json", '{"summaryShort": "only this"}'])
    metrics = await update_contexts(await module_ctx(host, ai=llm), host)
    assert metrics["extractive"] == 1 and metrics["fallback"] == 1 and len(chat_requests(fake_ai)) == 2
    async with host.require_pool().acquire() as conn:
        stored = await contexts.get(conn, "rss", f"feed:{feed.id}")
    assert (
        stored is not None
        and "invalid reply after one repair: summaryLong" in stored["meta"]["fallbackReason"]
    )


async def test_without_a_summarizer_the_summary_is_extractive(host: Host) -> None:
    feed = await add_feed(host, recent_entries("x", 3))
    ctx = await module_ctx(host, summarizer="extractive")
    assert (await run_job(ctx, MANIFEST.job("updateContexts"), trigger="manual")).metrics["extractive"] == 1
    async with host.require_pool().acquire() as conn:
        stored = await contexts.get(conn, "rss", f"feed:{feed.id}")
    assert stored is not None and stored["meta"]["method"] == "extractive"
    assert stored["meta"]["fallbackReason"] is None  # extractive by choice, not a fallback
    disabled = await run_job(
        await module_ctx(host, summarizer="none"), MANIFEST.job("updateContexts"), trigger="manual"
    )
    assert disabled.metrics == {"disabled": True}


async def test_two_runs_at_once_summarize_each_feed_once(host: Host) -> None:
    feeds = [
        await add_feed(host, recent_entries(f"f{n}-", 2), url=f"http://feeds.test/{n}") for n in range(6)
    ]
    ctx_a, ctx_b = await module_ctx(host), await module_ctx(host)
    a, b = await asyncio.gather(
        run_job(ctx_a, MANIFEST.job("updateContexts"), trigger="manual"),
        run_job(ctx_b, MANIFEST.job("updateContexts"), trigger="manual"),
    )
    assert a.metrics.get("summarized", 0) + b.metrics.get("summarized", 0) == len(feeds)
    versions = await host.require_pool().fetch("SELECT version FROM host.contexts")
    assert sorted(r["version"] for r in versions) == [1] * len(feeds)
