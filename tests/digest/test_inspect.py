"""Decisions you can read: `digest article|cluster|explain` over articles the real intake stored (a
revision keeps the first decision in the history), and the console's cluster page from a digest item."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from host.runtime import Host
from modules.digest.intake.handler import ingest_many
from modules.digest.model import Article
from modules.digest.store import inspect
from tests.services import feedeater, feedeater_env

T0 = datetime.now(UTC) - timedelta(hours=2)
STORY = (
    "Springfield approved a light rail line on Tuesday after a long debate. Mayor Jane Alvarez said works "
    "start in March and the line opens in 2030. The council voted nine to two; the Springfield Transit "
    "Authority will run the trains every ten minutes, and the state of Illinois pays half of the cost. "
)


def article(n: int, title: str, body: str, site: str, *, hours: float = 0) -> Article:
    return Article(
        message_id=uuid.UUID(int=n), source_module="rss", stream=site, feed_id=None, source_name=site,
        domain=site, title=title, url=f"https://{site}/{n}", body=body, word_count=len(body.split()),
        published_at=T0 + timedelta(hours=hours), date_uncertain=False, partial_content=False,
        content_hash=f"h{n}", depth_signals=(), revision=1, updated=False, guid=f"guid-{n}",
    )  # fmt: skip


async def stored(host: Host) -> dict[str, int]:
    """The original, an exact copy elsewhere, a same-event report, then a revision of the original."""
    original = article(1, "Springfield approves light rail line", STORY * 2, "wire.example")
    copy = article(2, original.title, original.body, "copies.example", hours=1)
    coverage = article(3, "Alvarez defends the rail plan",
                       "Mayor Jane Alvarez of Springfield told the Springfield Transit Authority board and "
                       "Illinois lawmakers that the trains would pay off, a day after the council vote. "
                       "Critics at the Illinois capitol in Springfield were unconvinced. " * 2,
                       "daily.example", hours=2)  # fmt: skip
    revised = replace(original, body=original.body + " Updated with the vote count.", content_hash="h1b",
                      revision=2, updated=True)  # fmt: skip
    async with host.require_pool().acquire() as conn, conn.transaction():
        decisions = await ingest_many(conn, [original, copy, coverage])
        assert [d.disposition for d in decisions] == ["unique", "exact_duplicate", "same_event"]
    async with host.require_pool().acquire() as conn, conn.transaction():
        assert [d.disposition for d in await ingest_many(conn, [revised])] == ["revision"]
        ids = {
            r["message_id"].int: r["id"]
            for r in await conn.fetch("SELECT message_id, id FROM mod_digest.articles")
        }
    return {"original": ids[1], "copy": ids[2], "coverage": ids[3]}


async def test_article_cluster_and_explain_show_the_decisions(host: Host, tmp_path: Path, database_url: str,
                                                               nats_url: str) -> None:  # fmt: skip
    ids = await stored(host)
    async with host.require_pool().acquire() as conn:
        original = await inspect.article(conn, await inspect.resolve(conn, str(uuid.UUID(int=1))))
        copy = await inspect.article(conn, ids["copy"])
        cluster = await inspect.cluster(conn, ids["copy"])  # an article id leads to its cluster
    assert original["guid"] == "guid-1" and original["url"] == "https://wire.example/1"
    # The revision is added to the history; the first decision is kept.
    assert [(h["disposition"], h["revision"]) for h in original["history"]] == [
        ("unique", 1),
        ("revision", 2),
    ]
    assert (copy["disposition"], copy["layer"], copy["matched"]["id"]) == (
        "exact_duplicate",
        "content",
        ids["original"],
    )
    assert {c["layer"]: c["passed"] for c in copy["details"]}["content"] is True
    assert copy["candidates"] >= 1 and copy["cluster_size"] == 2
    # The same-event report is a story of its own, linked to the original's event.
    assert [a["id"] for a in cluster["articles"]] == [ids["original"], ids["copy"]]
    assert [s["id"] for s in cluster["event_stories"]] == [ids["coverage"]]
    assert [r["id"] for r in original["event_links"]] == [ids["coverage"]]

    env = feedeater_env(tmp_path, database_url, nats_url)
    shown = feedeater(env, "digest", "article", str(ids["copy"]))
    assert shown.returncode == 0, shown.stderr
    assert "exact_duplicate by layer content" in shown.stdout and f"cluster {ids['original']}" in shown.stdout
    assert "✓ content" in shown.stdout
    listed = json.loads(feedeater(env, "digest", "cluster", str(ids["original"]), "--json").stdout)
    assert listed["representative"] == ids["original"] and len(listed["articles"]) == 2
    explained = feedeater(env, "digest", "explain", str(ids["original"]), str(ids["coverage"]))
    assert "same story cluster: no · same event: yes" in explained.stdout
    assert "✓ entities" in explained.stdout and "✗ fingerprint" in explained.stdout
    missing = feedeater(env, "digest", "article", "not-an-id")
    assert missing.returncode == 2 and "'not-an-id' is not an article id or a message id" in missing.stderr


async def test_console_reaches_a_story_cluster_from_a_digest_item(host: Host) -> None:
    import re

    import httpx
    from fastapi import FastAPI

    from host.console import app as console_app
    from modules.digest.deliver import job
    from modules.digest.settings import TYPES

    ids = await stored(host)
    ctx = await host.context("digest")
    built = await job.build(ctx, TYPES["morning"])
    rail = next(i for i in built.digest.items if i.event_id == ids["original"])
    assert rail.stories == 2 and rail.cluster_id in (ids["original"], ids["coverage"])  # one item per event
    other = ids["coverage"] if rail.cluster_id == ids["original"] else ids["original"]
    app = FastAPI()
    await console_app.mount(app, host, [(ctx, r) for r in host.specs["digest"].manifest.routes if r.pages])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://console.test"
    ) as client:
        digest = await client.get(f"/digest/digests/{built.digest_id}")
        assert digest.status_code == 200, digest.text
        links = re.findall(r'class="why" href="(/digest/clusters/\d+)"', digest.text)
        assert f"/digest/clusters/{rail.cluster_id}" in links
        cluster = await client.get(f"/digest/clusters/{rail.cluster_id}")
        assert cluster.status_code == 200, cluster.text
        assert "Same event, other stories" in cluster.text and f"/digest/clusters/{other}" in cluster.text
        story = await client.get(f"/digest/clusters/{ids['original']}")
        assert "exact_duplicate" in story.text and f"/digest/articles/{ids['copy']}" in story.text
        decision = await client.get(f"/digest/articles/{ids['copy']}")
        assert "Checks against the match" in decision.text and "guid-2" in decision.text
        assert (await client.get("/digest/clusters/987654321")).status_code == 404
