"""One AIServices per host, from the host's AI settings: every module's `ctx.ai` (issue #22). Configured
once, the OpenAI-compatible stand-in answers rss's context summaries and the digest's top stories; the
old `rss.*` keys still apply, with one deprecation line."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from host import ai, settings
from host.ai import OpenAIChat
from host.module import Manifest
from host.runtime import Host
from modules.digest.deliver import job
from modules.digest.intake.event import to_article
from modules.digest.intake.handler import ingest
from modules.digest.settings import TYPES
from modules.digest.store import sources
from tests.digest.test_intake import rss_event
from tests.fakeai import FakeAI
from tests.rss.test_fulltext import add_feed
from tests.rss.test_summarize import chat_requests, recent_entries
from tests.services import feedeater, feedeater_env, make_host, reset_stream

LONG_STORY = " ".join(
    f"Paragraph {n}: the Springfield council approved the light rail line, 480 million dollars, 12 kilometres."
    for n in range(90)
)  # 1,000+ words with figures: the depth a top story needs


@pytest.fixture
def fake_ai() -> Iterator[FakeAI]:
    with FakeAI() as server:
        yield server


def ai_env(fake: FakeAI, module: str = "HOST") -> dict[str, str]:
    """The AI settings pointing at the stand-in, set once in the environment of `module` (HOST or RSS)."""
    return {
        f"FEEDEATER_{module}_SUMMARIZER": "openai",
        f"FEEDEATER_{module}_EMBEDDER": "none",
        f"FEEDEATER_{module}_OPENAI_BASE_URL": fake.base_url,
        f"FEEDEATER_{module}_CHAT_MODEL": f"chat-{module.lower()}",
        f"FEEDEATER_{module}_AI_RETRIES": "0",
    }


@pytest.fixture
async def ai_host(tmp_path: Path, database_url: str, nats_url: str, fake_ai: FakeAI) -> AsyncIterator[Host]:
    await reset_stream(nats_url)
    host = make_host(tmp_path, database_url, nats_url, env=ai_env(fake_ai))
    await host.open()
    yield host
    await host.close()


async def test_one_configuration_serves_rss_summaries_and_digest_top_stories(
    ai_host: Host, fake_ai: FakeAI
) -> None:
    rss_ctx, digest_ctx = await ai_host.context("rss"), await ai_host.context("digest")
    assert rss_ctx.ai is digest_ctx.ai is ai_host.ai  # one per host
    assert isinstance(digest_ctx.ai.summarizer, OpenAIChat) and digest_ctx.ai.summarizer.model == "chat-host"

    await add_feed(ai_host, recent_entries("p", 3))
    fake_ai.chat_replies.append(
        json.dumps({"summaryShort": "Running PostgreSQL.", "summaryLong": "Notes.", "keyPoints": ["queues"]})
    )
    result = await ai_host.run_job_once("rss.updateContexts")
    assert result.status == "ok", result.error
    rss_prompts = chat_requests(fake_ai)
    assert len(rss_prompts) == 1 and "PostgreSQL" in rss_prompts[0][1]["content"]

    summary = " ".join(["word"] * 60)
    fake_ai.chat_replies.append(json.dumps({"summary": summary, "label": "Springfield rail vote"}))
    published = (datetime.now(UTC) - timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    event = rss_event(
        published=published, wordCount=1200, partialContent=False, link="https://tier1.example/rail"
    )
    event["message"]["Message"] = f"Rail line approved\n\n{LONG_STORY}"
    async with ai_host.require_pool().acquire() as conn, conn.transaction():
        await sources.set_tier(conn, "tier1.example", 1)
        await ingest(conn, to_article(event))
    built = await job.build(digest_ctx, TYPES["morning"])
    assert built.stored
    digest_prompts = chat_requests(fake_ai)[1:]
    assert len(digest_prompts) == 1 and "Title: Rail line approved" in digest_prompts[0][1]["content"]
    assert all(
        body["model"] == "chat-host" for path, body in fake_ai.requests if path.endswith("completions")
    )
    markdown = await ai_host.require_pool().fetchval(
        "SELECT markdown FROM mod_digest.digests WHERE id = $1", built.digest_id
    )
    assert summary in markdown  # the model's summary, not the extractive one


async def test_a_changed_ai_setting_reaches_every_module_at_once(ai_host: Host) -> None:
    rss_ctx, digest_ctx = await ai_host.context("rss"), await ai_host.context("digest")
    before = ai_host.ai
    ai_host.env.pop("FEEDEATER_HOST_CHAT_MODEL")  # the environment wins over a stored value
    await ai_host.require_pool().execute(
        """INSERT INTO host.settings (module, key, value) VALUES ('host', 'chat_model', '"chat-new"')"""
    )
    ai_host.started_at = datetime.now(UTC)
    await ai_host.apply_settings("host")  # what a running host does when told of the change
    assert rss_ctx.ai is digest_ctx.ai is ai_host.ai and ai_host.ai is not before
    assert isinstance(digest_ctx.ai.summarizer, OpenAIChat) and digest_ctx.ai.summarizer.model == "chat-new"


async def test_the_old_rss_keys_apply_with_one_deprecation_line(
    tmp_path: Path, database_url: str, nats_url: str, fake_ai: FakeAI, caplog: pytest.LogCaptureFixture
) -> None:
    host = make_host(tmp_path, database_url, nats_url, env=ai_env(fake_ai, "RSS"))
    await host.open(with_bus=False)
    try:
        with caplog.at_level(logging.WARNING, logger="feedeater.host"):
            digest_ctx = await host.context("digest")
            await host.context("rss")
            await host.ai_config()  # a second read does not say it again
        assert isinstance(digest_ctx.ai.summarizer, OpenAIChat)
        assert digest_ctx.ai.summarizer.model == "chat-rss"
        said = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
        assert len(said) == 1, said
        assert "rss.summarizer" in said[0] and "host.summarizer" in said[0]
    finally:
        await host.close()


def test_setting_an_old_key_works_and_says_which_key_replaces_it(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    env = feedeater_env(tmp_path / "home", database_url, nats_url)
    res = feedeater(env, "settings", "set", "rss.chat_model", "old-model")
    assert res.returncode == 0, res.stderr
    warned = [line for line in res.stderr.splitlines() if "deprecated" in line]
    assert len(warned) == 1 and "rss.chat_model: deprecated, use host.chat_model" in warned[0]
    assert "old-model" in feedeater(env, "settings", "get", "rss.chat_model").stdout


def test_the_hosts_own_value_wins_over_the_alias() -> None:
    own = {s.key: s.default for s in ai.AI_SETTINGS}
    alias = {**own, "summarizer": "openai", "chat_model": "old"}
    conf, used = ai.effective_config(
        {**own, "chat_model": "new"}, {"chat_model"}, alias, {"summarizer", "chat_model"}
    )
    assert (conf["summarizer"], conf["chat_model"], used) == ("openai", "new", ["summarizer"])
    assert ai.effective_config(own, set(), alias, set()) == (own, [])


def test_settings_set_by_the_user_are_told_from_defaults() -> None:
    manifest = Manifest("m", "1", "d", settings=ai.AI_SETTINGS[:2])  # embedder, embedding_model
    assert settings.explicit(manifest, {"embedder": "none"}, {}) == {"embedder"}
    assert settings.explicit(manifest, {}, {"FEEDEATER_M_EMBEDDING_MODEL": "x"}) == {"embedding_model"}
    assert settings.explicit(manifest, {}, {}) == frozenset()
