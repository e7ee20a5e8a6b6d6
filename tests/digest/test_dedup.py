"""Dedup layers as pure functions: canonical URLs, titles, fingerprints, entities, the layered decision."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from datasketch import MinHash

from modules.digest.dedup import entities, fingerprint, titles, urls
from modules.digest.dedup.layers import Candidate, Features, decide
from modules.digest.text import content_words

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
BODY = (
    "The central bank raised its main interest rate by a quarter point on Wednesday, the third increase "
    "this year, citing persistent inflation in services and a tight labour market. Governor Maria Santos "
    "said further moves would depend on wage data due in January. Markets had expected the decision, and "
    "bond yields barely moved after the announcement, while the currency gained slightly against the dollar."
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://www.example.com/a/b/?utm_source=x&utm_medium=y", "https://example.com/a/b"),
        ("https://example.com/a?b=2&a=1#section", "https://example.com/a?a=1&b=2"),
        ("https://m.example.com/news/story", "https://example.com/news/story"),
        ("https://example.com/news/story/amp", "https://example.com/news/story"),
        ("https://example.com/news/story.amp.html", "https://example.com/news/story"),
        ("https://example.com/x?fbclid=abc&id=3", "https://example.com/x?id=3"),
    ],
)
def test_canonical_urls_fold_variants_of_one_article(a: str, b: str) -> None:
    assert urls.canonical(a) == urls.canonical(b)


def test_canonical_urls_keep_what_identifies_an_article() -> None:
    assert urls.canonical("https://example.com/x?id=3") != urls.canonical("https://example.com/x?id=4")
    assert urls.canonical("https://example.com/a") != urls.canonical("https://other.com/a")
    assert urls.canonical("mailto:a@example.com") is None and urls.canonical("") is None
    assert urls.domain("https://www.BBC.co.uk/news") == "bbc.co.uk"


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("BREAKING: Fed raises rates", "fed raises rates"),
        ("Update: JUST IN: Fed raises rates", "fed raises rates"),
        ("ICYMI - Fed raises rates again this week - Reuters", "fed raises rates again this week"),
        ("Apple - iPhone", "apple - iphone"),
    ],
)
def test_titles_lose_news_prefixes_and_site_suffixes(title: str, expected: str) -> None:
    assert titles.normalize(title) == expected


def test_title_threshold_depends_on_length() -> None:
    long_a = titles.tokens("central bank raises interest rates again")
    long_b = titles.tokens("central bank raises interest rates")
    assert titles.threshold(long_a, long_b) == 0.85
    short = titles.tokens("rates rise")
    assert titles.threshold(short, long_a) == 0.95


def test_minhash_and_simhash_see_light_edits_as_close_and_other_text_as_far() -> None:
    edited = BODY.replace("on Wednesday", "late on Wednesday").replace("slightly", "a little")
    other = "Astronomers found a comet that will pass near Earth in spring; it is harmless and visible with binoculars."
    assert fingerprint.estimated_jaccard(fingerprint.minhash(BODY), fingerprint.minhash(edited)) >= 0.7
    assert fingerprint.estimated_jaccard(fingerprint.minhash(BODY), fingerprint.minhash(other)) < 0.2
    assert fingerprint.hamming(fingerprint.simhash(BODY), fingerprint.simhash(BODY)) == 0
    assert fingerprint.hamming(fingerprint.simhash(BODY), fingerprint.simhash(other)) > 10
    assert len(fingerprint.bands(fingerprint.minhash(BODY))) == 16


@pytest.mark.parametrize("text", [BODY, "", "single", "Zürich’s café reopens; Ελλάδα 2026 — 東京", BODY * 3])
def test_minhash_and_simhash_equal_the_reference_computations(text: str) -> None:
    """The vectorized signatures must equal datasketch's MinHash and the per-bit SimHash sum, bit for
    bit: stored signatures are compared with new ones."""
    m = MinHash(num_perm=fingerprint.NUM_PERM, seed=17)
    m.update_batch(list(fingerprint.shingles(text)))
    assert fingerprint.minhash(text) == tuple(int(v) for v in m.hashvalues)
    counts = Counter(content_words(text))
    weights = [0] * 64
    for word, n in counts.items():
        bits = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        for i in range(64):
            weights[i] += n if bits >> (63 - i) & 1 else -n
    value = sum(1 << (63 - i) for i in range(64) if weights[i] > 0)
    assert fingerprint.simhash(text) == (value - (1 << 64) if value >= 1 << 63 else value)


def test_entities_are_capitalized_sequences_and_acronyms_not_sentence_starts() -> None:
    found = entities.extract(
        "However, the European Central Bank kept rates. Christine Lagarde met NASA staff in Paris on Monday. "
        "Analysts said the however clause mattered."
    )
    assert found == ["european central bank", "christine lagarde", "nasa", "paris"]
    a, b = frozenset({"per:a", "org:b", "loc:c"}), frozenset({"misc:a", "org:b", "loc:c", "per:d"})
    assert entities.overlap(a, b) == 1.0  # "a" counts: one article typed it a person


def feat(**kw: object) -> Features:
    base = Features(
        title_tokens=titles.tokens("Central bank raises interest rate for the third time this year"),
        canonical_url="https://example.com/rates",
        content_hash="h1",
        minhash=fingerprint.minhash(BODY),
        simhash=fingerprint.simhash(BODY),
        word_count=len(BODY.split()),
        published_at=T0,
        source="rss:1",
        text_hash="t1",
        entities=frozenset({"per:maria santos", "org:central bank", "loc:springfield"}),
    )
    kw.setdefault("text_hash", f"t{hash(kw.get('minhash', base.minhash))}")  # other words, other hash
    return replace(base, **kw)  # type: ignore[arg-type]


def test_layer1_same_identity_is_exact_duplicate_or_revision() -> None:
    assert decide(feat(), feat(), []).disposition == "exact_duplicate"
    assert decide(feat(content_hash="h2"), feat(), []).disposition == "revision"


def test_layer2_canonical_url_match() -> None:
    stored = Candidate(1, 1, feat())
    d = decide(feat(text_hash="t2", title_tokens=frozenset({"other"})), None, [stored])
    assert (d.disposition, d.layer, d.matched) == ("near_duplicate", "url", stored)
    # rss's content hash covers the link and dates: the same words at the same URL are an exact copy
    exact = decide(feat(content_hash="h2"), None, [stored])
    assert (exact.disposition, exact.layer) == ("exact_duplicate", "url")


def test_layer3_title_confirmed_by_layer4_fingerprint() -> None:
    stored = Candidate(1, 7, feat())
    edited = BODY.replace("on Wednesday", "late on Wednesday")
    new = feat(canonical_url="https://other.example/x", content_hash="h2", minhash=fingerprint.minhash(edited),
               simhash=fingerprint.simhash(edited))  # fmt: skip
    d = decide(new, None, [stored])
    assert (d.disposition, d.layer) == ("near_duplicate", "title+fingerprint")
    assert d.matched is not None and d.matched.cluster_id == 7


def test_same_title_with_a_different_body_is_not_a_duplicate() -> None:
    other = (
        "A completely different report about football transfers and the weekend league table results. " * 3
    )
    stored = Candidate(1, 1, feat())
    new = feat(canonical_url=None, content_hash="h3", minhash=fingerprint.minhash(other),
               simhash=fingerprint.simhash(other), entities=frozenset())  # fmt: skip
    assert decide(new, None, [stored]).disposition == "unique"


def test_title_outside_72h_is_not_compared() -> None:
    stored = Candidate(1, 1, feat(published_at=T0 - timedelta(hours=80)))
    new = feat(canonical_url=None, content_hash="h2", word_count=10, entities=frozenset())
    assert decide(new, None, [stored]).disposition == "unique"
    near = Candidate(1, 1, feat(published_at=T0 - timedelta(hours=70), word_count=10))
    assert decide(new, None, [near]).layer == "title"  # short bodies: the title alone decides


def test_layer4_fingerprint_catches_a_retitled_copy() -> None:
    stored = Candidate(1, 1, feat())
    new = feat(canonical_url=None, content_hash="h2", title_tokens=titles.tokens("Rates up again, bank says"),
               source="rss:2", text_hash="t-retitled")  # fmt: skip
    d = decide(new, None, [stored])
    assert (d.disposition, d.layer) == ("near_duplicate", "fingerprint")
    # One feed's entries share its template: fingerprints alone never match within a source.
    assert decide(replace(new, source="rss:1"), None, [stored]).disposition == "unique"


def test_layer5_entity_overlap_within_24h_is_same_event() -> None:
    other = "Different coverage: the governor Maria Santos of the Central Bank spoke in January about wages and prices."
    stored = Candidate(1, 1, feat())
    new = feat(canonical_url=None, content_hash="h4", title_tokens=titles.tokens("What Santos said"),
               minhash=fingerprint.minhash(other * 3), simhash=fingerprint.simhash(other * 3), source="rss:2")  # fmt: skip
    d = decide(new, None, [stored])
    assert (d.disposition, d.layer, d.score) == ("same_event", "entities", 1.0)
    assert decide(replace(new, source="rss:1"), None, [stored]).disposition == "unique"
    late = Candidate(1, 1, feat(published_at=T0 - timedelta(hours=30)))
    assert decide(new, None, [late]).disposition == "unique"


def test_title_probe_is_a_prefix_filter_that_cannot_miss_a_match() -> None:
    from modules.digest.store.articles import title_probe

    a = titles.tokens("Central bank raises interest rates again amid persistent inflation")
    probe = title_probe(a, 0.85)
    assert len(probe) == len(a) - 7 + 1  # n = 8 words, a match shares at least ⌈0.85·8⌉ = 7
    for dropped in a:  # every title within Jaccard 0.85 keeps 7 of the 8 words: it still hits the probe
        assert set(probe) & (a - {dropped})
