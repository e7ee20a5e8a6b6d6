"""Bus payload → Article (pure), and ingest's layer-1 paths (exact duplicate, revision) on PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import Any

import pytest

from host.runtime import Host
from modules.digest.intake.event import MalformedEvent, is_own, to_article
from modules.digest.intake.handler import ingest

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


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"type": "Hello"}, "type is 'Hello'"),
        ({"message": None}, "message is missing"),
        ({"message": {"id": "x"}}, "message.id is not a UUID"),
        ({"message": {"id": str(uuid.uuid4()), "Message": 3}}, "message.Message is missing"),
        ({"message": {"id": str(uuid.uuid4()), "Message": "t", "createdAt": "yesterday"}}, "not an ISO-8601 time"),
        ({"message": {"id": str(uuid.uuid4()), "Message": "", "createdAt": "2026-01-01T00:00:00Z"}}, "neither a title"),
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
        deadline = asyncio.get_running_loop().time() + 30
        while not await pool.fetchval(
            "SELECT count(*) FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted",
            two.get_server_pid(),
        ):
            assert asyncio.get_running_loop().time() < deadline, "the second ingest never waited for the lock"
            await asyncio.sleep(0.01)
        await tx.commit()
        assert await waiting == "near_duplicate"
    rows = await pool.fetch("SELECT disposition, cluster_id FROM mod_digest.articles ORDER BY id")
    assert [r["disposition"] for r in rows] == ["unique", "near_duplicate"]
    assert rows[0]["cluster_id"] == rows[1]["cluster_id"]
