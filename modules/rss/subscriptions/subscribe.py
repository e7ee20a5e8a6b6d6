"""Subscribing: validate a URL by fetching and parsing it, discovering feeds behind HTML pages; OPML in and out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import asyncpg
import httpx

from host.errors import UserError
from host.net.fetcher import Fetcher, FetchResult
from host.net.netguard import (
    BlockedAddressError,
    BlockedURLError,
    check_url,
    is_public_address,
    parse_ip_host,
)
from modules.rss import store
from modules.rss.model import Feed
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.robots import RobotsCache
from modules.rss.subscriptions.discover import (
    COMMON_FEED_PATHS,
    DiscoveredFeed,
    discover_feeds,
    looks_like_html,
)
from modules.rss.subscriptions.opml import OpmlFeed, export_opml, parse_opml


@dataclass(frozen=True, slots=True)
class Validated:
    url: str  # the feed URL to store (after permanent redirects and discovery)
    feed: Feed

    @property
    def notice(self) -> str | None:
        """What the user should know although the feed was accepted. Seed 000 refuses a feed without
        entries; a new podcast's feed is often empty, so it is kept, with this said."""
        if self.feed.entries:
            return None
        return (
            "the feed has no entries yet: it is kept and polled, and new entries arrive as it publishes them"
        )


PRIVATE_HINT = (
    "feeds on loopback or private addresses are refused to protect your network; to subscribe to feeds on "
    "this machine or an intranet run `feedeater settings set rss.allow_private_networks true`"
)


class SeveralFeeds(UserError):
    """The URL is a page advertising several feeds: the user picks one (`found`)."""

    def __init__(self, url: str, found: list[DiscoveredFeed]) -> None:
        choices = "\n".join(f"  {f.url}" + (f"  ({f.title})" if f.title else "") for f in found)
        super().__init__(
            f"{url} is a web page advertising {len(found)} feeds:\n{choices}\n", "add one of these URLs"
        )
        self.found = found


def fetch_failure(res: FetchResult) -> str:
    """Why a fetch gave no feed, in words: the transport error, or the HTTP status."""
    return res.error or f"HTTP {res.status}"


async def _get(fetcher: Fetcher, url: str) -> FetchResult:
    res = await fetcher.fetch(url)
    if res.status == 0:
        blocked = res.error_kind == "blocked" and "address" in (res.error or "")
        raise UserError(
            f"cannot fetch {url}: {res.error}", PRIVATE_HINT if blocked else "check the URL, or the network"
        )
    if res.status != 200 or res.body is None:
        raise UserError(
            f"{url} answered HTTP {res.status}", "check the URL; only a 200 response can be subscribed"
        )
    return res


def _parse(res: FetchResult) -> Feed:
    assert res.body is not None
    try:
        return parse_feed(res.body, url=res.url, content_type=res.headers.get("content-type"))
    except FeedParseError as exc:
        raise UserError(
            f"{res.url} is not an RSS, Atom or JSON feed: {exc}", "give the URL of the feed itself"
        ) from None


DISCOVERY_ROBOTS_TTL_S = 600.0  # one subscription's robots.txt lookups share one fetch per origin


async def validate(fetcher: Fetcher, url: str) -> Validated:
    """Fetch and parse `url`; an HTML page is searched for the feeds it advertises.

    Autodiscovery is crawling, so it honours robots.txt (seed 001 §4.7): a page robots.txt disallows is not
    read for feeds, and guessed feed paths it disallows are not fetched. The URL the user gave and the feeds
    a page advertises are fetched as a reader fetches a feed. Raises UserError with the choices when a page
    advertises several feeds.
    """
    try:
        url = check_url(url.strip())
    except BlockedURLError as exc:
        raise UserError(f"cannot subscribe to {url!r}: {exc}", "use an http:// or https:// URL") from None
    res = await _get(fetcher, url)
    assert res.body is not None
    if not looks_like_html(res.body, res.headers.get("content-type")):
        return Validated(res.permanent_url or url, _parse(res))
    robots = RobotsCache(fetcher, user_agent=fetcher.user_agent, ttl_s=DISCOVERY_ROBOTS_TTL_S)
    verdict, why = await robots.check(res.url)
    if verdict != "allowed":
        raise UserError(
            f"{url} is a web page, and its site's robots.txt keeps feed readers from looking into it ({why})",
            "add the feed's own URL (the page's RSS/Atom link)",
        )
    found = discover_feeds(res.body, res.url)
    if len(found) > 1:
        raise SeveralFeeds(url, found)
    candidates = found or [DiscoveredFeed(urljoin(res.url, path), None, None) for path in COMMON_FEED_PATHS]
    failure = ""
    for candidate in candidates:
        if not found and (verdict := (await robots.check(candidate.url))[0]) != "allowed":
            failure = f"robots.txt: {verdict}"
            continue  # a guessed path robots.txt does not allow is not fetched
        feed_res = await fetcher.fetch(candidate.url)
        if feed_res.status != 200 or feed_res.body is None:
            failure = fetch_failure(feed_res)
            continue
        if looks_like_html(feed_res.body, feed_res.headers.get("content-type")):
            failure = "it is an HTML page, not a feed"
            continue
        try:
            parsed = parse_feed(
                feed_res.body, url=feed_res.url, content_type=feed_res.headers.get("content-type")
            )
        except FeedParseError as exc:
            failure = f"it is not an RSS, Atom or JSON feed: {exc}"
            continue
        return Validated(feed_res.permanent_url or candidate.url, parsed)
    if found:  # the page names its feed, and that feed is what failed: say so, not "no feed"
        raise UserError(
            f"{url} advertises the feed {found[0].url}, but fetching it failed: {failure}",
            "try again later, or ask the site; `feedeater rss add` takes the feed URL directly too",
        )
    raise UserError(
        f"{url} is a web page that advertises no feed", "find the page's RSS/Atom link and add that URL"
    )


