"""The layered dedup decision (pure): a new article's features against stored candidates → disposition.

Layers, cheapest first (seed 002 step 3):
1. same source identity (message id): same content hash → `exact_duplicate`, else `revision`;
2. same canonical URL → `exact_duplicate` (same content hash) or `near_duplicate`;
3. title Jaccard (≥ 0.85 for ≥ 5 words, ≥ 0.95 shorter) within 72 h → a candidate that layer 4 confirms
   (MinHash Jaccard ≥ 0.7 or SimHash Hamming ≤ 3); when either body is too short to fingerprint, the title
   alone confirms;
4. MinHash LSH candidates (any title) from another source confirmed by Jaccard ≥ 0.7 → `near_duplicate`;
5. entity overlap ≥ 80 % (at least `min_entities` each) within 24 h, from another source → `same_event`.

Layers 4-alone and 5 skip pairs from one source: a feed's own template (show notes, a weekly calendar,
a book series) makes its different entries look alike; a feed re-posting a story keeps its title (layer 3).
otherwise `unique`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from modules.digest.dedup import entities, fingerprint, titles


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


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    cluster_id: int
    features: Features


@dataclass(frozen=True, slots=True)
class Decision:
    disposition: str  # unique | exact_duplicate | revision | near_duplicate | same_event
    layer: str  # none | guid | url | title | title+fingerprint | fingerprint | entities
    score: float | None = None
    matched: Candidate | None = None


@dataclass(frozen=True, slots=True)
class Thresholds:
    title_long: float = 0.85
    title_short: float = 0.95
    title_window: timedelta = timedelta(hours=72)
    minhash: float = 0.7
    simhash_bits: int = 3
    fingerprint_window: timedelta = timedelta(days=7)
    min_fingerprint_words: int = 25  # shorter bodies share too little text to confirm anything
    entity_overlap: float = 0.8
    min_entities: int = 3
    entity_window: timedelta = timedelta(hours=24)


DEFAULT = Thresholds()


def _within(a: Features, b: Features, window: timedelta) -> bool:
    return abs(a.published_at - b.published_at) <= window


def _fingerprint_match(a: Features, b: Features, t: Thresholds) -> float | None:
    """MinHash Jaccard when the bodies confirm each other (SimHash as the second opinion), else None."""
    j = fingerprint.estimated_jaccard(a.minhash, b.minhash)
    if j >= t.minhash or fingerprint.hamming(a.simhash, b.simhash) <= t.simhash_bits:
        return j
    return None


def decide(
    new: Features, same_identity: Features | None, candidates: Sequence[Candidate], t: Thresholds = DEFAULT
) -> Decision:
    """The disposition of `new`. `same_identity` is the stored article with the same message id, if any."""
    if same_identity is not None:  # layer 1
        if same_identity.content_hash == new.content_hash:
            return Decision("exact_duplicate", "guid", 1.0)
        return Decision("revision", "guid", 1.0)
    # Layer 2: the first article with the same canonical URL.
    for c in candidates:
        if new.canonical_url and c.features.canonical_url == new.canonical_url:
            same = c.features.content_hash == new.content_hash
            return Decision("exact_duplicate" if same else "near_duplicate", "url", 1.0, c)
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
                found = Decision("near_duplicate", "title", title_j, c)
            elif (j := _fingerprint_match(new, f, t)) is not None:
                found = Decision("near_duplicate", "title+fingerprint", j, c)
            else:
                continue
        elif both_long and new.source != f.source and _within(new, f, t.fingerprint_window):
            j = fingerprint.estimated_jaccard(new.minhash, f.minhash)
            if j < t.minhash:
                continue
            found = Decision("near_duplicate", "fingerprint", j, c)
        else:
            continue
        if best is None or (found.score or 0) > (best.score or 0):
            best = found
    if best is not None:
        return best
    for c in candidates:  # layer 5
        f = c.features
        if (
            new.source == f.source
            or min(len(new.entities), len(f.entities)) < t.min_entities
            or not _within(new, f, t.entity_window)
        ):
            continue
        o = entities.overlap(new.entities, f.entities)
        if o >= t.entity_overlap and (best is None or o > (best.score or 0)):
            best = Decision("same_event", "entities", o, c)
    return best or Decision("unique", "none")
