"""Article → the features every dedup layer compares (pure; computed once at intake and stored)."""

from __future__ import annotations

from modules.digest.dedup import entities, fingerprint, titles, urls
from modules.digest.dedup.layers import Features
from modules.digest.model import Article
from modules.digest.text import first_words

ENTITY_WORDS = 300  # entities from the title and the lead of the body, where the event is named
FINGERPRINT_WORDS = 600  # syndicated copies share their lead; longer bodies only cost time


def features(a: Article) -> Features:
    body = first_words(a.body, FINGERPRINT_WORDS) or a.title
    return Features(
        title_tokens=titles.tokens(a.title),
        canonical_url=urls.canonical(a.url),
        content_hash=a.content_hash,
        minhash=fingerprint.minhash(body),
        simhash=fingerprint.simhash(body),
        entities=frozenset(entities.extract(f"{a.title}.\n{first_words(a.body, ENTITY_WORDS)}")),
        word_count=a.word_count,
        published_at=a.published_at,
    )
