"""The fulltext job: fetch the article behind an entry's link and keep its main content beside the feed's.

Feeds often carry only an excerpt; embeddings, search and summaries are better on the article. Politeness and
safety come from the module's Fetcher (per-host limits, size cap, private-network guard); robots.txt is
honoured per origin as RFC 9309 says (4xx: no rules; 5xx or unreachable: stay away for now). The page is
reduced to its main content by readability-lxml, then sanitized with the feed content's nh3 policy. A failed
extraction never touches the feed content: the entry keeps it, the row records why and when to retry.

`mod_rss.entry_text` (migrations 0003, 0006) gives every entry's best text: the article when extracted, else
the feed's content_text; and its title, authors and publication date, taken from the article page
(article_meta.py: JSON-LD, OpenGraph, <meta>, <time>) where the feed left them out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from readability import Document
from readability.readability import Unparseable

from host.backoff import Backoff
from host.module import ModuleContext
from host.net.fetcher import Fetcher, FetchResult
from modules.rss.enrich.article_meta import ArticleMeta, article_metadata
from modules.rss.parse.encoding import decode
from modules.rss.parse.sanitize import sanitize_html, sanitized_text
from modules.rss.robots import RobotsCache
from modules.rss.settings import ENRICH_LEASE_SECONDS
from modules.rss.store import fulltext
from modules.rss.subscriptions.discover import looks_like_html

log = logging.getLogger("feedeater.rss.fulltext")

HTML_ACCEPT = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"
MIN_ARTICLE_WORDS = 50  # fewer words than this is a cookie wall, an error page or a link list, not an article
_TRANSIENT_KINDS = frozenset({"network", "dns", "timeout"})
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})

Status = Literal["done", "failed", "skipped"]


# -- decisions (pure) ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Article:
    html: str  # sanitized
    text: str
    words: int
    meta: ArticleMeta = field(default_factory=ArticleMeta)  # what the page says of itself (JSON-LD, <meta>)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt settles: the row's status, why, and when to try again (None: never)."""

    status: Status
    error: str | None = None
    retry_in: timedelta | None = None
    url: str | None = None  # the page's final URL, once fetched
    article: Article | None = None  # when done


# After the n-th failed attempt: 10 min, 20 min, 40 min … capped at 12 h; a longer Retry-After wins (≤ 30 days).
RETRY = Backoff(base_s=600, cap_s=12 * 3600, retry_after_cap_s=30 * 86400)


def failure(
    error: str, *, transient: bool, attempts: int, max_attempts: int, retry_after_s: float | None = None
) -> Outcome:
    """A failed attempt: transient ones are retried with backoff (or Retry-After) until attempts run out."""
    if not transient or attempts >= max_attempts:
        return Outcome("failed", error)
    return Outcome("failed", error, timedelta(seconds=RETRY.delay(attempts, retry_after_s)))


def is_transient(res: FetchResult) -> bool:
    """Worth retrying: network trouble, timeouts, overload. Blocked, too large, 404 and the like are final."""
    if res.status == 0:
        return res.error_kind in _TRANSIENT_KINDS
    return res.status in _TRANSIENT_STATUS


def judge(extracted_words: int, feed_words: int) -> str | None:
    """Why an extraction is not worth keeping (the feed content is then the better text), or None."""
    if extracted_words < MIN_ARTICLE_WORDS:
        return f"no article found on the page ({extracted_words} words extracted)"
    if extracted_words < feed_words:
        return f"extracted text ({extracted_words} words) is shorter than the feed's content ({feed_words})"
    return None


class ExtractionError(Exception):
    """readability found nothing it could parse."""


def extract_article(page: bytes, *, url: str, content_type: str | None) -> Article:
    """The page's main content, sanitized: decode (BOM, charset, detection), readability, then nh3.

    CPU-bound (a few ms to tens of ms per page): the job runs it in a worker thread.
    """
    text = decode(page, content_type).text
    try:
        main = Document(text, url=url).summary(html_partial=True)
    except Unparseable as exc:
        raise ExtractionError(f"readability could not parse the page: {exc}") from exc
    html = sanitize_html(main, url)
    plain = sanitized_text(html)
    return Article(html, plain, len(plain.split()), article_metadata(text))


