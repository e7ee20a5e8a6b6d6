"""Access without a browser, through the ASGI app: a console bound beyond loopback with no password is
read-only (pages yes, forms no); with a password every page asks for a login first. And the entry page's
earlier revisions, rendered from what the revision trigger kept, and its title and authors from the article
page when the feed had none."""

from __future__ import annotations

import dataclasses
import re

import asyncpg
import httpx
from fastapi import FastAPI

from host import streams
from host.console import app as console_app
from host.console import auth
from host.runtime import Host


async def _client(host: Host, bind: str, *, rss_pages: bool = False) -> httpx.AsyncClient:
    host.config = dataclasses.replace(host.config, http_host=bind)
    app = FastAPI()
    pages = []
    if rss_pages:
        ctx = await host.context("rss")
        pages = [(ctx, r) for r in host.specs["rss"].manifest.routes if r.pages]
    await console_app.mount(app, host, pages)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test")


async def test_network_console_without_password_is_read_only(host: Host) -> None:
    async with await _client(host, "0.0.0.0") as client:
        page = await client.get("/settings")
        assert page.status_code == 200 and "read-only" in page.text
        assert "Secure" in page.headers["set-cookie"]  # off loopback the cookie is Secure
        assert "Save rss" not in page.text and " disabled" in page.text  # inputs shown, no way to save
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        # Even a well-formed post with a valid token changes nothing.
        res = await client.post("/settings/rss", data={"csrf": csrf[1], "poll_batch": "5"})
        assert res.status_code == 403 and "read-only" in res.text


