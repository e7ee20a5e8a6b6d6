"""The pure parts of WebSub and RFC 5005 backfill: signatures, discovery, leases, verdicts, scheduling, links."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from modules.rss.backfill import links as archive
from modules.rss.ingest import processors
from modules.rss.ingest.schedule import PUSH_REASON, Outcome, decide, push_safety_check
from modules.rss.model import Entry, Intents, New
from modules.rss.parse import lenient, parse_feed
from modules.rss.store.websub import Subscription
from modules.rss.websub import signature
from modules.rss.websub.discover import MAX_LINK_CHARS, Push, discover, link_header, secure_hubs
from modules.rss.websub.lease import Current, renew_at, should_subscribe
from modules.rss.websub.routes import verdict

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
BODY = b"<feed>...</feed>"


@pytest.mark.parametrize("method", ["sha1", "sha256", "sha384", "sha512"])
def test_signatures_of_every_allowed_method_verify(method: str) -> None:
    header = signature.sign("s3cret", BODY, method)
    assert signature.valid(header, "s3cret", BODY)
    assert signature.valid(header.upper().replace(method.upper(), method), "s3cret", BODY)  # hex case
    assert not signature.valid(header, "other", BODY)
    assert not signature.valid(header, "s3cret", BODY + b" ")


@pytest.mark.parametrize("header", [None, "", "sha256", "sha256=", "md5=abc", "=abc", "sha256:abc"])
def test_missing_or_malformed_signatures_are_invalid(header: str | None) -> None:
    assert not signature.valid(header, "s3cret", BODY)
    md5 = "md5=" + __import__("hmac").new(b"s3cret", BODY, "md5").hexdigest()
    assert not signature.valid(md5, "s3cret", BODY)  # not a WebSub method, even when it matches


def test_link_header_values_params_and_relative_urls() -> None:
    value = '<https://hub.example/a,b>; rel="hub", </feed?x=1>;rel=self, <https://h2/>; title="x"; rel="hub alternate"'
    assert link_header(value, "https://site.example/blog/") == [
        ("hub", "https://hub.example/a,b"),
        ("self", "https://site.example/feed?x=1"),
        ("hub", "https://h2/"),
        ("alternate", "https://h2/"),
    ]
    assert link_header("garbage; rel=hub", "https://x/") == []
    assert link_header('<javascript:alert(1)>; rel="hub"', "https://x/") == []


def test_link_header_reads_what_it_can_of_broken_and_oversized_values() -> None:
    """One forward pass: an unclosed `<` or quote ends the value (what came before counts), parameters
    without values and empty ones are skipped, the first `rel` wins, and only the first 64 KiB are read."""
    assert link_header('<https://h/>; rel="hub", <https://x/', "https://s/") == [("hub", "https://h/")]
    assert link_header(
        '<https://h/>; rel="hub"; title="never closed, <https://y/>; rel=hub', "https://s/"
    ) == [("hub", "https://h/")]
    assert link_header("<https://h/>;; foo; =x; rel=hub; rel=self", "https://s/") == [("hub", "https://h/")]
    padding = "<https://p/>; rel=nothing, " * (MAX_LINK_CHARS // 20)
    assert link_header('<https://h/>; rel="hub", ' + padding, "https://s/")[0] == ("hub", "https://h/")
    assert ("hub", "https://late/") not in link_header(padding + '<https://late/>; rel="hub"', "https://s/")
    assert link_header("<" * 2_000_000 + ">; rel=hub", "https://s/") == []  # cut at 64 KiB: no `>` left


def test_discovery_prefers_the_link_header_and_falls_back_to_the_fetched_url() -> None:
    document = [("hub", "https://doc-hub/"), ("self", "https://site/doc-self")]
    headers = {"link": '<https://header-hub/>; rel="hub", <https://site/header-self>; rel="self"'}
    assert discover(document, headers, "https://site/feed") == Push(
        ("https://header-hub/", "https://doc-hub/"), "https://site/header-self"
    )
    assert discover(document, {}, "https://site/feed") == Push(("https://doc-hub/",), "https://site/doc-self")
    assert discover([("hub", "https://h/")], {}, "https://site/feed") == Push(
        ("https://h/",), "https://site/feed"
    )
    assert discover([("self", "https://site/s")], {}, "https://site/feed") is None


def test_hub_and_self_links_come_from_every_feed_format() -> None:
    rss = (
        b"<rss version='2.0' xmlns:atom='http://www.w3.org/2005/Atom'><channel><title>t</title>"
        b"<atom:link rel='hub' href='https://hub/'/><atom:link rel='self' href='/rss?utm_source=x'/>"
        b"<atom:link rel='next' href='page2'/><item><guid>a</guid><title>x</title></item></channel></rss>"
    )
    expected = (
        ("hub", "https://hub/"),
        ("self", "https://s/rss?utm_source=x"),
        ("next", "https://s/f/page2"),
    )
    assert parse_feed(rss, url="https://s/f/feed").links == expected  # the topic is kept as written
    assert tuple(lenient.parse_lenient(rss.decode(), "https://s/f/feed").links) == (
        ("hub", "https://hub/"),
        ("self", "/rss?utm_source=x"),
        ("next", "page2"),
    )  # raw: normalize resolves them
    json_feed = (
        b'{"version": "https://jsonfeed.org/version/1.1", "title": "t", "feed_url": "https://s/f.json",'
        b'"next_url": "https://s/f2.json", "hubs": [{"type": "WebSub", "url": "https://hub/"},'
        b'{"type": "rssCloud", "url": "https://cloud/"}], "items": []}'
    )
    assert parse_feed(json_feed, url="https://s/f.json").links == (
        ("hub", "https://hub/"),
        ("self", "https://s/f.json"),
        ("next", "https://s/f2.json"),
    )


def test_the_websub_archive_fixture_gives_hubs_topic_and_archive_start() -> None:
    body = (Path(__file__).resolve().parents[2] / "fixtures" / "rss" / "websub_archive.xml").read_bytes()
    feed = parse_feed(body, url="https://example.com/feeds/feed.xml")
    assert discover(feed.links, {}, "https://example.com/feeds/feed.xml") == Push(
        ("https://pubsubhubbub.appspot.com/", "https://websub.example.net/hub"),
        "https://example.com/feeds/feed.xml?utm_source=hub",
    )
    assert archive.start(feed.links) == ("prev-archive", "https://example.com/feeds/archive/2024-04.xml")


def _current(
    state: str, *, hours_ago: float = 0, hub: str = "https://hub/", topic: str = "https://t/"
) -> Current:
    return Current(hub, topic, state, NOW - timedelta(hours=hours_ago))


def test_when_to_subscribe() -> None:
    push = Push(("https://hub/", "https://hub2/"), "https://t/")
    day = 86400.0
    assert should_subscribe(None, push, now=NOW, retry_after_s=day)
    assert not should_subscribe(_current("active"), push, now=NOW, retry_after_s=day)
    assert not should_subscribe(_current("pending"), push, now=NOW, retry_after_s=day)
    assert not should_subscribe(_current("active", hub="https://hub2/"), push, now=NOW, retry_after_s=day)
    assert should_subscribe(_current("active", topic="https://moved/"), push, now=NOW, retry_after_s=day)
    assert not should_subscribe(_current("failed", hours_ago=23), push, now=NOW, retry_after_s=day)
    assert should_subscribe(_current("failed", hours_ago=25), push, now=NOW, retry_after_s=day)


def test_renewal_comes_before_the_lease_ends() -> None:
    assert renew_at(NOW, 10 * 86400) == NOW + timedelta(days=9)  # a day early at most
    assert renew_at(NOW, 3600) == NOW + timedelta(minutes=48)  # 80 % of a short lease


def _sub(state: str, feed_id: int | None = 1) -> Subscription:
    return Subscription(1, feed_id, "tok", "https://hub/", "https://t/", "https://cb/websub/tok", "s", state)


def test_intent_verification_verdicts() -> None:
    assert verdict(_sub("pending"), "subscribe", "https://t/") == "subscribe"
    assert verdict(_sub("active"), "subscribe", "https://t/") == "subscribe"  # a renewal
    assert verdict(_sub("active"), "subscribe", "https://other/") == "refuse"
    assert verdict(_sub("active"), "unsubscribe", "https://t/") == "refuse"  # we never asked
    assert verdict(_sub("unsubscribing", None), "unsubscribe", "https://t/") == "unsubscribe"
    assert verdict(_sub("unsubscribing", None), "subscribe", "https://t/") == "refuse"
    assert verdict(_sub("failed"), "subscribe", "https://t/") == "refuse"
    assert verdict(_sub("pending"), "denied", "https://t/") == "denied"
    assert verdict(None, "subscribe", "https://t/") == "refuse"
    assert verdict(_sub("pending"), None, "https://t/") == "refuse"


def test_an_active_push_subscription_turns_polls_into_a_daily_safety_check() -> None:
    rng = random.Random(1)
    polled = decide(1800, Outcome(kind="new_entries", new_entries=1), now=NOW, rng=rng)
    checked = push_safety_check(polled, "new_entries", now=NOW, safety_s=86400)
    assert checked.next_poll_at == NOW + timedelta(days=1)
    assert checked.reason == polled.reason + PUSH_REASON
    assert checked.interval_s == polled.interval_s  # the learned cadence waits for a fallback
    failed = decide(1800, Outcome(kind="error", consecutive_errors=1), now=NOW, rng=rng)
    assert push_safety_check(failed, "error", now=NOW, safety_s=86400) == failed
    late = decide(1800, Outcome(kind="no_new"), now=NOW, rng=rng)
    later = late.__class__(late.interval_s, NOW + timedelta(days=3), late.reason, None)
    assert push_safety_check(later, "no_new", now=NOW, safety_s=86400).next_poll_at == NOW + timedelta(days=3)


def test_archive_walks_follow_one_relation_and_stop_at_loops() -> None:
    doc = [("self", "https://s/f"), ("next", "https://s/p2"), ("prev-archive", "https://s/a9")]
    assert archive.start(doc) == ("prev-archive", "https://s/a9")
    assert archive.start([("prev", "https://s/p0")]) == ("previous", "https://s/p0")
    assert archive.start([("hub", "https://h/"), ("current", "https://s/f")]) is None
    page = [("previous", "https://s/p1"), ("next", "https://s/p3")]
    assert archive.follow(page, "next", ["https://s/p1", "https://s/p2"]) == "https://s/p3"
    assert archive.follow(page, "next", ["https://s/p3"]) is None  # a loop ends the walk
    assert archive.follow(page, "prev-archive", []) is None


def test_backfilled_entries_are_never_realtime() -> None:
    entry = Entry(guid="g", guid_source="id", title="t", link=None, published=NOW)
    intents = Intents(1, "Feed", NOW, False, 48)
    intents.new.append(New(entry=entry))
    assert processors.run(intents, processors.DEFAULT).new[0].realtime
    assert not processors.run(intents, (*processors.DEFAULT, processors.never_realtime)).new[0].realtime


def test_only_https_hubs_get_the_secret_unless_http_is_allowed() -> None:
    push = Push(("http://plain/", "https://tls/", "HTTPS://upper/"), "https://site/feed")
    assert secure_hubs(push, allow_http=False) == Push(
        ("https://tls/", "HTTPS://upper/"), "https://site/feed"
    )
    assert secure_hubs(push, allow_http=True) == push
    assert secure_hubs(Push(("http://plain/",), "https://site/feed"), allow_http=False) is None
