"""The layered dedup decision (pure): a new article's features against stored candidates → disposition.

Layers, cheapest first (seed 002 step 3):
1. same source identity (message id): same content hash → `exact_duplicate`, else `revision`;
2. the same words in title and body (`content`: an exact syndicated copy behind any URL) or the same
   canonical URL with the same words → `exact_duplicate`; the same canonical URL otherwise →
   `near_duplicate` (assembly shows the copy with more content);
3. title Jaccard (≥ 0.85 for ≥ 5 words, ≥ 0.95 shorter) within 72 h → a candidate that layer 4 confirms
   (MinHash Jaccard ≥ 0.5 or SimHash Hamming ≤ 3); when either body is too short to fingerprint, the title
   alone confirms;
4. MinHash LSH candidates (any title) from another source confirmed by Jaccard ≥ 0.7 → `near_duplicate`;
5. overlap ≥ 80 % of typed entities (people, organisations, places; at least `min_entities` each) within
   24 h, from another source and site, bodies not sharing a template (`shared_template`) → `same_event`:
   a link between two stories, never one story.
Otherwise `unique`.

Layers 4-alone and 5 skip pairs from one source: a feed's own template (show notes, a weekly calendar,
a book series) makes its different entries look alike; a feed re-posting a story keeps its title (layer 3).
Layers 3–5 never match two titles naming different items of a series (markers.conflict: versions,
release qualifiers, numbered episodes and parts): only identity and URL (layers 1–2) say otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from modules.digest.dedup import entities, fingerprint, markers, titles


@dataclass(frozen=True, slots=True)
class Features:
    """What the layers compare; built once per article at intake and stored with it."""

    title_tokens: frozenset[str]
    canonical_url: str | None
    content_hash: str
    minhash: tuple[int, ...]
    simhash: int
    entities: frozenset[str]
    word_count: int
    published_at: datetime
    source: str  # module:stream — layers 4 (alone) and 5 only match across sources
    text_hash: str = ""  # the words of title and body (features.text_hash): exact copies share it
    markers: frozenset[str] = frozenset()  # series markers of the title (markers.extract)
    domain: str = ""  # layer 5 also needs another site: one publisher's pages share its template
    lead: str = ""  # the body's first content words (a lookup key only: copies keep their lead; not stored)


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    cluster_id: int  # its story (dedup cluster)
    features: Features
    event_id: int | None = None  # its event (same-event group); None: its story's

    @property
    def event(self) -> int:
        return self.cluster_id if self.event_id is None else self.event_id


@dataclass(frozen=True, slots=True)
class Decision:
    disposition: str  # unique | exact_duplicate | revision | near_duplicate | same_event
    layer: str  # none | guid | content | url | title | title+fingerprint | fingerprint | entities
    score: float | None = None
    matched: Candidate | None = None
    candidates: int = 0  # how many stored or earlier articles were compared


@dataclass(frozen=True, slots=True)
class Thresholds:
    title_long: float = 0.85
    title_short: float = 0.95
    title_window: timedelta = timedelta(hours=72)
    minhash: float = 0.7
    minhash_with_title: float = 0.5  # a matching headline needs less of the text to agree
    simhash_bits: int = 3
    fingerprint_window: timedelta = timedelta(days=7)
    min_fingerprint_words: int = 25  # shorter bodies share too little text to confirm anything
    entity_overlap: float = 0.8
    min_entities: int = 3
    entity_window: timedelta = timedelta(hours=24)
    template: float = 0.2  # bodies this alike under different headlines share a template, not an event
    template_titles: float = 0.5


DEFAULT = Thresholds()


def story_features(f: Features, d: Decision) -> Features:
    """What is stored of a decided article: a copy's markers are its story's (its own and its match's),
    so "O mês da festa…", a copy of "Hacktoberfest 2023" under a new headline, never matches the 2024 one."""
    if d.matched is None or d.disposition == "same_event" or d.matched.features.markers <= f.markers:
        return f
    return replace(f, markers=f.markers | d.matched.features.markers)


def groups(d: Decision, own: int) -> tuple[int, int]:
    """(story cluster, event) of an article decided as `d` whose own id is `own`: a copy joins its match's
    story and event; a `same_event` article starts its own story inside its match's event (a story
    cluster never holds two stories); anything else starts both."""
    if d.matched is None:
        return own, own
    if d.disposition == "same_event":
        return own, d.matched.event
    return d.matched.cluster_id, d.matched.event


def _within(a: Features, b: Features, window: timedelta) -> bool:
    return abs(a.published_at - b.published_at) <= window


def _fingerprint_match(a: Features, b: Features, minimum: float, t: Thresholds) -> float | None:
    """MinHash Jaccard when the bodies confirm each other (SimHash as the second opinion), else None."""
    j = fingerprint.estimated_jaccard(a.minhash, b.minhash)
    if j >= minimum or fingerprint.hamming(a.simhash, b.simhash) <= t.simhash_bits:
        return j
    return None


def exact_copy(a: Features, b: Features, t: Thresholds) -> bool:
    """The same words in title and body. Behind different URLs the body must be long enough to be an
    article's own (two empty "Live stream" videos are not one)."""
    if not a.text_hash or a.text_hash != b.text_hash:
        return False
    same_url = a.canonical_url is not None and a.canonical_url == b.canonical_url
    return same_url or min(a.word_count, b.word_count) >= t.min_fingerprint_words