async def subscribe(
    conn: asyncpg.Connection,
    fetcher: Fetcher,
    url: str,
    *,
    folder: str | None = None,
    interval_minutes: float | None = None,
    validated: Validated | None = None,
) -> tuple[store.FeedRow, bool]:
    """Validate (unless the caller already did: `validated`), then store. Nothing is stored when
    validation fails."""
    check_interval(interval_minutes)
    v = validated or await validate(fetcher, url)
    return await store.add_feed(
        conn,
        url=v.url,
        title=v.feed.title,
        site_url=v.feed.link,
        description=v.feed.description,
        format=v.feed.format,
        folder=folder or None,
        interval_override_s=round(interval_minutes * 60) if interval_minutes else None,
    )


def check_interval(interval_minutes: float | None) -> None:
    """A fixed interval asked for at subscription, refused before anything is fetched."""
    if interval_minutes is not None and interval_minutes < 1:
        raise UserError(f"--interval {interval_minutes:g} is too short", "use at least 1 minute")


def vet_url(url: str, *, allow_private_networks: bool) -> str:
    """The checks every way of subscribing shares, before any request: the URL normalized for fetching
    (`check_url`), and an address literal that is not public refused unless the setting allows it. Host
    names are judged again on the address actually connected to, at every fetch."""
    normalized = check_url(url)
    ip = parse_ip_host(httpx.URL(normalized).host)
    if ip is not None and not allow_private_networks and not is_public_address(ip):
        raise BlockedAddressError(
            f"{ip} is a private or reserved address "
            "(to allow it: `feedeater settings set rss.allow_private_networks true`)"
        )
    return normalized


@dataclass(frozen=True, slots=True)
class Imported:
    added: list[int]  # ids of the feeds added (`rss import` fetches them at once)
    already_present: int
    refused: list[tuple[str, str]]  # (url as written, why)
    outcomes: list[tuple[str, str]]  # every feed of the document in order: (url as written, what happened)

    def as_dict(self) -> dict[str, Any]:
        """The shape of api.models.OpmlImportResult (`rss import --json`, POST /api/v1/opml)."""
        return {
            "added": len(self.added),
            "already_present": self.already_present,
            "refused": [{"url": u, "reason": why} for u, why in self.refused],
            "feed_ids": self.added,
        }


async def import_opml(conn: asyncpg.Connection, data: bytes, *, allow_private_networks: bool) -> Imported:
    """Add every feed of an OPML document (no fetching here), each URL vetted as `rss add` vets it; a
    refused URL is reported and skipped, the rest are added. Idempotent."""
    added: list[int] = []
    present = 0
    refused: list[tuple[str, str]] = []
    outcomes: list[tuple[str, str]] = []
    async with conn.transaction():
        for f in parse_opml(data):
            try:
                url = vet_url(f.url, allow_private_networks=allow_private_networks)
            except BlockedURLError as exc:
                refused.append((f.url, str(exc)))
                outcomes.append((f.url, f"refused: {exc}"))
                continue
            row, created = await store.add_feed(
                conn, url=url, title=f.title or "", site_url=f.site_url, folder=f.folder
            )
            if created:
                added.append(row.id)
            present += not created
            outcomes.append(
                (f.url, f"added as feed {row.id}" if created else f"already subscribed (feed {row.id})")
            )
    return Imported(added, present, refused, outcomes)


async def export(conn: asyncpg.Connection) -> bytes:
    rows = await store.list_feeds(conn)
    return export_opml(
        OpmlFeed(url=r["url"], title=r["title"] or None, site_url=r["site_url"], folder=r["folder"])
        for r in rows
    )
