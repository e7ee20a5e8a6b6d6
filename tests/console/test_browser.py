"""The web console in a real browser (Chromium via Playwright) against a running host: every page, the
main flows by mouse and by keyboard alone, login/logout, CSRF rejection, and a hostile feed whose XSS
vectors must never run. Screenshots of the main pages go to test-artifacts/."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from host import settings
from host.console import auth
from modules.rss import MANIFEST as RSS
from tests.console.conftest import Console, screenshot_path
from tests.feedserver import Route
from tests.services import until

expect = pytest.importorskip("playwright.async_api", reason="Playwright for Python is not installed").expect
XSS = "XSS-RAN"  # what any vector that runs would print or show


def _date(hours: float) -> str:
    return format_datetime(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=hours))


def _podcast(title: str, n: int = 3) -> bytes:
    items = "".join(
        f"""<item><guid isPermaLink="false">{title}-{i}</guid><title>{title} episode {i} about lighthouses</title>
        <link>http://example.org/{title}/{i}</link><pubDate>{_date(i * 30)}</pubDate>
        <description><![CDATA[<p>Keepers of the <b>lighthouse</b> number {i}.</p>]]></description>
        <enclosure url="http://example.org/{title}/{i}.mp3" type="audio/mpeg" length="123456"/></item>"""
        for i in range(1, n + 1)
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>{title}</title><link>http://example.org/</link>'
        f"<description>d</description>{items}</channel></rss>"
    ).encode()


HOSTILE_CONTENT = f"""<script>alert('{XSS}')</script><img src=x onerror="alert('{XSS}')">
<svg onload="console.log('{XSS}')"><a href="javascript:alert('{XSS}')">click</a>
<iframe src="javascript:alert('{XSS}')"></iframe><math><mtext><table><mglyph><style><img src=x onerror=alert('{XSS}')>
<a href="data:text/html,&lt;script&gt;alert('{XSS}')&lt;/script&gt;">data</a><body onload="alert('{XSS}')">
<object data="javascript:alert('{XSS}')"></object><form action="javascript:alert('{XSS}')"><button>go</button></form>"""
HOSTILE = (
    '<?xml version="1.0"?><rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>'
    f"<title>&lt;script&gt;console.log('{XSS}')&lt;/script&gt;Hostile</title><link>javascript:alert('{XSS}')</link>"
    "<description>d</description><item><guid>evil-1</guid>"
    f"<title>&lt;img src=x onerror=alert('{XSS}')&gt; lighthouse trap</title>"
    f"<link>javascript:alert('{XSS}')</link><pubDate>{_date(1)}</pubDate>"
    f"<description><![CDATA[{HOSTILE_CONTENT}]]></description>"
    f"<content:encoded><![CDATA[{HOSTILE_CONTENT}]]></content:encoded>"
    f'<enclosure url="javascript:alert(\'{XSS}\')" type="audio/mpeg"/></item></channel></rss>'
).encode()

RSS_HEADERS = {"Content-Type": "application/rss+xml"}


def _serve(console: Console, path: str, body: bytes, **headers: str) -> str:
    console.feeds.route(path, Route(body=body, headers={**RSS_HEADERS, **headers}))
    return console.feeds.url(path)


async def _add_feed(page: Any, url: str, folder: str = "") -> int:
    await page.goto("/rss/feeds")
    await page.fill("#url", url)
    if folder:
        await page.fill("#add-folder", folder)
    await page.click("#add button[type=submit]")
    await page.wait_for_url(re.compile(r"/rss/feeds/\d+"))
    return int(page.url.rsplit("/", 1)[-1].split("?")[0])


async def _until_polled(page: Any, console: Console, feed_id: int) -> None:
    async def polled() -> bool:
        return bool(
            await console.pool.fetchval("SELECT count(*) FROM mod_rss.entries WHERE feed_id = $1", feed_id)
        )

    await until(polled, what=f"feed {feed_id} polled")
    await page.reload()


def _clean(page: Any) -> None:
    w = page.watched
    assert w.dialogs == [], f"a dialog opened: {w.dialogs}"
    assert not [m for m in w.console if XSS in m], f"a script ran: {w.console}"
    assert w.page_errors == [], w.page_errors


async def test_add_feed_watch_it_polled_open_entry(page: Any, console: Console) -> None:
    url = _serve(console, "/podcast.xml", _podcast("Harbour"))
    feed_id = await _add_feed(page, url, folder="Podcasts/Sea")
    await _until_polled(page, console, feed_id)
    assert await page.text_content("#feed-state") == "ok"
    decision = await page.text_content("#decision") or ""
    assert decision.startswith("new-entries"), decision  # the scheduler's reason after a first poll
    history = page.locator("#decisions tbody tr")  # that poll is the schedule history's only row
    assert await history.count() == 1
    assert "HTTP 200" in (await history.first.text_content() or "")
    assert await history.first.locator("td").last.text_content() == decision
    rows = page.locator("#entries tr")
    assert await rows.count() == 3
    assert "episode 1" in (await rows.first.text_content() or "")  # newest first
    assert await page.locator("svg.bars rect").count() == 30
    assert await page.locator("text=Fetch history").count() == 1
    await page.screenshot(path=screenshot_path("feed-detail"), full_page=True)

    await page.goto("/rss/feeds")
    assert await page.locator("a", has_text="Harbour").count() == 1
    assert await page.locator(".tree a", has_text="Sea").count() == 1
    await page.screenshot(path=screenshot_path("feeds"), full_page=True)

    await page.goto(f"/rss/feeds/{feed_id}")
    await page.click("#entries a >> nth=0")
    await page.wait_for_url(re.compile(r"/rss/entries/\d+"))
    frame = page.locator("iframe.content")
    assert await frame.get_attribute("sandbox") == "allow-popups allow-popups-to-escape-sandbox"
    inner = page.frame_locator("iframe.content")
    assert "lighthouse" in (await inner.locator("body").text_content() or "")
    assert await page.locator("audio[controls]").count() == 1
    message_id = await page.text_content("#message-id")
    assert await console.pool.fetchval(
        "SELECT count(*) FROM mod_rss.entries WHERE message_id::text = $1", message_id
    )
    await page.screenshot(path=screenshot_path("entry"), full_page=True)

    await console.pool.execute(  # as intake revises an entry: the trigger keeps the replaced version
        """UPDATE mod_rss.entries SET title = title || ' (updated)', content_text = content_text || ' Now lit.',
                  revision = revision + 1 WHERE message_id::text = $1""",
        message_id,
    )
    await page.reload()
    assert "(updated)" not in (await page.locator("#revisions tbody tr").first.text_content() or "")
    await page.screenshot(path=screenshot_path("entry-revisions"), full_page=True)
    _clean(page)


async def test_infinite_scroll_loads_older_entries(page: Any, console: Console) -> None:
    url = _serve(console, "/long.xml", _podcast("Long", n=45))
    feed_id = await _add_feed(page, url)
    await _until_polled(page, console, feed_id)
    assert await page.locator("#entries tr").count() == 30
    await page.locator("a.more").scroll_into_view_if_needed()
    await expect(page.locator("#entries tr")).to_have_count(45)  # CSP forbids eval: no wait_for_function
    assert await page.locator("a.more").count() == 0
    _clean(page)


async def test_discovery_offers_the_page_feeds(page: Any, console: Console) -> None:
    first = _serve(console, "/a.xml", _podcast("Alpha", 1))
    second = _serve(console, "/b.xml", _podcast("Beta", 1))
    html = (
        f'<html><head><link rel="alternate" type="application/rss+xml" title="Alpha feed" href="{first}">'
        f'<link rel="alternate" type="application/rss+xml" title="Beta feed" href="{second}"></head><body>hi</body></html>'
    )
    console.feeds.route("/site", Route(body=html.encode(), headers={"Content-Type": "text/html"}))
    await page.goto("/rss/feeds")
    await page.fill("#url", console.feeds.url("/site"))
    await page.click("#add button[type=submit]")
    await page.wait_for_selector("fieldset")
    assert await page.locator("input[type=radio][name=url]").count() == 2
    await page.check("label:has-text('Beta feed')")
    await page.click("#add button[type=submit]")
    await page.wait_for_url(re.compile(r"/rss/feeds/\d+"))
    assert await console.pool.fetchval("SELECT count(*) FROM mod_rss.feeds WHERE url = $1", second) == 1
    assert await console.pool.fetchval("SELECT count(*) FROM mod_rss.feeds WHERE url = $1", first) == 0


async def test_opml_import_per_line_and_export(page: Any, console: Console) -> None:
    good = _serve(console, "/opml-good.xml", _podcast("Opml", 1))
    opml = (
        '<?xml version="1.0"?><opml version="2.0"><head/><body><outline text="News">'
        f'<outline type="rss" text="Good" xmlUrl="{good}"/>'
        '<outline type="rss" text="Bad" xmlUrl="http://example.org:99999/feed"/></outline></body></opml>'
    ).encode()
    await page.goto("/rss/feeds")
    await page.set_input_files("#opml", files=[{"name": "subs.opml", "mimeType": "text/xml", "buffer": opml}])
    await page.click("#import button[type=submit]")
    result = page.locator("#import-result")
    await result.wait_for()
    text = await result.text_content() or ""
    assert "1 added" in text and "1 refused" in text
    rows = result.locator("tbody tr")
    assert "added as feed" in (await rows.nth(0).text_content() or "")
    assert "refused" in (await rows.nth(1).text_content() or "")
    await page.screenshot(path=screenshot_path("opml-import"), full_page=True)
    async with page.expect_download() as download_info:
        await page.click("text=Export OPML")
    download = await download_info.value
    exported = Path(await download.path()).read_text(encoding="utf-8")
    assert good in exported and 'text="News"' in exported


async def test_feed_settings_validation_and_remove(page: Any, console: Console) -> None:
    url = _serve(console, "/settings-feed.xml", _podcast("Knobs", 1))
    feed_id = await _add_feed(page, url)
    await page.fill("#fs-interval", "abc")
    await page.click("#settings button[type=submit]")
    assert await page.locator("#settings .error", has_text="not a number").count() == 1
    assert await page.get_attribute("#fs-interval", "aria-invalid") == "true"
    await page.fill("#fs-interval", "30")
    await page.click("#settings button[type=submit]")
    await page.wait_for_url(re.compile(r"saved=1"))
    assert (
        await console.pool.fetchval("SELECT interval_override_s FROM mod_rss.feeds WHERE id = $1", feed_id)
        == 1800
    )
    assert "fixed interval 30 min" in (await page.text_content("#decision") or "")

    await page.click("text=Remove…")
    await page.wait_for_url(f"**/rss/feeds/{feed_id}/remove")
    await page.click("button.danger")
    await page.wait_for_url(re.compile(r"removed="))
    assert await console.pool.fetchval("SELECT count(*) FROM mod_rss.feeds WHERE id = $1", feed_id) == 0


async def test_search_with_filters_and_mode(page: Any, console: Console) -> None:
    url = _serve(console, "/search.xml", _podcast("Beacon", 2))
    feed_id = await _add_feed(page, url, folder="Lights")
    await _until_polled(page, console, feed_id)
    await page.goto("/rss/search")
    await page.fill("#q", "lighthouse")
    await page.select_option("#s-folder", "Lights")
    await page.click("form[role=search] button")
    await page.wait_for_selector("#search-mode")
    mode = await page.text_content("#search-mode") or ""
    assert "Mode:" in mode and "text" in mode
    results = page.locator("ol.results li")
    assert await results.count() == 2
    assert await results.first.locator("mark").count() >= 1
    for text in await results.all_text_contents():
        assert "Beacon" in text
    await page.screenshot(path=screenshot_path("search"), full_page=True)
    # episodes 30 h and 60 h old: since the day 3 days back, until the whole of today, at any hour
    since, until = (datetime.now(UTC) - timedelta(days=3)).date(), datetime.now(UTC).date()
    await page.fill("#s-since", since.isoformat())
    await page.fill("#s-until", until.isoformat())
    await page.click("form[role=search] button")
    await page.wait_for_url(re.compile(r"until="))
    assert await results.count() == 2
    assert (await page.input_value("#s-since"), await page.input_value("#s-until")) == (
        since.isoformat(),
        until.isoformat(),
    )
    await page.fill("#s-until", (since - timedelta(days=1)).isoformat())
    await page.click("form[role=search] button")
    await expect(page.locator("p.error", has_text="is before since")).to_have_count(1)
    await page.fill("#s-until", "")
    await page.fill("#s-feed", "999999")
    await page.click("form[role=search] button")
    assert await page.locator("p.error", has_text="does not exist").count() == 1


async def test_settings_form_inline_errors_and_write_only_secret(page: Any, console: Console) -> None:
    async with console.pool.acquire() as conn:
        await settings.store(conn, RSS, "openai_api_key", "sk-very-secret-value")
    await page.goto("/settings")
    html = await page.content()
    assert "sk-very-secret-value" not in html
    assert await page.input_value("#rss-openai_api_key") == ""
    await page.fill("#rss-poll_batch", "-5")
    await page.click("#module-rss button[type=submit]")
    assert await page.locator("#module-rss .error", has_text="below the minimum").count() == 1
    await page.fill("#rss-poll_batch", "77")
    await page.click("#module-rss button[type=submit]")
    await page.wait_for_url(re.compile(r"saved=rss"))
    async with console.pool.acquire() as conn:
        stored = await settings.load_stored(conn, "rss")
    assert stored["poll_batch"] == 77
    assert stored["openai_api_key"] == "sk-very-secret-value"  # an empty secret field keeps it
    await page.screenshot(path=screenshot_path("settings"))


async def test_live_bus_shows_events_as_published(page: Any, console: Console) -> None:
    await page.goto("/live?subject=feedeater.rss.messageCreated")
    await expect(page.locator("#live-state")).to_have_text(re.compile("^Connected"))
    _serve(console, "/live.xml", _podcast("Wire", 2))
    async with console.pool.acquire() as conn:
        from modules.rss import store

        row, _ = await store.add_feed(conn, url=console.feeds.url("/live.xml"), title="Wire")
    from modules.rss.ingest import poll

    await poll.poll_now(await console.host.context("rss"), [row.id])
    await page.wait_for_selector("#live tr")
    text = await page.locator("#live").text_content() or ""
    assert "feedeater.rss.messageCreated" in text and "Wire" in text
    await page.screenshot(path=screenshot_path("live-bus"))
    _clean(page)


async def test_overview_contexts_and_digests_pages(page: Any, console: Console) -> None:
    await page.goto("/")
    text = await page.text_content("main") or ""
    pg_version = await console.pool.fetchval("SHOW server_version")
    nats_version = console.host.nc.connected_server_version if console.host.nc else None
    assert pg_version in text and f"{nats_version.major}.{nats_version.minor}." in text
    assert "rss" in text and "poll" in text and "events/s" in text
    assert await page.locator("svg.spark").count() == 2
    await page.screenshot(path=screenshot_path("overview"), full_page=True)
    for path, heading in (("/contexts", "Contexts"), ("/digest/digests", "Digests")):
        await page.goto(path)
        assert await page.text_content("h1") == heading
    _clean(page)


async def test_api_docs_work_offline_under_the_console_policy(page: Any, console: Console) -> None:
    """Issue #20: /api/docs loaded Swagger UI from a CDN (blank offline) and started it with an inline
    script the console's CSP refuses. Every request the page makes stays on the host."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    await page.goto("/api/docs")
    from playwright.async_api import expect

    await expect(page.locator(".opblock-tag", has_text="rss").first).to_be_visible(timeout=30_000)
    await expect(page.locator(".opblock-summary-path", has_text="/api/v1/feeds").first).to_be_visible()
    assert requested and all(url.startswith(console.url) for url in requested), requested
    assert not [m for m in page.watched.console if "Content Security Policy" in m], page.watched.console
    _clean(page)