def shared_template(a: Features, b: Features, t: Thresholds) -> bool:
    """One channel's videos, one show's episodes: the same sponsor lines and sign-off (MinHash ≥ 0.2)
    under unrelated headlines. Independent coverage of one event shares names, not phrasing (J < 0.15
    on the labelled set); a copy with a kept headline is layer 3's."""
    return (
        fingerprint.estimated_jaccard(a.minhash, b.minhash) >= t.template
        and titles.jaccard(a.title_tokens, b.title_tokens) < t.template_titles
    )


def other_site(a: Features, b: Features) -> bool:
    """Another source, and another site when both have one (one publisher's feeds share its template)."""
    return a.source != b.source and not (a.domain and a.domain == b.domain)


def decide(
    new: Features, same_identity: Features | None, candidates: Sequence[Candidate], t: Thresholds = DEFAULT
) -> Decision:
    """The disposition of `new`. `same_identity` is the stored article with the same message id, if any."""
    n = len(candidates)
    if same_identity is not None:  # layer 1
        if same_identity.content_hash == new.content_hash:
            return Decision("exact_duplicate", "guid", 1.0)
        return Decision("revision", "guid", 1.0)
    # Layer 2: the same words (an exact syndicated copy, whatever its URL), then the same canonical URL.
    for c in candidates:
        if exact_copy(new, c.features, t):
            same_url = new.canonical_url is not None and c.features.canonical_url == new.canonical_url
            return Decision("exact_duplicate", "url" if same_url else "content", 1.0, c, n)
    for c in candidates:
        if new.canonical_url and c.features.canonical_url == new.canonical_url:
            return Decision("near_duplicate", "url", 1.0, c, n)
    long_enough = new.word_count >= t.min_fingerprint_words
    best: Decision | None = None
    for c in candidates:  # layers 3 and 4
        f = c.features
        title_j = titles.jaccard(new.title_tokens, f.title_tokens)
        title_min = titles.threshold(
            new.title_tokens, f.title_tokens, long_min=t.title_long, short_min=t.title_short
        )
        both_long = long_enough and f.word_count >= t.min_fingerprint_words
        if title_j >= title_min and _within(new, f, t.title_window):
            if not both_long:
                found = Decision("near_duplicate", "title", title_j, c, n)
            elif (j := _fingerprint_match(new, f, t.minhash_with_title, t)) is not None:
                found = Decision("near_duplicate", "title+fingerprint", j, c, n)
            else:
                continue
        elif both_long and new.source != f.source and _within(new, f, t.fingerprint_window):
            j = fingerprint.estimated_jaccard(new.minhash, f.minhash)
            if j < t.minhash:
                continue
            found = Decision("near_duplicate", "fingerprint", j, c, n)
        else:
            continue
        if (best is None or (found.score or 0) > (best.score or 0)) and not markers.conflict(
            new.markers, f.markers
        ):
            best = found
    if best is not None:
        return best
    mine = len(entities.typed(new.entities))
    for c in candidates:  # layer 5
        f = c.features
        if (
            not other_site(new, f)
            or min(mine, len(entities.typed(f.entities))) < t.min_entities
            or not _within(new, f, t.entity_window)
        ):
            continue
        o = entities.overlap(new.entities, f.entities)
        if (
            o >= t.entity_overlap
            and (best is None or o > (best.score or 0))
            and not markers.conflict(new.markers, f.markers)
            and not shared_template(new, f, t)
        ):
            best = Decision("same_event", "entities", o, c, n)
    return best or Decision("unique", "none", candidates=n)


