"""Article → the features every dedup layer compares (pure; computed once at intake and stored)."""

from __future__ import annotations

from modules.digest.dedup import entities, fingerprint, titles, urls
from modules.digest.dedup.layers import Features
from modules.digest.model import Article
from modules.digest.text import content_words, first_words

ENTITY_WORDS = 300  # entities from the title and the lead of the body, where the event is named
FINGERPRINT_WORDS = 600  # syndicated copies share their lead; longer bodies only cost time


def features(a: Article) -> Features:
    body = content_words(first_words(a.body, FINGERPRINT_WORDS) or a.title)
    return Features(
        title_tokens=titles.tokens(a.title),
        canonical_url=urls.canonical(a.url),
        content_hash=a.content_hash,
        minhash=fingerprint.minhash(body),
        simhash=fingerprint.simhash(body),
        entities=frozenset(entities.extract(entity_text(a.title, a.body))),
        word_count=a.word_count,
        published_at=a.published_at,
        source=f"{a.source_module}:{a.stream}",
    )


def entity_text(title: str, body: str) -> str:
    """The lead of the body, with the title only when it is in sentence case: in a Title Case headline
    every word looks like a name."""
    long_words = [w for w in title.split() if len(w) > 3]
    title_case = long_words and sum(w[:1].isupper() for w in long_words) / len(long_words) >= 0.6
    lead = first_words(body, ENTITY_WORDS)
    return lead if title_case else f"{title}.\n{lead}"
