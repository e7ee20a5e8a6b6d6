"""Full-text extraction: the pure decisions, then the fulltext job against saved article pages served over
real HTTP (FeedServer), with real PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from host.ai import AI_SETTINGS, AIServices
from host.jobs import run_job
from host.module import ModuleContext
from host.net.fetcher import Fetcher, FetchResult
from host.runtime import Host
from modules.rss import MANIFEST, store
from modules.rss import robots as robots_txt
from modules.rss import settings as rss_settings
from modules.rss.enrich import fulltext
from modules.rss.enrich.article_meta import ArticleMeta, article_metadata
from modules.rss.ingest import poll
from modules.rss.model import Entry
from modules.rss.search.query import SearchQuery, search
from tests.fakeai import FakeAI
from tests.feedserver import FeedServer, Route
from tests.rss.seed import ingest
from tests.rss.test_embed import embed_all, rss_context

ARTICLES = Path(__file__).resolve().parents[2] / "fixtures" / "articles"
HTML_UTF8 = {"Content-Type": "text/html; charset=UTF-8"}
BLOG_BODY = "dozens of workers share one table"  # sentences that only the article bodies contain
NEWS_BODY = "Stromverbrauch, Raumtemperaturen und die Zufriedenheit der Bewohner"


def article(name: str) -> bytes:
    return (ARTICLES / name).read_bytes()


# -- helpers shared with test_summarize ----------------------------------------------------------
def make_entry(
    guid: str,
    *,
    link: str | None = None,
    title: str = "",
    text: str = "A short excerpt from the feed.",
    published: datetime | None = None,
    partial: bool = False,
) -> Entry:
    return Entry(
        guid=guid,
        guid_source="id",
        title=title or f"Entry {guid}",
        link=link,
        published=published or datetime.now(UTC),
        content_html=f"<p>{text}</p>",
        content_text=text,
        word_count=len(text.split()),
        partial_content=partial,
        content_hash=f"{guid}:{text}",
    )


async def add_feed(
    host: Host,
    entries: Sequence[Entry],
    *,
    url: str = "http://feeds.test/feed.xml",
    title: str = "Test Feed",
    full_text: bool = False,
) -> store.FeedRow:
    """A feed and its entries stored the way the poll job stores them (entries and events in one tx)."""
    async with host.require_pool().acquire() as conn, conn.transaction():
        feed, _ = await store.add_feed(conn, url=url, title=title)
        await add_entries(conn, feed, entries)
        await conn.execute("UPDATE mod_rss.feeds SET full_text = $2 WHERE id = $1", feed.id, full_text)
    return feed


async def add_entries(conn: Any, feed: store.FeedRow, entries: Sequence[Entry]) -> None:
    await ingest(conn, feed, entries)


async def module_ctx(
    host: Host, *, ai: AIServices | None = None, fetcher: Fetcher | None = None, **overrides: Any
) -> ModuleContext:
    """The rss module's context with this feature's settings (defaults until the manifest declares them),
    its own AI services and a fresh process state (robots.txt cache) around the module's fetcher."""
    ctx = await host.context("rss")
    defaults = {s.key: s.default for s in (*rss_settings.SUMMARY, *rss_settings.FULLTEXT, *AI_SETTINGS)}
    return dataclasses.replace(
        ctx,
        settings={**defaults, **ctx.settings, **overrides},
        ai=ai or AIServices(),
        state={"fetcher": fetcher or ctx.state["fetcher"]},
    )


async def run_fulltext(ctx: ModuleContext) -> dict[str, Any]:
    result = await run_job(ctx, MANIFEST.job("fulltext"), trigger="manual")
    assert result.status == "ok", result.error
    return dict(result.metrics)


async def fulltext_row(host: Host, guid: str) -> dict[str, Any]:
    row = await host.require_pool().fetchrow(
        """SELECT ft.*, t.best_text, t.text_source, e.content_text FROM mod_rss.entry_fulltext ft
           JOIN mod_rss.entries e ON e.id = ft.entry_id JOIN mod_rss.entry_text t ON t.entry_id = e.id
           WHERE e.guid = $1""",
        guid,
    )
    assert row is not None, f"no entry_fulltext row for {guid}"
    return dict(row)