@dataclass(frozen=True, slots=True)
class Check:
    """One layer's comparison of two articles, for people: what was measured against what rule."""

    layer: str
    value: str
    rule: str
    passed: bool


def _hours(a: Features, b: Features) -> float:
    return abs((a.published_at - b.published_at).total_seconds()) / 3600


def explain(a: Features, b: Features, t: Thresholds = DEFAULT) -> list[Check]:
    """How every layer compares two articles (pure); `decide` applies the same rules in order."""
    hours = _hours(a, b)
    title_j = titles.jaccard(a.title_tokens, b.title_tokens)
    title_min = titles.threshold(
        a.title_tokens, b.title_tokens, long_min=t.title_long, short_min=t.title_short
    )
    j = fingerprint.estimated_jaccard(a.minhash, b.minhash)
    bits = fingerprint.hamming(a.simhash, b.simhash)
    both_long = min(a.word_count, b.word_count) >= t.min_fingerprint_words
    mine, theirs = entities.typed(a.entities), entities.typed(b.entities)
    shared = sorted(entities.shared(a.entities, b.entities))
    conflict = markers.conflict(a.markers, b.markers)
    same_url = a.canonical_url is not None and a.canonical_url == b.canonical_url
    return [
        Check("content", "same words" if a.text_hash == b.text_hash else "different words",
              f"same words, and {t.min_fingerprint_words}+ words each or the same URL", exact_copy(a, b, t)),
        Check("url", (a.canonical_url or "") if same_url else "different canonical URLs",
              "the same canonical URL", same_url),
        Check("title", f"Jaccard {title_j:.2f}, {hours:.1f} h apart",
              f"≥ {title_min:.2f} within {_h(t.title_window)}",
              title_j >= title_min and hours <= t.title_window.total_seconds() / 3600),
        Check("fingerprint", f"MinHash {j:.2f}, SimHash {bits} bits, {min(a.word_count, b.word_count)} words",
              f"MinHash ≥ {t.minhash_with_title} after a title match, ≥ {t.minhash} alone from another source "
              f"within {_h(t.fingerprint_window)}; SimHash ≤ {t.simhash_bits} bits; {t.min_fingerprint_words}+ words",
              both_long and (j >= t.minhash or bits <= t.simhash_bits)),
        Check("entities", f"{entities.overlap(a.entities, b.entities):.2f} of {min(len(mine), len(theirs))}"
              + (f" ({', '.join(shared[:8])})" if shared else ""),
              f"≥ {t.entity_overlap} of {t.min_entities}+ people/organisations/places, another site, within "
              f"{_h(t.entity_window)}",
              other_site(a, b) and min(len(mine), len(theirs)) >= t.min_entities
              and entities.overlap(a.entities, b.entities) >= t.entity_overlap and hours <= t.entity_window.total_seconds() / 3600),
        Check("series", conflict or "no conflicting version, release or episode",
              "layers 3–5 never match different items of a series", conflict is None),
        Check("template", f"MinHash {j:.2f} under titles of Jaccard {title_j:.2f}",
              f"layer 5 refuses MinHash ≥ {t.template} with titles below {t.template_titles} (one show's template)",
              not shared_template(a, b, t)),
    ]  # fmt: skip


def _h(window: timedelta) -> str:
    return f"{window.total_seconds() / 3600:.0f} h"