# -- the job -------------------------------------------------------------------------------------
async def _attempt(
    fetcher: Fetcher, robots: RobotsCache, claim: fulltext.Claim, max_attempts: int
) -> Outcome:
    """robots.txt, fetch, extract, judge."""
    verdict, reason = await robots.check(claim.link)
    if verdict == "disallowed":
        return Outcome("skipped", reason)
    if verdict != "allowed":
        transient = verdict == "unreachable"
        return failure(
            reason or verdict, transient=transient, attempts=claim.attempts, max_attempts=max_attempts
        )
    res = await fetcher.fetch(claim.link, accept=HTML_ACCEPT)
    if res.status != 200 or res.body is None:
        return failure(
            res.error or f"HTTP {res.status}",
            transient=is_transient(res),
            attempts=claim.attempts,
            max_attempts=max_attempts,
            retry_after_s=res.retry_after_s,
        )
    content_type = res.headers.get("content-type")
    if not looks_like_html(res.body, content_type):
        return Outcome("skipped", f"not an HTML page ({content_type or 'no Content-Type'})", url=res.url)
    try:
        article = await asyncio.to_thread(extract_article, res.body, url=res.url, content_type=content_type)
    except ExtractionError as exc:
        return Outcome("failed", str(exc), url=res.url)
    problem = judge(article.words, claim.feed_words)
    if problem is not None:
        return Outcome("failed", problem, url=res.url)
    return Outcome("done", url=res.url, article=article)


def stored(outcome: Outcome, now: datetime) -> fulltext.Attempt:
    """An outcome as its row records it."""
    retry_at = now + outcome.retry_in if outcome.retry_in is not None else None
    attempt = fulltext.Attempt(outcome.status, outcome.error, retry_at, outcome.url)
    if (article := outcome.article) is None:
        return attempt
    meta = article.meta
    return dataclasses.replace(
        attempt,
        html=article.html,
        text=article.text,
        words=article.words,
        title=meta.title,
        author=meta.author,
        published=meta.published,
    )


def robots_cache(ctx: ModuleContext) -> RobotsCache:
    """The process's robots.txt cache, made on first use with the module's fetcher."""
    cache: RobotsCache | None = ctx.state.get("robots")
    if cache is None:
        cache = ctx.state["robots"] = RobotsCache(
            ctx.state["fetcher"],
            user_agent=ctx.settings["user_agent"],
            ttl_s=float(ctx.settings["fulltext_robots_ttl_minutes"]) * 60,
        )
    return cache


async def run(ctx: ModuleContext) -> dict[str, Any]:
    """One tick: queue newly eligible entries, then fetch and extract one batch of due articles."""
    settings = ctx.settings
    auto_partial = bool(settings["fulltext_auto_partial"])
    max_attempts = int(settings["fulltext_max_attempts"])
    now = datetime.now(UTC)
    async with ctx.pool.acquire() as conn:
        await fulltext.enqueue(
            conn, auto_partial=auto_partial, max_age_days=int(settings["fulltext_max_age_days"]), now=now
        )
        claims = await fulltext.claim(
            conn,
            auto_partial=auto_partial,
            limit=int(settings["fulltext_batch"]),
            lease_s=ENRICH_LEASE_SECONDS,
            now=now,
        )
    fetcher: Fetcher = ctx.state["fetcher"]
    robots = robots_cache(ctx)
    started = time.monotonic()
    results = await asyncio.gather(
        *(_attempt(fetcher, robots, c, max_attempts) for c in claims), return_exceptions=True
    )
    counts: Counter[str] = Counter(claimed=len(claims))
    async with ctx.pool.acquire() as conn:
        for claim, result in zip(claims, results, strict=True):
            if isinstance(result, BaseException):
                log.error("entry %s: full text aborted: %s", claim.entry_id, result)  # the lease expires
                counts["aborted"] += 1
                continue
            now = datetime.now(UTC)
            await fulltext.record(conn, claim, stored(result, now), now)
            counts[result.status] += 1
            if result.status != "done":
                log.info(
                    "entry %s: full text %s: %s",
                    claim.entry_id,
                    result.status,
                    result.error,
                    extra={"entry_id": claim.entry_id, "url": claim.link},
                )
    return {**counts, "seconds": round(time.monotonic() - started, 3)}
