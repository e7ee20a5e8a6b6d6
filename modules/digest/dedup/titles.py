"""Layer 3: title normalization and Jaccard similarity (pure)."""

from __future__ import annotations

import re

from modules.digest.text import content_words

_PREFIX = re.compile(
    r"^\s*(?:\[?(?:breaking(?: news)?|update[d]?|icymi|just in|exclusive|watch|live|developing|opinion|"
    r"analysis|video|new|report)\]?\s*[:\-–—|]\s*)+",
    re.IGNORECASE,
)
# " - Reuters", " | BBC News": a short site name appended by syndication.
_SITE_SUFFIX = re.compile(r"\s+[|\-–—]\s+[^|\-–—]{1,40}$")


def strip_decoration(title: str) -> str:
    """A title without news prefixes (Breaking:, Update:, ICYMI:, JUST IN: …) or a site suffix."""
    t = _PREFIX.sub("", title.strip())
    stripped = _SITE_SUFFIX.sub("", t)
    if len(stripped.split()) >= 4:  # keep short titles whole: "Apple - iPhone" is not a site suffix
        t = stripped
    return t


def normalize(title: str) -> str:
    """Lowercase title without news prefixes or a site suffix (layer 3 compares these)."""
    return strip_decoration(title).lower()


def tokens(title: str) -> frozenset[str]:
    """The word set compared by layer 3 (punctuation and stop words dropped)."""
    return frozenset(content_words(normalize(title)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def threshold(
    a: frozenset[str], b: frozenset[str], *, long_min: float = 0.85, short_min: float = 0.95
) -> float:
    """Step 3: ≥ 5 words need Jaccard ≥ 0.85, shorter titles ≥ 0.95 (the shorter title decides)."""
    return long_min if min(len(a), len(b)) >= 5 else short_min
