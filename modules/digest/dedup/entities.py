"""Named entities offline, for layer 5 and topic labels (pure): a capitalized-sequence heuristic.

No model or download: runs of Capitalized words (joined by "of", "de", "&", "and" inside a name) and
ACRONYMS are candidates; a single capitalized word that starts a sentence, or that appears lowercased
elsewhere in the text, is a common word and dropped, as are stop words, weekdays and months. Measured
on a labelled sample in bench/digest_entities.py (numbers in bench/README.md).
"""

from __future__ import annotations

import re
from collections import Counter

from modules.digest.text import STOP_WORDS

_TOKEN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ][\w'’-]*|[.!?:;\"“”()]")
_JOIN = {"of", "de", "del", "van", "von", "der", "&", "and", "la", "le", "da", "al"}
_COMMON = STOP_WORDS | {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "mr", "mrs", "ms", "dr", "says", "said", "new", "today",
    "breaking", "update", "read", "more", "photo", "video", "image", "getty", "images", "i", "i'm",
    "i've", "i'll", "i'd", "it's", "there", "we've", "we're", "you're", "don't", "here", "yes", "no", "ok",
}  # fmt: skip
_END = {".", "!", "?", ":", ";", '"', "“", "”", "("}


def _is_cap(tok: str) -> bool:
    return (tok[:1].isupper() and not tok.isupper()) or (
        tok.isupper() and 2 <= len(tok) <= 6 and tok.isalpha()
    )


def extract(text: str, limit: int = 40) -> list[str]:
    """Entities in order of first appearance, normalized (lowercase, no possessive 's), at most `limit`."""
    toks = _TOKEN.findall(text)
    lower_seen = {t.lower() for t in toks if t[:1].islower()}
    found: list[str] = []
    i = 0
    sentence_start = True
    while i < len(toks):
        tok = toks[i]
        if tok in _END:
            sentence_start = True
            i += 1
            continue
        if not _is_cap(tok):
            sentence_start = False
            i += 1
            continue
        run = [tok]
        j = i + 1
        while j < len(toks):
            if _is_cap(toks[j]):
                run.append(toks[j])
                j += 1
            elif toks[j].lower() in _JOIN and j + 1 < len(toks) and _is_cap(toks[j + 1]):
                run.extend(toks[j : j + 2])
                j += 2
            else:
                break
        starts = sentence_start
        sentence_start = False
        i = j
        # Drop leading common words ("The", "In", "However") of a run.
        while run and run[0].lower().strip(".") in _COMMON:
            run = run[1:]
            starts = False
        if not run:
            continue
        if len(run) == 1:
            word = run[0].rstrip(".")
            if (starts and not word.isupper()) or word.lower() in lower_seen or word.lower() in _COMMON:
                continue
        name = " ".join(run).rstrip(".").replace("’", "'")
        name = re.sub(r"'s$", "", name).lower()
        if name and name not in found:
            found.append(name)
        if len(found) >= limit:
            break
    return found


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Share of the smaller entity set found in the other (step 5's "entity overlap")."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def most_frequent(entity_lists: list[list[str]]) -> str | None:
    """The entity named by the most articles (ties: the first seen), for a topic label."""
    counts = Counter(e for ents in entity_lists for e in set(ents))
    if not counts:
        return None
    best, n = counts.most_common(1)[0]
    return best if n >= 1 else None
