"""Bus payload → Article (pure), and ingest's layer-1 paths (exact duplicate, revision) on PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from host.runtime import Host
from modules.digest.intake.event import MalformedEvent, is_own, to_article
from modules.digest.intake.handler import ingest, ingest_many
from modules.digest.model import Article

ARTICLES = Path(__file__).resolve().parents[2] / "fixtures" / "articles"
BODY = (
    "Springfield approved a light rail line on Tuesday; it will cost 480 million dollars and open in 2030. "
    * 3
)


def rss_event(**rss: Any) -> dict[str, Any]:
    message = {
        "id": str(uuid.UUID(int=7)),
        "createdAt": "2026-11-25T10:00:00.000Z",
        "source": {"module": "rss", "stream": "12"},
        "Message": f"Rail line approved\n\n{BODY}",
        "From": "Ann",
        "tags": {"feedTitle": "Wire", "title": "Rail line approved"},
        "rss": {
            "feedId": 12, "guid": "g1", "title": "Rail line approved", "link": "https://www.wire.example/rail",
            "published": "2026-11-25T09:30:00.000Z", "dateUncertain": False, "partialContent": True,
            "contentHash": "abc", "wordCount": 57, "revision": 1,
            "contentHtml": "<p>Rail <a href='https://city.example/vote'>vote</a></p><ul><li>a</li><li>b</li><li>c</li></ul>",
            **rss,
        },
    }  # fmt: skip
    return {"type": "MessageCreated", "message": message}


def test_rss_key_gives_feed_dates_flags_and_depth_signals() -> None:
    a = to_article(rss_event())
    assert (a.feed_id, a.source_name, a.domain, a.stream) == (12, "Wire", "wire.example", "12")
    assert a.title == "Rail line approved" and a.body.startswith("Springfield approved")
    assert a.published_at.isoformat() == "2026-11-25T09:30:00+00:00" and a.partial_content
    assert set(a.depth_signals) == {"data", "structure", "citations"} and a.content_hash == "abc"
    assert to_article(rss_event(published=None)).date_uncertain  # first-seen time stands in


def test_feedeater_fields_without_rss_key() -> None:
    event = rss_event()
    del event["message"]["rss"]
    event["message"]["followMePanel"] = {"href": "https://other.example/x"}
    a = to_article(event)
    assert a.feed_id is None and a.url == "https://other.example/x" and a.title == "Rail line approved"
    assert a.published_at.isoformat() == "2026-11-25T10:00:00+00:00" and len(a.content_hash) == 64


def _message(**fields: Any) -> dict[str, Any]:
    """A message that keeps the bus contract (docs/bus.md) but for `fields`."""
    base = {
        "id": str(uuid.uuid4()),
        "createdAt": "2026-01-01T00:00:00.000Z",
        "source": {"module": "slack", "stream": "general"},
        "Message": "text",
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"type": "Hello"}, "type is 'Hello'"),
        ({"message": None}, "message is missing"),
        ({"message": {"id": "x"}}, "message.id is not a UUID"),
        ({"message": _message(Message=3)}, "message.Message is missing, not a string or empty"),
        ({"message": _message(createdAt="yesterday")}, "not an ISO-8601 time"),
        ({"message": _message(Message="  ")}, "message.Message is missing, not a string or empty"),
        ({"message": _message(source={"stream": "x"})}, "message.source.module is missing"),
        ({"message": _message(tags={"nested": {"no": 1}})}, "message.tags is not an object of strings"),
    ],
)  # fmt: skip
def test_malformed_events_say_why(change: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedEvent, match=reason):
        to_article({**rss_event(), **change})


def test_own_digests_are_recognised() -> None:
    assert is_own({"message": {"isDigest": True}}) and is_own({"message": {"source": {"module": "digest"}}})
    assert not is_own(rss_event())


async def test_layer1_exact_duplicate_and_revision_in_place(host: Host) -> None:
    a = to_article(rss_event())
    async with host.require_pool().acquire() as conn, conn.transaction():
        assert (await ingest(conn, a)).disposition == "unique"
        assert (await ingest(conn, a)).disposition == "exact_duplicate"
        revised = replace(a, content_hash="def", body=a.body + " Update: works start in May.", revision=2)
        assert (await ingest(conn, revised)).disposition == "revision"
    rows = await host.require_pool().fetch(
        "SELECT disposition, revision, body, content_hash FROM mod_digest.articles"
    )
    assert len(rows) == 1
    assert (rows[0]["disposition"], rows[0]["revision"], rows[0]["content_hash"]) == ("revision", 2, "def")
    assert rows[0]["body"].endswith("works start in May.")


async def test_a_copy_that_waited_for_the_dedup_lock_matches_the_article_committed_meanwhile(
    host: Host,
) -> None:
    """Two hosts get copies of one story at once. The second one's lookup waits for the first's lock with
    a snapshot taken before the first committed; it must still match the first article, not be a second
    `unique`."""
    first = to_article(rss_event())
    copy = replace(
        first, message_id=uuid.UUID(int=8), stream="13", url="https://other.example/rail", content_hash="x"
    )
    pool = host.require_pool()
    async with pool.acquire() as one, pool.acquire() as two:
        tx = one.transaction()
        await tx.start()
        assert (await ingest(one, first)).disposition == "unique"

        async def second() -> str:
            async with two.transaction():
                return (await ingest(two, copy)).disposition

        waiting = asyncio.create_task(second())
        deadline = asyncio.get_running_loop().time() + 120
        while not await pool.fetchval(
            "SELECT count(*) FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted",
            two.get_server_pid(),
        ):
            assert asyncio.get_running_loop().time() < deadline, "the second ingest never waited for the lock"
            await asyncio.sleep(0.01)
        await tx.commit()
        assert await waiting == "exact_duplicate"  # the same words behind another URL
    rows = await pool.fetch("SELECT disposition, cluster_id FROM mod_digest.articles ORDER BY id")
    assert [r["disposition"] for r in rows] == ["unique", "exact_duplicate"]
    assert rows[0]["cluster_id"] == rows[1]["cluster_id"]


def _vocabulary() -> list[str]:
    """Real words (from the saved article pages) to write distinct stories with."""
    text = " ".join(p.read_text(encoding="latin-1") for p in sorted(ARTICLES.glob("*.html")))
    return sorted({w for w in re.findall(r"\b[a-z]{4,12}\b", re.sub(r"<[^>]+>", " ", text))})


def delivery() -> list[Article]:
    """Articles that exercise every layer, copies arriving after their originals, a message id twice."""
    rng = random.Random(11)
    vocabulary = _vocabulary()
    at = datetime(2026, 11, 25, 9, tzinfo=UTC)
    names = "Maria Santos met Olaf Berger of Harbour Trust and Lena Ortiz at Port Authority."
    n = 0

    def art(title: str, body: str, stream: str, url: str, hours: float = 0, **kw: Any) -> Article:
        nonlocal n
        n += 1
        return Article(
            message_id=kw.pop("message_id", uuid.UUID(int=1000 + n)), source_module="rss", stream=stream,
            feed_id=int(stream), source_name=f"Feed {stream}", domain=url.split("/")[2], title=title, url=url,
            body=body, word_count=len(body.split()), published_at=at + timedelta(hours=hours),
            date_uncertain=False, partial_content=False, content_hash=kw.pop("content_hash", hashlib.sha1(body.encode()).hexdigest()),
            depth_signals=(), revision=kw.pop("revision", 1), updated=False,
        )  # fmt: skip

    def story() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(70))

    def edited(body: str) -> str:
        words = body.split()
        words[35] = "changed"
        return " ".join(words)

    out: list[Article] = []
    for k in range(4):
        body = story()
        title = f"{rng.choice(vocabulary).title()} {' '.join(rng.choice(vocabulary) for _ in range(6))}"
        out.append(art(title, body, "1", f"https://one.example/{k}"))
        out.append(art(title, body, "2", f"https://one.example/{k}?utm_source=x", 1))  # url, same text
        out.append(art(title, edited(body), "3", f"https://www.one.example/{k}/", 2))  # url, edited
        out.append(art(f"BREAKING: {title}", edited(body), "4", f"https://four.example/{k}", 3))  # title
        out.append(art(story()[:40], edited(body), "5", f"https://five.example/{k}", 4))  # fingerprint
        out.append(art(f"Short note {k}", "A few words only.", "6", f"https://six.example/{k}"))
        out.append(art(f"Short note {k}", "A few other words.", "7", f"https://seven.example/{k}", 1))
    out.append(art("Harbour deal", f"{story()} {names}", "8", "https://eight.example/e"))
    out.append(art("Talks at the port", f"{story()} {names}", "9", "https://nine.example/e", 5))  # entities
    first = out[0]
    out.append(art(first.title, first.body + " more", "1", first.url or "", message_id=first.message_id,
                   content_hash="rev", revision=2))  # fmt: skip
    out.append(out[-1])  # the same message again: exact duplicate of the revision
    out.extend(art(f"Lone story {k}", story(), "10", f"https://ten.example/{k}") for k in range(3))
    return out


async def _outcome(pool: asyncpg.Pool) -> tuple[list[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """Every stored article with its decision, match and cluster named by message id, and every lookup key."""
    rows = await pool.fetch(
        """SELECT a.message_id, a.disposition, a.layer, a.match_score, m.message_id AS matched,
                  c.message_id AS cluster, a.revision, a.content_hash
           FROM mod_digest.articles a LEFT JOIN mod_digest.articles m ON m.id = a.matched_id
           JOIN mod_digest.articles c ON c.id = a.cluster_id ORDER BY a.message_id"""
    )
    keys = await pool.fetch(
        """SELECT a.message_id, k.key, k.at FROM mod_digest.dedup_keys k
           JOIN mod_digest.articles a ON a.id = k.article_id"""
    )
    return [tuple(r) for r in rows], {tuple(r) for r in keys}


async def test_a_delivery_at_once_decides_and_stores_as_one_article_at_a_time(host: Host) -> None:
    """ingest_many (one lookup and one insert per run of new articles) must give every article the
    decision, match, cluster and keys that ingesting them one by one gives, whether its match was stored
    before the delivery, earlier in the same delivery, or the same message id twice."""
    articles = delivery()
    pool = host.require_pool()
    one_by_one = []
    async with pool.acquire() as conn:
        for a in articles:
            async with conn.transaction():
                one_by_one.append(await ingest(conn, a))
    expected = await _outcome(pool)
    layers = [(d.disposition, d.layer) for d in one_by_one]
    assert {layer for _, layer in layers} == {
        "none", "url", "title", "title+fingerprint", "fingerprint", "entities", "guid"
    }  # fmt: skip
    assert layers[-5:-3] == [("revision", "guid"), ("exact_duplicate", "guid")]
    for size in (len(articles), 4):  # all at once (matches within the delivery), and in parts
        await pool.execute("TRUNCATE mod_digest.articles, mod_digest.dedup_keys RESTART IDENTITY CASCADE")
        batched = []
        async with pool.acquire() as conn:
            for part in range(0, len(articles), size):
                async with conn.transaction():
                    batched.extend(await ingest_many(conn, articles[part : part + size]))
        assert [(d.disposition, d.layer, d.score) for d in batched] == [
            (d.disposition, d.layer, d.score) for d in one_by_one
        ], size
        got = await _outcome(pool)
        assert got[0] == expected[0], [(a, b) for a, b in zip(got[0], expected[0], strict=True) if a != b]
        assert got[1] == expected[1], (got[1] - expected[1], expected[1] - got[1])