def fetch_result(
    status: int,
    *,
    error_kind: str | None = None,
    retry_after_s: float | None = None,
    body: bytes | None = None,
) -> FetchResult:
    return FetchResult(
        status=status,
        url="http://example.org/robots.txt",
        permanent_url=None,
        body=body,
        headers={},
        etag=None,
        last_modified=None,
        retry_after_s=retry_after_s,
        error=None if status == 200 else "failed",
        error_kind=error_kind if status == 0 else (None if status == 200 else "http"),
        elapsed_s=0.0,
        redirects=(),
    )


# -- pure decisions ------------------------------------------------------------------------------
def test_retry_delay_doubles_and_is_capped() -> None:
    delays = [fulltext.RETRY.delay(n) for n in (1, 2, 3, 10)]
    assert delays == [600, 1200, 2400, 12 * 3600]


def test_failures_retry_only_when_transient_and_attempts_remain() -> None:
    assert fulltext.failure("x", transient=True, attempts=1, max_attempts=4).retry_in == timedelta(minutes=10)
    assert fulltext.failure("x", transient=True, attempts=4, max_attempts=4).retry_in is None
    assert fulltext.failure("x", transient=False, attempts=1, max_attempts=4).retry_in is None
    slow = fulltext.failure("x", transient=True, attempts=1, max_attempts=4, retry_after_s=7200)
    assert slow.status == "failed" and slow.retry_in == timedelta(hours=2)


@pytest.mark.parametrize(
    ("status", "kind", "transient"),
    [
        (0, "timeout", True),
        (0, "network", True),
        (0, "blocked", False),
        (0, "too_large", False),
        (503, None, True),
        (429, None, True),
        (404, None, False),
        (410, None, False),
    ],
)
def test_transient_errors(status: int, kind: str | None, transient: bool) -> None:
    assert fulltext.is_transient(fetch_result(status, error_kind=kind)) is transient


def test_judge_prefers_the_feed_content_when_extraction_finds_less() -> None:
    assert fulltext.judge(300, 40) is None
    assert "no article" in (fulltext.judge(12, 0) or "")
    assert "shorter" in (fulltext.judge(80, 120) or "")


def test_robots_rules_follow_rfc_9309() -> None:
    agent = "feedeater/0.1 (+https://example.org)"
    body = b"User-agent: otherbot\nDisallow: /\n\nUser-agent: feedeater\nDisallow: /private/\n"
    rules = robots_txt.robots_rules(fetch_result(200, body=body))
    assert rules is not None
    assert rules.can_fetch(agent, "http://example.org/public/a")
    assert not rules.can_fetch(agent, "http://example.org/private/a")
    missing = robots_txt.robots_rules(fetch_result(404))
    assert missing is not None and missing.can_fetch(agent, "http://example.org/private/a")
    assert robots_txt.robots_rules(fetch_result(503)) is None  # unreachable: nothing is allowed yet
    assert robots_txt.robots_rules(fetch_result(0, error_kind="timeout")) is None


def test_origin_is_scheme_host_and_port() -> None:
    assert robots_txt.origin("https://Example.org:8443/a/b?c=d") == "https://Example.org:8443"


def test_extraction_keeps_the_article_and_drops_boilerplate() -> None:
    got = fulltext.extract_article(
        article("blog_post.html"),
        url="https://blog.example/2024/11/queue/",
        content_type=HTML_UTF8["Content-Type"],
    )
    assert BLOG_BODY in got.text and "Boring technology is a choice" in got.text
    assert got.words > 250
    for boilerplate in ("Advertisement", "Leave a Reply", "Cheap Pills", "Recent Posts", "Proudly powered",
                        "Share on Facebook", "About the author", "Subscribe to our newsletter"):  # fmt: skip
        assert boilerplate not in got.text, boilerplate
    lowered = got.html.lower()
    for unsafe in ("<script", "onerror", "onclick", "<iframe", "<form", "javascript:"):
        assert unsafe not in lowered, unsafe
    assert (
        'src="https://blog.example/wp-content/uploads/2024/11/queue-latency.png"' in got.html
    )  # made absolute
    assert 'rel="noopener noreferrer"' in got.html


