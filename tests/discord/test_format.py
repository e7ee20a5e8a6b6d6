"""The embed formatter and the command replies (pure): no Discord, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from host.errors import UserError
from modules.discord import commands, post
from modules.discord.format import (
    DESCRIPTION_MAX,
    SUMMARY_CHARS,
    TITLE_MAX,
    TOTAL_MAX,
    Item,
    Source,
    colour,
    cut,
    embed,
    total_length,
    when,
)
from modules.rss.public import html_to_text  # what discord gets as ctx.api("rss").html_to_text

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SOURCE = Source(
    7, "Ars Technica", "https://feeds.arstechnica.com/arstechnica/index", "https://ars.example/icon.png"
)


def item(**kw: object) -> Item:
    base: dict[str, object] = {
        "guid": "g1",
        "title": "A title",
        "link": "https://example.org/a",
        "summary_html": "<p>Hello <b>world</b> &amp; friends</p>",
        "image": None,
        "published": NOW - timedelta(hours=3),
    }
    base.update(kw)
    return Item(**base)  # type: ignore[arg-type]


def test_html_is_stripped_and_the_embed_has_every_part() -> None:
    e = embed(item(image="https://example.org/i.png"), SOURCE, now=NOW, to_text=html_to_text)
    assert e["description"] == "Hello world & friends"
    assert e["title"] == "A title" and e["url"] == "https://example.org/a"
    assert e["author"] == {"name": "Ars Technica", "icon_url": "https://ars.example/icon.png"}
    assert e["image"] == {"url": "https://example.org/i.png"}
    assert e["footer"]["text"] == "3 hours ago · Feed 7"
    assert e["color"] == colour(SOURCE.url)


def test_summary_is_cut_at_a_word_boundary_near_300_characters() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    e = embed(item(summary_html=f"<p>{words}</p>"), SOURCE, now=NOW, to_text=html_to_text)
    d = e["description"]
    assert len(d) <= SUMMARY_CHARS and len(d) > SUMMARY_CHARS - 12
    assert d.endswith("…")
    assert d[:-1].split()[-1] in words.split()  # the last word is whole


def test_cut_keeps_short_text_and_cuts_one_huge_word_inside() -> None:
    assert cut("  short   text ", 20) == "short text"
    assert cut("x" * 500, 10) == "x" * 9 + "…"


def test_discord_limits_hold_for_huge_fields() -> None:
    huge = "word " * 5000
    e = embed(
        item(title=huge, summary_html=huge),
        Source(1, huge, "https://f.example/x"),
        now=NOW,
        to_text=html_to_text,
    )
    assert len(e["title"]) <= TITLE_MAX
    assert len(e["description"]) <= DESCRIPTION_MAX
    assert total_length(e) <= TOTAL_MAX


def test_a_preview_has_no_feed_id_and_an_undated_one_no_footer() -> None:
    preview = Source(None, "F", "https://f.example/x")
    assert embed(item(), preview, now=NOW, to_text=html_to_text)["footer"] == {"text": "3 hours ago"}
    assert "footer" not in embed(item(published=None), preview, now=NOW, to_text=html_to_text)


def test_no_summary_means_title_and_link_only() -> None:
    e = embed(item(summary_html=None), SOURCE, now=NOW, to_text=html_to_text)
    assert "description" not in e and e["url"] == "https://example.org/a"
    assert "description" not in embed(item(summary_html="<p> </p>"), SOURCE, now=NOW, to_text=html_to_text)


def test_colour_is_stable_per_feed_and_differs_between_feeds() -> None:
    assert colour("https://a.example/feed") == colour("https://a.example/feed")
    assert colour("https://a.example/feed") != colour("https://b.example/feed")
    assert 0 <= colour("x") <= 0xFFFFFF


def test_dates_are_relative_when_recent_and_absolute_otherwise() -> None:
    assert when(NOW - timedelta(seconds=20), NOW) == "just now"
    assert when(NOW - timedelta(minutes=1), NOW) == "1 minute ago"
    assert when(NOW - timedelta(days=2), NOW) == "2 days ago"
    assert when(NOW - timedelta(days=30), NOW) == "2026-10-27 12:00 UTC"
    assert when(NOW + timedelta(hours=1), NOW) == "2026-11-26 13:00 UTC"  # future: absolute


def test_image_comes_from_an_image_enclosure_and_unsafe_urls_are_dropped() -> None:
    rss = {
        "guid": "g",
        "title": "t",
        "link": "javascript:alert(1)",
        "enclosures": [
            {"url": "https://x/a.mp3", "type": "audio/mpeg"},
            {"url": "https://x/p.jpg", "type": "image/jpeg"},
        ],
        "published": "2026-11-26T09:00:00.000Z",
        "summaryHtml": None,
        "contentHtml": "<p>content</p>",
    }
    it = Item.from_rss(rss)
    assert it.image == "https://x/p.jpg" and it.summary_html == "<p>content</p>"
    assert it.published == datetime(2026, 11, 26, 9, tzinfo=UTC)
    e = embed(it, SOURCE, now=NOW, to_text=html_to_text)
    assert "url" not in e and e["image"] == {"url": "https://x/p.jpg"}
    assert Item.from_rss(it.to_json()) == it  # the queue's stored form reads back identically


def test_nonce_is_stable_short_and_distinct() -> None:
    n = post.nonce(1, 2, "guid")
    assert n == post.nonce(1, 2, "guid") and len(n) == 25
    assert len({n, post.nonce(1, 3, "guid"), post.nonce(2, 2, "guid"), post.nonce(1, 2, "guid2")}) == 4


@pytest.mark.parametrize("command", ["add", "remove", "config"])
def test_managed_commands_need_the_role(command: str) -> None:
    with pytest.raises(commands.CommandError, match=r"You need the \*\*Feed Manager\*\* role"):
        commands.require_manager(command, ["Reader"], "Feed Manager")
    commands.require_manager(command, ["Reader", "Feed Manager"], "Feed Manager")


@pytest.mark.parametrize("command", ["list", "preview"])
def test_list_and_preview_are_for_everyone(command: str) -> None:
    commands.require_manager(command, [], "Feed Manager")


def test_missing_channel_permissions_are_named() -> None:
    with pytest.raises(
        commands.CommandError, match=r"I can't post in <#5>: I need the Embed Links and Send Messages"
    ):
        commands.require_post_permissions(5, ["Send Messages", "Embed Links"])
    commands.require_post_permissions(5, [])


def test_user_errors_become_one_line() -> None:
    line = commands.error_line(
        UserError("https://x is a web page advertising 2 feeds:\n  a\n  b\n", "add one")
    )
    assert "\n" not in line and line.startswith("Can't use that feed: https://x is a web page")
    assert len(commands.error_line(UserError("x" * 5000))) <= commands.CONTENT_MAX


def test_replies_read_as_the_design_says() -> None:
    assert commands.added("Feed Title", 7, True) == "Feed added: **Feed Title** (ID: 7)"
    assert commands.removed("Ars Technica", 3) == "Removed feed **Ars Technica** (ID: 3)"
    assert commands.name("a*b_c", "u") == "a\\*b\\_c"
    assert (
        commands.config(4, 1, timedelta(days=1, hours=2, minutes=3))
        == "Feeds: 4 · in error: 1 · uptime: 1d 2h 3m"
    )


def test_listing_shows_id_name_channel_last_poll_and_interval_within_discords_limit() -> None:
    rows = [
        commands.Listed(1, "One", 10, NOW - timedelta(minutes=5), 900.0),
        commands.Listed(2, "Two", 11, None, None, paused_reason="was deleted"),
    ]
    text = commands.listing(rows, NOW)
    assert text.splitlines() == [
        "`1` **One** → <#10> · polled 5 minutes ago · every 15 min",
        "`2` **Two** → <#11> · not polled yet · not scheduled yet · paused: was deleted",
    ]
    many = [commands.Listed(i, "N" * 80, 10, None, 3600.0) for i in range(100)]
    long = commands.listing(many, NOW)
    assert len(long) <= commands.CONTENT_MAX and long.endswith("more")
    assert commands.listing([], NOW).startswith("No feeds in this server yet")
