"""Clustering, labels, trends, the digest's sections, sizing and self-checks, rendering (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from modules.digest.assemble import build, checks, render, summary
from modules.digest.cluster import labels, topics, trends
from modules.digest.score.importance import Components
from modules.digest.settings import TYPES
from modules.digest.text import cluster_document, demojibake

NOW = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)
RAIL = "Springfield council approves light rail line after long debate; Mayor Jane Alvarez says works start in March."
COMET = "Northfield Observatory astronomers track a comet passing near Earth next spring, visible with binoculars."
FLOOD = "Heavy rain floods the river valley; Riverton evacuates homes as water levels rise overnight."
_ids = iter(range(1, 10_000))


def row(title: str, body: str, *, source: str, tier: int | None = 3, hours: float = 2, cluster: int | None = None,
        disposition: str = "unique", url: str | None = "https://x.example/a") -> dict[str, Any]:  # fmt: skip
    i = next(_ids)
    return {
        "id": i, "message_id": None, "source_module": "rss", "stream": source, "feed_id": None,
        "source_name": source, "domain": "", "title": title, "url": url, "canonical_url": url,
        "body": " ".join([body] * 4), "word_count": len(body.split()) * 4, "published_at": NOW - timedelta(hours=hours),
        "date_uncertain": False, "partial_content": False, "depth_signals": [],
        "entities": ["loc:springfield"] if "rail" in title.lower() else [], "disposition": disposition,
        "layer": "none", "cluster_id": cluster or i, "event_id": cluster or i, "revision": 1, "tier": tier,
        "health": 1.0,
    }  # fmt: skip


def options(**kw: Any) -> build.Options:
    return build.Options(kind=TYPES["morning"], start=NOW - timedelta(hours=24), end=NOW, now=NOW, **kw)


def window() -> list[dict[str, Any]]:
    rows = [
        row("Springfield approves light rail line", RAIL, source="Wire", tier=1),
        row(
            "Light rail line approved in Springfield",
            RAIL.replace("long", "heated"),
            source="Gazette",
            tier=2,
        ),
        row("Springfield rail vote: what it means", RAIL + " Analysis.", source="Blog", tier=4),
        row("Comet to pass near Earth", COMET, source="Science", tier=3),
        row("Riverton floods", FLOOD, source="Local", tier=4, hours=20),
    ]
    rows.append(row("BREAKING: Springfield approves light rail line", RAIL, source="Copy", cluster=rows[0]["cluster_id"],
                    disposition="near_duplicate"))  # fmt: skip
    return rows


def test_dbscan_groups_one_story_and_keeps_others_standalone() -> None:
    docs = [cluster_document(r["title"], r["body"]) for r in window()[:5]]
    labels = topics.dbscan(topics.vectorize(docs))
    assert labels[0] == labels[1] == labels[2]
    assert len({labels[0], labels[3], labels[4]}) == 3


def test_agglomerative_gives_exactly_k_topics() -> None:
    docs = [cluster_document(r["title"], r["body"]) for r in window()[:5]]
    assert len(set(topics.agglomerative(topics.vectorize(docs), 2))) == 2


def test_digest_sections_leads_related_sources_and_header_counts() -> None:
    d = build.build(window(), {"feeds": 0}, options())
    assert d.article_count == 6 and d.duplicates_removed == 1
    rail = next(i for i in d.items if "rail" in i.title.lower())
    assert rail.topic_size == 3 and rail.related_count == 3
    assert set(rail.related_sources) == {"Gazette", "Blog", "Copy"}
    assert rail.label == rail.title  # the lead's headline already names Springfield
    assert [i.score for i in d.items] == sorted((i.score for i in d.items), reverse=True)
    assert d.items[0] is rail  # corroborated by three sources across tiers
    assert all(c["ok"] for c in d.checks), d.checks
    assert all(i.trend is None for i in d.items)  # no previous digest: no trend claims


def test_interest_profile_changes_relevance() -> None:
    neutral = build.build(window(), {}, options())
    keen = build.build(window(), {}, options(interests="comet, astronomy, earth"))
    before = {i.title: i.score for i in neutral.items}
    change = {i.title: i.score - before[i.title] for i in keen.items}
    assert change["Comet to pass near Earth"] > change["Riverton floods"]  # flood: cosine 0 → relevance 0
    assert round(change["Riverton floods"], 6) == -10.0  # 0.20 × (0 − neutral 50)


def test_liked_articles_join_the_interest_profile() -> None:
    rows = window()[:5]  # rail ×3, comet, flood
    v = topics.vectorize([cluster_document(r["title"], r["body"]) for r in rows])
    assert build.relevance_scores(v, "", []) == [50.0] * 5  # no profile: neutral
    fond = build.relevance_scores(v, "", [("Comet watch", COMET)])
    assert fond[3] > 50 and fond[4] == 0.0 and max(fond[:3]) < fond[3]
    both = build.relevance_scores(v, "river valley floods", [("Comet watch", COMET)])
    assert both[3] > 0 and both[4] > 0 and both[3] < fond[3]  # keywords and likes weigh half each
    assert build.relevance_scores(v, "zebra", []) == [0.0] * 5  # a profile the window never mentions


def test_trends_against_the_previous_digest() -> None:
    previous = [
        trends.Previous("Springfield: rail", frozenset({"springfield", "rail", "line", "light"}), 1),
        trends.Previous("Elections", frozenset({"vote", "ballot", "candidate"}), 5),
    ]
    d = build.build(window(), {}, options(previous=previous))
    rail = next(i for i in d.items if "rail" in i.title.lower())
    assert rail.trend == "TRENDING"  # 1 → 3 articles
    assert d.health["declining"] == ["Elections"]
    assert trends.indicator(3, None, has_previous_digest=True) == "EMERGING"
    assert trends.indicator(2, None, has_previous_digest=True) is None
    assert trends.indicator(2, trends.Previous("x", frozenset(), 4), has_previous_digest=True) == "FADING"


def test_t5_on_top_without_corroboration_is_demoted() -> None:
    scores = [80.0, 70.0]
    weak = Components(authority=30, recency=100, corroboration=25, relevance=100, depth=100)
    check = checks.t5_on_top(scores, [5, 2], [weak, weak])
    assert not check["ok"] and scores[0] < 70.0 and "single source" in check["problems"][0]
    strong = Components(authority=30, recency=100, corroboration=75, relevance=50, depth=100)
    assert checks.t5_on_top([80.0, 70.0], [5, 2], [strong, strong])["ok"]


def test_self_checks_trim_to_size_drop_unattributed_and_relabel() -> None:
    rows = [row(f"Story number {n} about topic{n}", f"Body text {n} unique words topic{n}.", source=f"S{n}")
            for n in range(40)]  # fmt: skip
    rows[0]["url"] = None
    midday = build.Options(kind=TYPES["midday"], start=NOW - timedelta(hours=24), end=NOW, now=NOW)
    d = build.build(rows, {}, midday)
    assert len(d.section("noteworthy")) <= 5 and len(d.section("also")) <= 5 and len(d.section("top")) <= 10
    found = {c["name"]: c for c in d.checks}
    assert not found["attribution"]["ok"] and all(i.url for i in d.items)
    assert not found["sizing"]["ok"]
    d.items[0].label = ":"
    assert not checks.labels(d)["ok"] and d.items[0].label == d.items[0].title


def test_extractive_summary_is_50_to_75_words_of_whole_sentences() -> None:
    text = " ".join(f"Sentence {n} has exactly eight words in it." for n in range(20))
    s = summary.extractive(text)
    assert 50 <= len(s.split()) <= 75 and s.endswith(".")
    assert len(summary.one_line(text).split()) <= 30


def test_rendering_markdown_html_json() -> None:
    d = build.build(
        window(), {"feeds": 3, "success_rate": 0.9, "errors": 2, "unhealthy": ["Dead feed"]}, options()
    )
    md = render.markdown(d)
    assert md.startswith("# Morning Brief — 2026-11-26") and "6 articles · 1 duplicates removed" in md
    assert "Feeds polled: 3 · success rate 90% · errors: 2" in md and "Unhealthy feeds: Dead feed" in md
    assert md.count("Springfield approves light rail line") == 1  # the label is the headline: shown once
    html = render.to_html(d)
    assert "Feed health" in html and "<script" not in html and "prefers-color-scheme: dark" in html
    assert "score " not in html and " · id " not in html  # scores and ids only when asked
    detailed = render.to_html(d, details=True)
    assert f"id {d.items[0].article_id}" in detailed and "score " in detailed
    assert '"article_count": 6' in render.to_json(d)


def test_html_links_only_http_urls_and_escapes_everything() -> None:
    rows = window()
    rows[3]["url"], rows[3]["title"] = "javascript:alert(1)", "<img src=x onerror=alert(1)> Comet"
    d = build.build(rows, {}, options())
    html = render.to_html(d)
    assert "javascript:" not in html and "<img" not in html and "&lt;img src=x" in html


def test_topic_labels_read_like_headlines() -> None:
    assert (
        labels.headline("BREAKING: Apple\u2019s App Store rules change - Reuters")
        == "Apple’s App Store rules change"
    )
    assert labels.headline("Iâ€™m done with   mojibake") == "I’m done with mojibake"
    long = labels.headline("word " * 40)
    assert len(long) <= labels.LABEL_MAX and long.endswith("…") and " wor…" not in long
    ents = [["org:xai", "misc:grok"], ["org:xai"], ["per:elon musk"]]
    texts = ["xAI said Grok was fixed", "xAI under fire", "Musk posts"]
    assert labels.label("Grok generated images of minors, report says", ents, texts).startswith("xAI: Grok")
    assert labels.label("xAI fixes Grok", ents, texts) == "xAI fixes Grok"  # the headline names it already
    assert labels.label("One story", [["org:xai"]], texts) == "One story"  # one article: its headline


def test_mojibake_is_undone_sequence_by_sequence() -> None:
    assert (
        demojibake("Iâ€™m at the cafÃ© â€” Â£5, naïve São Paulo") == "I’m at the café — £5, naïve São Paulo"
    )
    assert demojibake("IÂ said") == "I said"  # a no-break space whose second byte became a space


class ScriptedSummarizer:
    """Stands in for the third-party chat API: replies in order, or raises ProviderError."""

    model = "scripted"

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)

    async def complete_json(self, system: str, prompt: str) -> str:
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


async def test_llm_summaries_replace_extractive_ones_only_when_valid() -> None:
    from host.ai import ProviderError
    from modules.digest.deliver import summaries

    rows = window()
    for r in rows:
        r["tier"] = 1
        r["word_count"] = 1200
        r["depth_signals"] = ["data", "structure", "citations"]
    d = build.build(rows, {}, options())
    top = d.section("top")
    assert len(top) >= 2, [(i.title, i.score) for i in d.items]
    extractive = [i.summary for i in top]
    labels_before = [i.label for i in top]
    good = json.dumps({"summary": " ".join(["word"] * 60), "label": "Springfield's rail vote."})
    model = ScriptedSummarizer(
        good,
        json.dumps({"summary": "too short", "label": "one"}),
        ProviderError("down", transient=True),
    )
    assert await summaries.improve(d, {}, model) == 1
    assert top[0].summary == " ".join(["word"] * 60) and top[0].label == "Springfield's rail vote"
    assert top[1].summary == extractive[1]  # outside 30–90 words: the extractive summary stays
    assert top[1].label == labels_before[1]  # a one-word label is no label: the headline stays
    assert summaries.parse("not json") is None
    assert summaries.parse_label(json.dumps({"label": "x " * 40})) is None


def test_a_story_shows_its_richer_copy_of_the_same_url() -> None:
    """Seed 002 step 3: the URL layer keeps the version with more content (a feed's summary vs another
    feed's full text of one page); copies found by title or text do not replace the first article."""
    from modules.digest.assemble.stories import representative

    first = row("Springfield approves light rail line", RAIL, source="Summary feed", tier=1)
    first["word_count"] = 20
    full = row("Springfield approves light rail line", RAIL + " More detail.", source="Full feed",
               cluster=first["id"], disposition="near_duplicate")  # fmt: skip
    full["layer"], full["word_count"] = "url", 400
    retold = row("BREAKING: Springfield approves rail", RAIL, source="Copy", cluster=first["id"],
                 disposition="near_duplicate")  # fmt: skip
    retold["layer"], retold["word_count"] = "title+fingerprint", 900
    assert representative([first, full, retold])["id"] == full["id"]
    assert representative([first, retold])["id"] == first["id"]
    d = build.build([first, full, retold], {}, options())
    assert [i.source for i in d.items] == ["Full feed"] and d.items[0].related_count == 2