@pytest.mark.parametrize("content_type", ["text/html; charset=iso-8859-1", "text/html", None])
def test_extraction_decodes_a_latin1_page(content_type: str | None) -> None:
    got = fulltext.extract_article(
        article("news_article.html"), url="https://x.example/", content_type=content_type
    )
    assert NEWS_BODY in got.text and "Wärmepumpentarif" in got.text
    for boilerplate in (
        "Cookies",
        "Alle akzeptieren",
        "Mehr zum Thema",
        "Abonnieren",
        "Impressum",
        "EILMELDUNG",
    ):
        assert boilerplate not in got.text, boilerplate


def test_a_page_without_an_article_extracts_too_little() -> None:
    got = fulltext.extract_article(article("link_list.html"), url="https://x.example/", content_type=None)
    assert fulltext.judge(got.words, 0) is not None


# -- the job -------------------------------------------------------------------------------------
async def test_full_text_feed_gets_its_articles(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/robots.txt", Route(body=b"User-agent: *\nDisallow: /admin/\n"))
    feed_server.route("/2024/queue", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    feed_server.route(
        "/news/waerme",
        Route(body=article("news_article.html"), headers={"Content-Type": "text/html; charset=iso-8859-1"}),
    )
    await add_feed(
        host,
        [
            make_entry("blog", link=feed_server.url("/2024/queue"), text="We moved our queue."),
            make_entry("news", link=feed_server.url("/news/waerme"), text="Wärmepumpen im Altbau."),
            make_entry("nolink", link=None),
        ],
        full_text=True,
    )
    ctx = await module_ctx(host)
    metrics = await run_fulltext(ctx)
    assert metrics["claimed"] == 2 and metrics["done"] == 2

    blog = await fulltext_row(host, "blog")
    assert blog["status"] == "done" and blog["attempts"] == 1 and blog["next_attempt_at"] is None
    assert BLOG_BODY in blog["full_text"] and "Leave a Reply" not in blog["full_text"]
    assert "<script" not in blog["full_html"].lower() and "onerror" not in blog["full_html"]
    assert blog["url"] == feed_server.url("/2024/queue") and blog["fetched_at"] is not None
    # Stored beside the feed content, which stays as it was; the view prefers the article.
    assert blog["content_text"] == "We moved our queue." and blog["text_source"] == "article"
    assert blog["best_text"] == blog["full_text"]
    news = await fulltext_row(host, "news")
    assert NEWS_BODY in news["full_text"] and news["word_count"] > 100

    requests = [r for r in feed_server.requests if r.path != "/robots.txt"]
    assert {r.path for r in requests} == {"/2024/queue", "/news/waerme"}
    assert len(feed_server.requests_to("/robots.txt")) == 1  # cached per origin, shared by both fetches
    assert all(r.headers["user-agent"] == ctx.settings["user_agent"] for r in feed_server.requests)
    assert "text/html" in requests[0].headers["accept"]

    assert (await run_fulltext(ctx))["claimed"] == 0  # settled rows are not fetched again


async def test_robots_disallow_is_respected(host: Host, feed_server: FeedServer) -> None:
    robots = b"User-agent: otherbot\nDisallow: /\n\nUser-agent: feedeater\nDisallow: /private/\n"
    feed_server.route("/robots.txt", Route(body=robots))
    feed_server.route("/private/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    feed_server.route("/public/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    await add_feed(
        host,
        [
            make_entry("private", link=feed_server.url("/private/post")),
            make_entry("public", link=feed_server.url("/public/post")),
        ],
        full_text=True,
    )
    metrics = await run_fulltext(await module_ctx(host))
    assert metrics["skipped"] == 1 and metrics["done"] == 1
    assert feed_server.requests_to("/private/post") == []
    private = await fulltext_row(host, "private")
    assert private["status"] == "skipped" and "robots.txt" in private["error"]
    assert private["next_attempt_at"] is None and private["text_source"] == "feed"


async def test_unreadable_robots_txt_means_try_later(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/robots.txt", Route(status=503))
    feed_server.route("/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    await add_feed(host, [make_entry("a", link=feed_server.url("/post"))], full_text=True)
    before = datetime.now(UTC)
    await run_fulltext(await module_ctx(host))
    assert feed_server.requests_to("/post") == []
    row = await fulltext_row(host, "a")
    assert row["status"] == "failed" and "robots.txt unreachable" in row["error"]
    assert row["next_attempt_at"] >= before + timedelta(minutes=9)


async def test_failures_keep_the_feed_content(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/busy", Route(status=503, retry_after="3600"))
    feed_server.route("/gone", Route(status=404))
    feed_server.route("/front", Route(body=article("link_list.html"), headers=HTML_UTF8))
    feed_server.route(
        "/paper.pdf",
        Route(body=b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", headers={"Content-Type": "application/pdf"}),
    )
    entries = [
        make_entry(guid, link=feed_server.url(path), text=f"Feed text of {guid}.")
        for guid, path in (("busy", "/busy"), ("gone", "/gone"), ("front", "/front"), ("pdf", "/paper.pdf"))
    ]
    await add_feed(host, entries, full_text=True)
    before = datetime.now(UTC)
    ctx = await module_ctx(host)
    metrics = await run_fulltext(ctx)
    assert metrics == {"claimed": 4, "failed": 3, "skipped": 1, "seconds": metrics["seconds"]}

    busy = await fulltext_row(host, "busy")
    assert busy["status"] == "failed" and busy["error"].startswith("HTTP 503") and busy["attempts"] == 1
    assert busy["next_attempt_at"] >= before + timedelta(minutes=59)  # Retry-After beats the 10 min backoff
    gone = await fulltext_row(host, "gone")
    assert gone["status"] == "failed" and gone["next_attempt_at"] is None  # a 404 is not retried
    front = await fulltext_row(host, "front")
    assert front["status"] == "failed" and "no article" in front["error"] and front["full_text"] is None
    pdf = await fulltext_row(host, "pdf")
    assert pdf["status"] == "skipped" and "application/pdf" in pdf["error"]
    for row in (busy, gone, front, pdf):
        assert row["text_source"] == "feed" and row["best_text"] == row["content_text"]

    requests = len(feed_server.requests)
    assert (await run_fulltext(ctx))["claimed"] == 0  # the retry is not due yet
    assert len(feed_server.requests) == requests
    await host.require_pool().execute(
        "UPDATE mod_rss.entry_fulltext SET next_attempt_at = now() WHERE status = 'failed' AND next_attempt_at IS NOT NULL"
    )
    feed_server.route("/busy", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    assert (await run_fulltext(ctx)) | {"seconds": 0} == {"claimed": 1, "done": 1, "seconds": 0}
    busy = await fulltext_row(host, "busy")
    assert busy["status"] == "done" and busy["attempts"] == 2 and busy["error"] is None


async def test_private_network_guard_still_applies(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    await add_feed(host, [make_entry("a", link=feed_server.url("/post"))], full_text=True)
    ctx = await host.context("rss")
    async with poll.make_fetcher({**ctx.settings, "allow_private_networks": False}) as guarded:
        metrics = await run_fulltext(await module_ctx(host, fetcher=guarded))
    assert metrics["failed"] == 1
    assert feed_server.requests == []  # neither robots.txt nor the page was requested
    row = await fulltext_row(host, "a")
    assert row["status"] == "failed" and "blocked" in row["error"] and row["next_attempt_at"] is None


async def test_partial_entries_are_fetched_only_when_enabled(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    feed_server.route("/other", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    await add_feed(
        host,
        [
            make_entry("partial", link=feed_server.url("/post"), partial=True),
            make_entry("complete", link=feed_server.url("/other")),
        ],
    )
    assert (await run_fulltext(await module_ctx(host)))["claimed"] == 0
    metrics = await run_fulltext(await module_ctx(host, fulltext_auto_partial=True))
    assert metrics["claimed"] == 1 and metrics["done"] == 1
    assert (await fulltext_row(host, "partial"))["status"] == "done"
    assert feed_server.requests_to("/other") == []


async def test_a_changed_link_is_fetched_again(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/old", Route(status=404))
    feed_server.route("/new", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    feed = await add_feed(host, [make_entry("a", link=feed_server.url("/old"))], full_text=True)
    ctx = await module_ctx(host)
    await run_fulltext(ctx)
    assert (await fulltext_row(host, "a"))["status"] == "failed"
    async with host.require_pool().acquire() as conn:
        await add_entries(conn, feed, [make_entry("a", link=feed_server.url("/new"), text="Revised.")])
    assert (await run_fulltext(ctx))["done"] == 1
    row = await fulltext_row(host, "a")
    assert row["link"] == feed_server.url("/new") and row["attempts"] == 1 and BLOG_BODY in row["full_text"]


async def test_an_extracted_article_queues_the_entry_for_embedding_again(
    host: Host, feed_server: FeedServer
) -> None:
    feed_server.route("/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    await add_feed(host, [make_entry("a", link=feed_server.url("/post"))], full_text=True)
    pool = host.require_pool()
    await pool.execute("UPDATE mod_rss.entry_embeddings SET status = 'done', attempts = 3")
    await run_fulltext(await module_ctx(host))
    assert (
        await pool.fetchval("SELECT status || ':' || attempts FROM mod_rss.entry_embeddings") == "pending:0"
    )


async def test_robots_txt_is_cached_for_its_ttl(feed_server: FeedServer) -> None:
    feed_server.route("/robots.txt", Route(body=b"User-agent: *\nDisallow: /no/\n"))
    now = [0.0]
    async with Fetcher(user_agent="feedeater/0.1", allow_private_networks=True) as fetcher:
        robots = robots_txt.RobotsCache(fetcher, user_agent="feedeater/0.1", ttl_s=600, clock=lambda: now[0])
        assert await robots.check(feed_server.url("/yes/1")) == ("allowed", None)
        assert (await robots.check(feed_server.url("/no/1")))[0] == "disallowed"
        assert len(feed_server.requests_to("/robots.txt")) == 1
        now[0] = 599.0
        await robots.check(feed_server.url("/yes/2"))
        assert len(feed_server.requests_to("/robots.txt")) == 1
        now[0] = 600.0
        await robots.check(feed_server.url("/yes/3"))
        assert len(feed_server.requests_to("/robots.txt")) == 2
        other = feed_server.url("/no/1", host="localhost")  # another origin has its own robots.txt
        assert (await robots.check(other))[0] == "disallowed"
        assert len(feed_server.requests_to("/robots.txt")) == 3


async def test_one_document_text_a_word_only_in_the_article_is_searched_embedded_and_snippeted(
    host: Host, feed_server: FeedServer, fake_ai: FakeAI
) -> None:
    feed_server.route("/post", Route(body=article("blog_post.html"), headers=HTML_UTF8))
    await add_feed(
        host,
        [make_entry("a", link=feed_server.url("/post"), title="Queues", text="A teaser.")],
        full_text=True,
    )
    ctx = await rss_context(host, fake_ai)
    assert (await search(ctx.pool, AIServices(), SearchQuery("dozens workers"))).results == []
    assert (await run_fulltext(await module_ctx(host)))["done"] == 1

    found = await search(ctx.pool, AIServices(), SearchQuery("dozens workers"))  # text side only
    assert [r.title for r in found.results] == ["Queues"] and "dozens" in found.results[0].snippet
    await embed_all(ctx)
    assert BLOG_BODY in fake_ai.embedded_inputs()[-1]


# -- article metadata (issue 14) -------------------------------------------------------------------
def test_article_metadata_prefers_json_ld() -> None:
    got = fulltext.extract_article(
        article("metadata_jsonld.html"), url="https://x.example/", content_type=None
    )
    assert got.meta == ArticleMeta(
        "Batteries in the basement", "Ines Okafor", datetime(2024, 3, 5, 6, 30, tzinfo=UTC)
    )


def test_article_metadata_from_meta_tags_skips_urls_as_authors() -> None:
    meta = article_metadata(article("metadata_meta.html").decode())
    assert meta == ArticleMeta("Heat pumps, explained", "Sam Lee", datetime(2024, 4, 9, tzinfo=UTC))


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("<title> Only  a title </title><p>x</p>", ArticleMeta("Only a title")),
        (  # OpenGraph alone: og:title over <title>, article:published_time, article:author
            '<title>Site</title><meta property="og:title" content="OG title">'
            '<meta property="article:author" content="Olga Graph">'
            '<meta property="article:published_time" content="2024-02-02T08:00:00+01:00">',
            ArticleMeta("OG title", "Olga Graph", datetime(2024, 2, 2, 7, 0, tzinfo=UTC)),
        ),
        (
            '<article><time datetime="2024-01-02T03:04:05Z">Jan 2</time></article>',
            ArticleMeta(published=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ),
        (
            '<time datetime="2020-01-01">old</time><time pubdate datetime="2024-05-06">x</time>',
            ArticleMeta(published=datetime(2024, 5, 6, tzinfo=UTC)),
        ),
        ('<script type="application/ld+json">{"@type": "Article", "headline": [1]', ArticleMeta()),
        ("", ArticleMeta()),
    ],
)
def test_article_metadata_fallbacks(page: str, expected: ArticleMeta) -> None:
    assert article_metadata(page) == expected


async def test_article_metadata_stands_in_for_what_the_feed_left_out(
    host: Host, feed_server: FeedServer
) -> None:
    feed_server.route("/robots.txt", Route(status=404))
    feed_server.route("/bare", Route(body=article("metadata_jsonld.html"), headers=HTML_UTF8))
    feed_server.route("/full", Route(body=article("metadata_jsonld.html"), headers=HTML_UTF8))
    bare = dataclasses.replace(
        make_entry("bare", link=feed_server.url("/bare")), title="", published=None, date_uncertain=True
    )
    full = dataclasses.replace(make_entry("full", link=feed_server.url("/full")), authors=["Feed Author"])
    await add_feed(host, [bare, full], full_text=True)
    assert (await run_fulltext(await module_ctx(host)))["done"] == 2

    rows = {
        r["guid"]: r
        for r in await host.require_pool().fetch(
            """SELECT e.guid, e.title, e.published, t.best_title, t.best_authors, t.best_published
               FROM mod_rss.entry_text t JOIN mod_rss.entries e ON e.id = t.entry_id"""
        )
    }
    assert (rows["bare"]["title"], rows["bare"]["published"]) == ("", None)  # the entry keeps the feed's
    assert (rows["bare"]["best_title"], rows["bare"]["best_authors"], rows["bare"]["best_published"]) == (
        "Batteries in the basement",
        ["Ines Okafor"],
        datetime(2024, 3, 5, 6, 30, tzinfo=UTC),
    )
    assert (rows["full"]["best_title"], rows["full"]["best_authors"]) == ("Entry full", ["Feed Author"])
    assert rows["full"]["best_published"] == rows["full"]["published"]

    # ...and reading (CLI `rss entries`/`rss show`, the API, the console lists) shows the stand-ins.
    async with host.require_pool().acquire() as conn:
        listed = {r["title"]: r for r in await store.list_entries(conn)}
        shown = await store.get_entry(conn, listed["Batteries in the basement"]["id"])
        feeds_own = await store.get_entry(conn, listed["Entry full"]["id"])
    assert listed["Batteries in the basement"]["published"] == datetime(2024, 3, 5, 6, 30, tzinfo=UTC)
    assert (shown["title"], shown["authors"], shown["published"]) == (
        "Batteries in the basement",
        ["Ines Okafor"],
        datetime(2024, 3, 5, 6, 30, tzinfo=UTC),
    )
    assert (feeds_own["authors"], feeds_own["published"]) == (["Feed Author"], rows["full"]["published"])