async def test_hostile_feed_never_runs_script(page: Any, console: Console) -> None:
    url = _serve(console, "/hostile.xml", HOSTILE)
    feed_id = await _add_feed(page, url)
    await _until_polled(page, console, feed_id)
    await page.goto("/rss/feeds")
    await page.goto(f"/rss/feeds/{feed_id}")
    await page.click("#entries a >> nth=0")
    await page.wait_for_url(re.compile(r"/rss/entries/\d+"))
    body = page.frame_locator("iframe.content").locator("body")
    await body.wait_for(state="attached")
    for link in await page.locator("a[href^='javascript:']").all():
        raise AssertionError(f"a javascript: link reached the page: {await link.get_attribute('href')}")
    await page.goto("/rss/search?q=lighthouse+trap")
    await page.goto("/live")
    assert await page.evaluate("typeof window.__xss") == "undefined"
    _clean(page)


async def test_csrf_rejected_and_login_logout(page: Any, console: Console) -> None:
    await page.goto("/settings")
    # A POST without the form's token, and one with another session's token: both 403, nothing stored.
    for token in ("", "0" * 40):
        res = await page.request.post("/settings/rss", form={"csrf": token, "poll_batch": "5"})
        assert res.status == 403
        assert "CSRF" in await res.text()
    async with console.pool.acquire() as conn:
        assert (await settings.load_stored(conn, "rss")).get("poll_batch") != 5
        await auth.set_password(conn, "correct horse battery")
    try:
        await page.goto("/rss/feeds")
        await page.wait_for_url(re.compile(r"/login\?next=/rss/feeds"))
        await page.fill("#password", "wrong password")
        await page.click("button[type=submit]")
        assert await page.locator(".error", has_text="Wrong password").count() == 1
        await page.fill("#password", "correct horse battery")
        await page.click("button[type=submit]")
        await page.wait_for_url("**/rss/feeds")
        cookie = next(c for c in await page.context.cookies() if c["name"] == "fe_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        await page.click("text=Log out")
        await page.wait_for_url("**/login")
        await page.goto("/")
        await page.wait_for_url(re.compile(r"/login"))
    finally:
        async with console.pool.acquire() as conn:
            await conn.execute("UPDATE host.console_auth SET password_hash = NULL")


async def _tab_to(page: Any, selector: str, limit: int = 60) -> None:
    """Press Tab until the element matching `selector` has the focus (keyboard only)."""
    for _ in range(limit):
        await page.keyboard.press("Tab")
        if await page.evaluate(
            "(s) => document.activeElement && document.activeElement.matches(s)", selector
        ):
            return
    raise AssertionError(f"{selector} never got the focus by Tab")


async def test_keyboard_only_main_flows(page: Any, console: Console) -> None:
    url = _serve(console, "/keys.xml", _podcast("Keys", 2))
    await page.goto("/")
    await _tab_to(page, "a.skip")
    await _tab_to(page, "nav a[href='/rss/feeds']")
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/rss/feeds")
    await _tab_to(page, "#url")
    await page.keyboard.type(url)
    await page.keyboard.press("Enter")  # submits the add form
    await page.wait_for_url(re.compile(r"/rss/feeds/\d+"))
    feed_id = int(page.url.rsplit("/", 1)[-1].split("?")[0])
    await _until_polled(page, console, feed_id)
    await _tab_to(page, "#entries a")
    await page.keyboard.press("Enter")
    await page.wait_for_url(re.compile(r"/rss/entries/\d+"))
    await _tab_to(page, "nav a[href='/rss/search']")
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/rss/search")
    # The query field takes the focus on arrival (autofocus, applied after the load event: wait for it,
    # or the first keystrokes go to the page).
    await page.wait_for_function("document.activeElement && document.activeElement.id === 'q'")
    await page.keyboard.type("lighthouses")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("ol.results li a")
    _clean(page)
