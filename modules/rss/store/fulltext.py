"""mod_rss.entry_fulltext: which entries' article pages to fetch, and what each attempt found (SQL only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from host.workqueue import WorkQueue


@dataclass(frozen=True, slots=True)
class Claim:
    entry_id: int
    link: str
    attempts: int  # including this one
    feed_words: int


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt settled, as stored: the row's status, why, when to retry, the article if any."""

    status: str  # done, failed, skipped
    error: str | None
    retry_at: datetime | None  # None: never again
    url: str | None  # the page's final URL, once fetched
    html: str | None = None
    text: str | None = None
    words: int | None = None
    title: str | None = None
    author: str | None = None
    published: datetime | None = None


async def enqueue(conn: asyncpg.Connection, *, auto_partial: bool, max_age_days: int, now: datetime) -> None:
    """Track the eligible recent entries that have no row yet; an entry whose link changed starts over."""
    await conn.execute(
        """INSERT INTO mod_rss.entry_fulltext (entry_id, link, next_attempt_at)
           SELECT e.id, e.link, $2 FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
           WHERE e.link IS NOT NULL AND (f.full_text OR ($1 AND e.partial_content))
             AND e.effective_at >= $2::timestamptz - make_interval(days => $3)
             AND NOT EXISTS (SELECT 1 FROM mod_rss.entry_fulltext ft WHERE ft.entry_id = e.id AND ft.link = e.link)
           ON CONFLICT (entry_id) DO UPDATE SET link = EXCLUDED.link, status = 'pending', attempts = 0,
               next_attempt_at = $2, url = NULL, full_html = NULL, full_text = NULL, word_count = NULL,
               fetched_at = NULL, error = NULL, updated_at = $2, article_title = NULL, article_author = NULL,
               article_published = NULL""",
        auto_partial,
        now,
        max_age_days,
    )


QUEUE = WorkQueue(
    table="mod_rss.entry_fulltext",
    key="entry_id",
    join="JOIN mod_rss.entries e ON e.id = q.entry_id JOIN mod_rss.feeds f ON f.id = e.feed_id",
    due="q.next_attempt_at <= $1 AND f.enabled AND (f.full_text OR ($4 AND e.partial_content))",
    order="q.next_attempt_at, e.effective_at DESC",
    owner_column=None,
    set_extra="attempts = q.attempts + 1, updated_at = $1",
    returning="q.entry_id, q.link, q.attempts, e.word_count",
    returning_from=", mod_rss.entries e",
    returning_where="AND e.id = q.entry_id",
)


async def claim(
    conn: asyncpg.Connection, *, auto_partial: bool, limit: int, lease_s: int, now: datetime
) -> list[Claim]:
    """Lease due rows to this host; the attempt is counted up front, so a page that crashes the worker
    still runs out of attempts."""
    rows = await QUEUE.claim(conn, now=now, limit=limit, lease_s=lease_s, params=[auto_partial])
    return [Claim(r["entry_id"], r["link"], r["attempts"], r["word_count"]) for r in rows]


async def record(conn: asyncpg.Connection, claim: Claim, attempt: Attempt, now: datetime) -> None:
    """Record the attempt, unless the entry's link changed meanwhile (that row starts over)."""
    await conn.execute(
        """UPDATE mod_rss.entry_fulltext SET status = $3, error = $4, next_attempt_at = $5, lease_until = NULL,
               url = coalesce($6, url), full_html = $7, full_text = $8, word_count = $9,
               fetched_at = CASE WHEN $3 = 'done' THEN $10 ELSE fetched_at END, updated_at = $10,
               article_title = $11, article_author = $12, article_published = $13
           WHERE entry_id = $1 AND link = $2""",
        claim.entry_id,
        claim.link,
        attempt.status,
        attempt.error,
        attempt.retry_at,
        attempt.url,
        attempt.html,
        attempt.text,
        attempt.words,
        now,
        attempt.title,
        attempt.author,
        attempt.published,
    )
