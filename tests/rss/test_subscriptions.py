"""Subscriptions: `rss add` validation and discovery, OPML import/export, per-feed overrides, CLI errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from host.errors import UserError
from host.runtime import Host
from modules.rss import store
from modules.rss.service.feeds import parse_assignment
from modules.rss.subscriptions import subscribe
from modules.rss.subscriptions.opml import parse_opml
from tests.feedserver import FeedServer, Route

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom Site</title><link href="http://example.org/"/>
<id>urn:x</id><updated>2026-01-01T00:00:00Z</updated>
<entry><id>urn:1</id><title>One</title><updated>2026-01-01T00:00:00Z</updated><link href="http://example.org/1"/></entry></feed>"""


async def feed_count(host: Host) -> int:
    return int(await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.feeds"))


async def test_add_validates_by_fetching_and_stores_metadata(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/atom", Route(body=ATOM, headers={"Content-Type": "application/atom+xml"}))
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        row, created = await subscribe.subscribe(
            conn, ctx.state["fetcher"], feed_server.url("/atom"), folder="Tech/Py", interval_minutes=30
        )
        again, created_again = await subscribe.subscribe(conn, ctx.state["fetcher"], feed_server.url("/atom"))
    assert created and not created_again and again.id == row.id
    assert (row.title, row.site_url, row.folder, row.interval_override_s, row.format) == (
        "Atom Site",
        "http://example.org/",
        "Tech/Py",
        1800,
        "atom1.0",
    )


async def test_add_discovers_the_feed_behind_a_web_page(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/atom", Route(body=ATOM, headers={"Content-Type": "application/atom+xml"}))
    page = b'<html><head><link rel="alternate" type="application/atom+xml" title="Posts" href="/atom"></head><body>hi</body></html>'
    feed_server.route("/blog", Route(body=page, headers={"Content-Type": "text/html; charset=utf-8"}))
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        row, _ = await subscribe.subscribe(conn, ctx.state["fetcher"], feed_server.url("/blog"))
    assert row.url == feed_server.url("/atom")


async def test_a_page_with_several_feeds_lists_the_choices(host: Host, feed_server: FeedServer) -> None:
    page = (
        b'<html><head><link rel="alternate" type="application/rss+xml" href="/rss" title="RSS">'
        b'<link rel="alternate" type="application/atom+xml" href="/atom" title="Atom"></head></html>'
    )
    feed_server.route("/blog", Route(body=page, headers={"Content-Type": "text/html"}))
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        with pytest.raises(UserError) as err:
            await subscribe.subscribe(conn, ctx.state["fetcher"], feed_server.url("/blog"))
    assert feed_server.url("/rss") in str(err.value) and feed_server.url("/atom") in str(err.value)
    assert await feed_count(host) == 0


async def test_page_without_advertised_feed_tries_common_paths(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=ATOM))
    feed_server.route(
        "/", Route(body=b"<html><body>home</body></html>", headers={"Content-Type": "text/html"})
    )
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        row, _ = await subscribe.subscribe(conn, ctx.state["fetcher"], feed_server.url("/"))
    assert row.url == feed_server.url("/feed")


async def test_autodiscovery_honours_robots_txt(host: Host, feed_server: FeedServer) -> None:
    """Seed 001 §4.7: guessed feed paths robots.txt disallows are not fetched, and a page it disallows is
    not read for feeds; a feed URL given directly is fetched as a reader fetches it."""
    home = Route(body=b"<html><body>home</body></html>", headers={"Content-Type": "text/html"})
    feed_server.route("/", home)
    feed_server.route("/rss", Route(body=ATOM))  # a common path, but robots.txt keeps us off it
    feed_server.route("/robots.txt", Route(body=b"User-agent: feedeater\nDisallow: /rss\n"))
    ctx = await host.context("rss")
    with pytest.raises(UserError, match="advertises no feed"):
        await subscribe.validate(ctx.state["fetcher"], feed_server.url("/"))
    assert "/rss" not in [r.path for r in feed_server.requests]
    assert (await subscribe.validate(ctx.state["fetcher"], feed_server.url("/rss"))).feed.title == "Atom Site"

    feed_server.route("/robots.txt", Route(body=b"User-agent: *\nDisallow: /\n"))
    page = b'<html><head><link rel="alternate" type="application/atom+xml" href="/rss"></head></html>'
    feed_server.route("/blog", Route(body=page, headers={"Content-Type": "text/html"}))
    with pytest.raises(UserError, match="robots.txt keeps feed readers from looking into it"):
        await subscribe.validate(ctx.state["fetcher"], feed_server.url("/blog"))


async def test_a_feed_without_entries_is_kept_and_the_user_is_told(
    host: Host, feed_server: FeedServer
) -> None:
    """Seed 000 refuses a feed without entries; a new podcast's feed often has none yet (a departure)."""
    empty = b"<rss version='2.0'><channel><title>Coming soon</title><link>http://example.org/</link></channel></rss>"
    feed_server.route("/new", Route(body=empty))
    ctx = await host.context("rss")
    validated = await subscribe.validate(ctx.state["fetcher"], feed_server.url("/new"))
    assert validated.notice is not None and "no entries yet" in validated.notice
    async with host.require_pool().acquire() as conn:
        row, created = await subscribe.subscribe(
            conn, ctx.state["fetcher"], validated.url, validated=validated
        )
    assert created and row.title == "Coming soon"
    feed_server.route("/full", Route(body=ATOM))
    assert (await subscribe.validate(ctx.state["fetcher"], feed_server.url("/full"))).notice is None


@pytest.mark.parametrize(
    ("path", "route", "needle"),
    [
        ("/missing", Route(status=404), "HTTP 404"),
        (
            "/junk",
            Route(body=b"this is plain text, not a feed", headers={"Content-Type": "text/plain"}),
            "not an RSS, Atom or JSON feed",
        ),
        (
            "/page",
            Route(body=b"<html><body>no feeds here</body></html>", headers={"Content-Type": "text/html"}),
            "advertises no feed",
        ),
    ],
)
async def test_invalid_feeds_are_one_clear_error_and_store_nothing(
    host: Host, feed_server: FeedServer, path: str, route: Route, needle: str
) -> None:
    feed_server.route(path, route)
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        with pytest.raises(UserError, match=needle):
            await subscribe.subscribe(conn, ctx.state["fetcher"], feed_server.url(path))
    assert await feed_count(host) == 0


async def test_non_http_urls_are_refused(host: Host) -> None:
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        for url in ("file:///etc/passwd", "data:text/xml,<rss/>", "ftp://example.org/feed", "not a url"):
            with pytest.raises(UserError):
                await subscribe.subscribe(conn, ctx.state["fetcher"], url)
    assert await feed_count(host) == 0


async def test_opml_import_is_idempotent_and_export_round_trips(host: Host, local_fixtures: Path) -> None:
    data = (local_fixtures / "opml" / "nested-3-levels.opml").read_bytes()
    expected = parse_opml(data)
    async with host.require_pool().acquire() as conn:
        first = await subscribe.import_opml(conn, data, allow_private_networks=False)
        assert (len(first.added), first.already_present, first.refused) == (len(expected), 0, [])
        again = await subscribe.import_opml(conn, data, allow_private_networks=False)
        assert (again.added, again.already_present) == ([], len(expected))
        exported = await subscribe.export(conn)
    assert sorted(parse_opml(exported), key=lambda f: f.url) == sorted(expected, key=lambda f: f.url)
    assert any(f.folder and f.folder.count("/") >= 2 for f in expected)  # the fixture really nests folders


def test_per_feed_overrides_are_validated() -> None:
    assert parse_assignment("interval=30") == ("interval", 1800)
    assert parse_assignment("interval=default") == ("interval", None)
    assert parse_assignment("enabled=false") == ("enabled", False)
    assert parse_assignment("folder=") == ("folder", None)
    assert parse_assignment("lookback=24") == ("lookback", 24)
    assert parse_assignment("min_interval=60") == ("min_interval", 3600)
    assert parse_assignment("max_interval=default") == ("max_interval", None)
    assert parse_assignment("push_only=yes") == ("push_only", True)
    assert parse_assignment("backfill=off") == ("backfill", False)
    for bad in (
        "lookback=500",
        "interval=abc",
        "colour=red",
        "enabled=maybe",
        "retention=0",
        "push_only=maybe",
    ):
        with pytest.raises(UserError):
            parse_assignment(bad)


async def test_set_overrides_and_list_by_folder(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        a, _ = await store.add_feed(conn, url="http://example.org/a", folder="News")
        await store.add_feed(conn, url="http://example.org/b", folder="News/World")
        await store.add_feed(conn, url="http://example.org/c", folder="Tech")
        updated = await store.update_feed(
            conn, a.id, dict([parse_assignment("retention=10"), parse_assignment("enabled=false")])
        )
        assert updated.retention_days == 10 and updated.enabled is False
        assert [r["url"] for r in await store.list_feeds(conn, "News")] == [
            "http://example.org/a",
            "http://example.org/b",
        ]
        with pytest.raises(UserError, match="no feed"):
            await store.get_feed(conn, 999)


def test_cli_user_errors_are_one_line(tmp_path: Path, database_url: str, nats_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_")}
    env.update(FEEDEATER_HOME=str(tmp_path), FEEDEATER_DATABASE_URL=database_url, FEEDEATER_NATS_URL=nats_url)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "host.cli", "rss", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    broken = tmp_path / "broken.opml"
    broken.write_bytes(b"<html><body>this is not an outline</body></html>")
    for args in (
        ["add", "file:///etc/passwd"],
        ["show", "42"],
        ["set", "1", "colour=red"],
        ["import", str(tmp_path / "nope.opml")],
        ["import", str(broken)],
    ):
        res = run(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.startswith("feedeater: error: ") and "Traceback" not in res.stderr, res.stderr
    res = run("list", "--json")
    assert res.returncode == 0 and json.loads(res.stdout) == []


OPML_WITH_BAD_URLS = b"""<?xml version="1.0"?>
<opml version="2.0"><head><title>t</title></head><body>
  <outline type="rss" text="ok" xmlUrl="HTTP://Example.ORG:80/feed.xml#top"/>
  <outline type="rss" text="metadata" xmlUrl="http://169.254.169.254/latest/meta-data/"/>
  <outline type="rss" text="loopback" xmlUrl="http://0x7f.1/feed"/>
  <outline type="rss" text="file" xmlUrl="file:///etc/passwd"/>
  <outline type="rss" text="creds" xmlUrl="http://user:pw@example.org/feed"/>
</body></opml>"""


async def test_opml_import_vets_every_url_as_rss_add_does(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        got = await subscribe.import_opml(conn, OPML_WITH_BAD_URLS, allow_private_networks=False)
        urls = [r["url"] for r in await conn.fetch("SELECT url FROM mod_rss.feeds")]
    assert len(got.added) == 1 and urls == ["http://example.org/feed.xml"]  # normalized like `rss add`
    reasons = dict(got.refused)
    assert set(reasons) == {
        "http://169.254.169.254/latest/meta-data/",
        "http://0x7f.1/feed",
        "http://user:pw@example.org/feed",
    }  # file:// never gets this far: the OPML reader keeps only web URLs
    assert (
        "`feedeater settings set rss.allow_private_networks true`" in reasons["http://0x7f.1/feed"]
    )  # as rss add
    assert "credentials" in reasons["http://user:pw@example.org/feed"]


async def test_opml_import_of_private_addresses_follows_the_setting(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        got = await subscribe.import_opml(conn, OPML_WITH_BAD_URLS, allow_private_networks=True)
    assert len(got.added) == 3 and len(got.refused) == 1
