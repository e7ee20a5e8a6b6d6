"""Issue 28's precision rules: series markers, typed entities, shared templates, exact copies by content,
story clusters apart from same-event links; the false friends of bench/digest_false_friends.json through
the real intake on PostgreSQL."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from host.runtime import Host
from modules.digest.dedup import entities, fingerprint, markers, titles
from modules.digest.dedup.features import text_hash
from modules.digest.dedup.layers import Candidate, Decision, decide, explain, groups, story_features
from modules.digest.intake.handler import ingest_many
from modules.digest.model import Article
from modules.digest.text import words
from tests.digest.test_dedup import BODY, feat

FRIENDS = Path(__file__).resolve().parents[2] / "bench" / "digest_false_friends.json"
T0 = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Django 5.1 released", {"v:5.1", "q:final"}),
        ("Django 5.1 release candidate 1 released", {"v:5.1", "q:rc1"}),
        ("Python 3.13.0 beta 2 is now available", {"v:3.13.0", "q:beta2"}),
        ("iOS 18.1 now out", {"v:18.1", "q:final"}),
        ("Episode 152: Rebuilding the web with Rust", {"n:episode:152"}),
        ("The fall of Constantinople, part 3: the final assault", {"n:part:3"}),
        ("Part Two: the return", {"n:part:2"}),
        ("S02E05 recap", {"n:season:2", "n:episode:5"}),
        ("152: Foo and bar", {"n:#:152"}),
        ("Projetos para contribuir nesse #Hacktoberfest 2023", {"n:year:2023"}),
        # numbers that are no markers: counts, rates, magnitudes, "no one", years after function words
        ("Quake kills 50 in Turkey", set()),
        ("GDP grew 2.1% in the third quarter", set()),
        ("Magnitude 6.2 earthquake hits Turkey", set()),
        ("No one was hurt in the fire", set()),
        ("ECB Cuts Rates For First Time Since 2019", set()),
    ],
)
def test_series_markers_of_a_title(title: str, expected: set[str]) -> None:
    assert markers.extract(title) == expected


def test_markers_conflict_only_on_different_items_of_one_kind() -> None:
    def conflict(a: str, b: str) -> str | None:
        return markers.conflict(markers.extract(a), markers.extract(b))

    assert conflict("Django 5.1 released", "Django 5.1 rc1 released") == "release final vs rc1"
    assert conflict("Episode 152: x", "Episode 153: y") == "n:episode 152 vs 153"
    assert conflict("Python 3.13.0 beta 2", "Python 3.13.0 beta 3") is not None
    assert conflict("Episode 152: x", "#152 x") is None  # one item named two ways
    assert conflict("Python 3.13.0 released", "What is new in Python 3.13.0") is None
    assert conflict("Episode 152: x", "A talk about Rust") is None  # only one title names an item
    assert conflict("Quake kills 50", "Quake toll rises to 120") is None


def test_entities_are_typed_people_organisations_places_and_misc() -> None:
    found = dict(
        entities.extract_typed(
            "Prime Minister Shehbaz Sharif met Joe Biden in Washington. The Django Software Foundation and "
            "NASA agreed, Anna Keller said, while Keller added a PDF. Download the EPUB."
        )
    )
    assert found["shehbaz sharif"] == "per" and found["joe biden"] == "per" and found["anna keller"] == "per"
    assert found["washington"] == "loc" and found["django software foundation"] == "org"
    assert found["nasa"] == "org"  # a known organisation
    assert found.get("pdf", "misc") == "misc" and found.get("epub", "misc") == "misc"  # acronyms, not orgs
    assert "keller" not in found  # the surname alone is the same person, not a second entity


def test_an_exact_copy_is_recognised_by_its_words_not_rss_content_hash() -> None:
    stored = Candidate(1, 1, feat())
    copy = feat(
        canonical_url="https://other.example/x", content_hash="h2", source="rss:2", domain="other.example"
    )
    d = decide(copy, None, [stored])
    assert (d.disposition, d.layer, d.matched) == ("exact_duplicate", "content", stored)
    # Two short texts alike behind different URLs ("Live stream", no body) are not one article.
    short = Candidate(1, 1, feat(word_count=3, text_hash="t1"))
    assert decide(replace(copy, word_count=3), None, [short]).disposition != "exact_duplicate"
    assert text_hash("Rates rise", words("The bank  said so.")) == text_hash(
        "rates RISE", words("the bank said so")
    )


def test_layers_3_to_5_never_match_different_items_of_a_series() -> None:
    rc = feat(
        title_tokens=titles.tokens("Django 5.1 rc1 released"), markers=markers.extract("Django 5.1 rc1")
    )
    final = replace(rc, canonical_url="https://two.example/final", text_hash="t2", source="rss:2",
                    domain="two.example", markers=markers.extract("Django 5.1 released"))  # fmt: skip
    assert decide(final, None, [Candidate(1, 1, rc)]).disposition == "unique"
    assert (
        decide(replace(final, markers=rc.markers), None, [Candidate(1, 1, rc)]).disposition
        == "near_duplicate"
    )
    series = {c.layer: c for c in explain(final, rc)}["series"]
    assert not series.passed and series.value == "release final vs rc1"


def test_same_event_needs_another_site_and_no_shared_template() -> None:
    other = (
        "Different coverage: Maria Santos of the Central Bank spoke in Springfield about wages and prices."
    )
    coverage = feat(canonical_url=None, text_hash="t4", title_tokens=titles.tokens("What Santos said"),
                    minhash=fingerprint.minhash(other * 3), simhash=fingerprint.simhash(other * 3),
                    source="rss:2", domain="two.example")  # fmt: skip
    stored = Candidate(1, 1, feat(domain="one.example"))
    d = decide(coverage, None, [stored])
    assert (d.disposition, d.layer) == ("same_event", "entities")
    assert decide(replace(coverage, domain="one.example"), None, [stored]).disposition == "unique"  # one site
    # One show's episodes: the same sponsor lines under an unrelated headline are a template, not an event.
    template = BODY[: len(BODY) // 2] + other * 2
    episode = replace(
        coverage, minhash=fingerprint.minhash(template), title_tokens=titles.tokens("Wholly new")
    )
    assert 0.2 <= fingerprint.estimated_jaccard(episode.minhash, stored.features.minhash) < 0.7
    assert decide(episode, None, [stored]).disposition == "unique"


def test_a_same_event_article_starts_its_own_story_and_its_copies_join_it() -> None:
    """A same_event article used to take its match's cluster, and every later copy of it inherited that
    cluster: one story cluster held two stories."""
    first = Candidate(10, 10, feat(), event_id=10)
    linked = Decision("same_event", "entities", 0.9, first)
    assert groups(linked, 11) == (11, 10)  # its own story, the first one's event
    copy_of_linked = Decision("near_duplicate", "fingerprint", 0.8, Candidate(11, 11, feat(), event_id=10))
    assert groups(copy_of_linked, 12) == (11, 10)
    assert groups(Decision("unique", "none"), 13) == (13, 13)


def test_a_copy_keeps_its_story_markers_under_a_new_headline() -> None:
    original = Candidate(1, 1, feat(markers=frozenset({"n:year:2023"})))
    copy = feat(title_tokens=titles.tokens("The month of open source is coming"), markers=frozenset())
    d = Decision("near_duplicate", "fingerprint", 0.8, original)
    assert story_features(copy, d).markers == {"n:year:2023"}
    assert story_features(copy, Decision("same_event", "entities", 0.9, original)).markers == frozenset()


def _friends() -> list[tuple[str, int, int, Article]]:
    """(kind, story, event, article) of every false friend and coverage item, in arrival order."""
    out = []
    groups_ = json.loads(FRIENDS.read_text())["groups"]
    n = 0
    for g, group in enumerate(groups_):
        made: list[tuple[str, int, int, Article]] = []
        for k, spec in enumerate(group["items"]):
            n += 1
            source = spec.get("copy_of")
            base = made[source] if source is not None else None
            title = base[3].title if base else spec["title"]
            body = base[3].body if base else spec["body"]
            story = base[1] if base else n
            event = base[2] if base else (1000 + g if group["kind"] == "coverage" else n)
            words = body.split()
            article = Article(
                message_id=uuid.UUID(int=n), source_module="rss", stream=f"{g}-{k}", feed_id=None,
                source_name=spec["site"], domain=spec["site"], title=title, url=f"https://{spec['site']}/{g}/{k}",
                body=body, word_count=len(words), published_at=T0 + timedelta(days=g, hours=spec["hours"]),
                date_uncertain=False, partial_content=False, content_hash=f"h{n}", depth_signals=(),
                revision=1, updated=False, guid=f"g{n}",
            )  # fmt: skip
            made.append((group["kind"], story, event, article))
        out.extend(made)
    return out


async def test_false_friends_through_the_intake_keep_stories_apart(host: Host) -> None:
    friends = _friends()
    kinds = {kind for kind, *_ in friends}
    assert {"release", "episode", "video", "series", "coverage"} <= kinds
    async with host.require_pool().acquire() as conn, conn.transaction():
        decisions = await ingest_many(conn, [a for *_, a in friends])
        rows = await conn.fetch("SELECT message_id, id, cluster_id, event_id, guid FROM mod_digest.articles")
    by_message = {r["message_id"]: r for r in rows}
    stories: dict[int, set[int]] = {}
    events: dict[int, set[int]] = {}
    for (_, story, event, article), d in zip(friends, decisions, strict=True):
        row = by_message[article.message_id]
        stories.setdefault(row["cluster_id"], set()).add(story)
        events.setdefault(row["event_id"], set()).add(event)
        assert row["guid"] == article.guid
        if d.disposition != "unique":
            assert d.matched is not None
    assert all(len(s) == 1 for s in stories.values()), stories  # no story cluster holds two stories
    assert all(len(e) == 1 for e in events.values()), events  # no event holds another event's story
    copies = [d for (kind, *_), d in zip(friends, decisions, strict=True) if d.layer == "content"]
    assert len(copies) == sum(
        1 for g in json.loads(FRIENDS.read_text())["groups"] for i in g["items"] if "copy_of" in i
    )
    linked = [d for d in decisions if d.disposition == "same_event"]
    assert linked, "coverage of one event by other sites is linked as same_event"