async def test_password_sends_every_page_to_login(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        await auth.set_password(conn, "long enough password")
    async with await _client(host, "127.0.0.1") as client:
        for path in ("/", "/settings", "/live", "/contexts"):
            res = await client.get(path)
            assert res.status_code == 303 and res.headers["location"] == f"/login?next={path}"
        login = await client.get("/login")
        assert login.status_code == 200 and "content-security-policy" in login.headers
        assert "script-src 'self'" in login.headers["content-security-policy"]
        assert "unsafe-inline" not in login.headers["content-security-policy"]


async def _entry(pool: asyncpg.Pool, url: str, title: str, text: str) -> int:
    """A feed with one stored entry (as intake stores it); returns the entry id."""
    feed = await pool.fetchval("INSERT INTO mod_rss.feeds (url, title) VALUES ($1, 'F') RETURNING id", url)
    entry: int = await pool.fetchval(
        """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, content_text, word_count,
                                        content_hash, first_seen, last_seen, effective_at)
           VALUES ($1, 'g', 'guid', gen_random_uuid(), $2, $3, 5, 'h1', now(), now(), now()) RETURNING id""",
        feed,
        title,
        text,
    )
    return entry


async def test_entry_page_shows_earlier_revisions_and_what_changed(host: Host) -> None:
    pool = host.require_pool()
    entry = await _entry(pool, "https://f.example/r", "Storm nears", "a storm nears the coast")
    for title, text, digest in (
        ("Storm hits coast", "the storm hit the coast at dawn", "h2"),
        ("Storm hits coast", "the storm hit the north coast at dawn today", "h3"),
    ):
        await pool.execute(  # as intake revises an entry
            """UPDATE mod_rss.entries SET title = $2, content_text = $3, content_hash = $4,
                      revision = revision + 1 WHERE id = $1""",
            entry,
            title,
            text,
            digest,
        )
    await pool.execute(
        "UPDATE mod_rss.entries SET seen_count = seen_count + 1 WHERE id = $1", entry
    )  # no bump
    async with await _client(host, "127.0.0.1", rss_pages=True) as client:
        page = await client.get(f"/rss/entries/{entry}")
    assert page.status_code == 200, page.text
    assert "revised 2 times" in page.text
    rows = re.findall(
        r'<td class="num">(\d+)</td><td>[^<]*</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>', page.text
    )
    assert rows == [
        ("2", "Storm hits coast", "−0 words +2 words"),
        ("1", "<del>Storm nears</del>", "title, −2 words +4 words"),
    ]
    assert "a storm nears the coast" in page.text  # the old text, behind a disclosure


async def test_entry_page_takes_title_and_author_from_the_article_when_the_feed_has_none(host: Host) -> None:
    pool = host.require_pool()
    entry = await _entry(pool, "https://f.example/m", "", "a link and nothing else")
    await pool.execute(  # as the fulltext job stores an extracted page (article_meta.py)
        """INSERT INTO mod_rss.entry_fulltext (entry_id, link, status, full_text, article_title, article_author)
           VALUES ($1, 'https://f.example/m/1', 'done', 'the article', 'Batteries in the basement', 'Ines Okafor')""",
        entry,
    )
    async with await _client(host, "127.0.0.1", rss_pages=True) as client:
        page = await client.get(f"/rss/entries/{entry}")
    assert page.status_code == 200, page.text
    assert "<title>Batteries in the basement" in page.text and "(untitled)" not in page.text
    assert "· Ines Okafor" in page.text


async def test_feeds_pages_say_a_due_feed_is_due_not_polled_minutes_ago(host: Host) -> None:
    from modules.rss import store

    pool = host.require_pool()
    async with pool.acquire() as conn:
        due, _ = await store.add_feed(conn, url="https://due.example/feed")
        later, _ = await store.add_feed(conn, url="https://later.example/feed")
    await pool.execute(
        "UPDATE mod_rss.poll_state SET next_poll_at = now() - interval '3 minutes' WHERE feed_id = $1", due.id
    )
    await pool.execute(
        "UPDATE mod_rss.poll_state SET next_poll_at = now() + interval '2 hours 1 minute' WHERE feed_id = $1",
        later.id,
    )
    async with await _client(host, "127.0.0.1", rss_pages=True) as client:
        listing = (await client.get("/rss/feeds")).text
        page = (await client.get(f"/rss/feeds/{due.id}")).text
    assert re.search(r"due\.example/feed</a></td>.*?<td>due now</td>", listing, re.S)
    assert re.search(r"later\.example/feed</a></td>.*?<td>in 2 h</td>", listing, re.S)
    assert '<th scope="row">Next poll</th><td>due now</td>' in page
    assert "3 min ago" not in listing + page


async def test_overview_says_when_jobs_run_in_words(host: Host) -> None:
    async with await _client(host, "127.0.0.1") as client:
        page = (await client.get("/")).text
    assert re.search(r"<td>cleanup</td><td>daily at 03:17 UTC</td>", page)  # rss.cleanup: "17 3 * * *"
    assert re.search(r"<td>poll</td><td>every 30 s</td>", page)
    assert "17 3 * * *" not in page


async def test_overview_names_skipped_plugins_and_counts_dead_letters(host: Host) -> None:
    """Issue #23: a plugin that could not be loaded, and the dead letters waiting, on the overview."""
    assert host.js is not None
    await host.js.purge_stream(streams.DLQ)  # the session's NATS: earlier tests' dead letters
    await host.js.publish("feedeater.dlq.kwalert.alerts", b"{}", stream=streams.DLQ)
    host.skipped["kwalert"] = "entry point kwalert = kw:MODULE cannot be imported: <b>no</b> module"
    async with await _client(host, "127.0.0.1") as client:
        page = (await client.get("/")).text
    assert "module kwalert skipped: entry point kwalert = kw:MODULE cannot be imported: &lt;b&gt;no" in page
    assert re.search(r"Dead letters</th><td>1</td><td class=\"bad\">feedeater bus dlq list", page)


async def test_overview_and_settings_name_the_hosts_that_must_restart(host: Host) -> None:
    """Issue #20: a setting only a new process applies (tap.directory) is named with each running host
    that still runs without it; the settings page marks such settings."""
    await host.require_pool().execute(
        """INSERT INTO host.hosts (host_id, started_at, settings_at, restart_needed)
           VALUES ('box-1', now() - interval '2 hours', now(), '{tap.directory}'),
                  ('box-2', now(), now(), '{}')"""
    )
    async with await _client(host, "127.0.0.1") as client:
        overview = (await client.get("/")).text
        settings = (await client.get("/settings")).text
    assert re.search(
        r"box-1</th><td>started 2 h ago</td>\s*<td class=\"bad\">must restart to apply tap.directory",
        overview,
    )
    assert re.search(r"box-2</th><td>started 0 s ago</td>\s*<td class=\"ok\">settings applied", overview)
    assert "Host box-1 must restart to apply tap.directory." in settings
    assert "applies at restart" in settings and "box-2 must restart" not in settings


async def test_a_browser_gets_an_html_404_and_machines_json(host: Host) -> None:
    """Issue #20: the console's 404s were JSON."""
    html = {"Accept": "text/html,application/xhtml+xml"}
    async with await _client(host, "127.0.0.1") as client:
        page = await client.get("/no/such/page", headers=html)
        machine = await client.get("/no/such/page")
        api = await client.get("/api/v1/nothing-here", headers=html)
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "<h1>Error 404</h1>" in page.text and "Back to the overview" in page.text
    assert "content-security-policy" in page.headers
    assert machine.status_code == api.status_code == 404
    assert machine.headers["content-type"] == api.headers["content-type"] == "application/json"


async def test_entry_page_says_why_the_entry_was_not_announced(host: Host) -> None:
    """Issue 27: the entry page gives `feedeater rss why`'s explanation (tests/rss/test_explain.py)."""
    pool = host.require_pool()
    entry = await _entry(pool, "https://f.example/why", "Last week's news", "old news")
    await pool.execute(  # as intake records it (rss migration 0019)
        """UPDATE mod_rss.entries SET published = now() - interval '5 days', announced = false,
                  intake_reason = 'before-cutoff', fetch_id = 41, last_fetch_id = 42 WHERE id = $1""",
        entry,
    )
    async with await _client(host, "127.0.0.1", rss_pages=True) as client:
        page = await client.get(f"/rss/entries/{entry}")
    assert page.status_code == 200, page.text
    why = page.text[page.text.index('<section class="card" id="why">') :]
    assert "Not announced in real time</h2>" in why and "before the cutoff" in why
    assert "in fetch 41" in why and "in fetch 42" in why and "rss why" in why
