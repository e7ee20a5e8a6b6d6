"""Named entities offline, for layer 5 and topic labels (pure): a capitalized-sequence heuristic.

No model or download. Runs of Capitalized words, camelCase brands (iPhone) and ACRONYMS, joined inside a
name by "of", "de", "van", "&" …, are candidates. A run breaks at punctuation (commas included) and at
"and" ("Germany and France" is two names). Leading common words ("The", "In") and role titles ("Prime
Minister", "Governor") are dropped, and so is a plural noun before "of" at a sentence start ("Shares of
Tesla" → Tesla). A single word that starts a sentence counts only when the text also capitalizes it
elsewhere; a word the text also writes in lowercase is a common word, as are stop words, weekdays and
months. Measured on a labelled sample in bench/digest_eval.py (numbers in bench/README.md).
"""

from __future__ import annotations

import re
from collections import Counter

from modules.digest.text import STOP_WORDS

# Capitalized, ACRONYM or camelCase (iPhone). A camelCase match never starts after a lowercase letter (the
# scan would have matched from that letter), so the lookbehind changes no match; it only stops the scan
# from re-reading every lowercase word once per letter.
_WORD = r"(?:[A-ZÀ-ÖØ-Þ][\w'’-]*|(?<![a-z])[a-z]+[A-Z][\w'’-]*)"
_RUN = re.compile(rf"{_WORD}(?:[ \t]+(?:(?:of|de|del|van|von|der|la|le|da|al|&)[ \t]+)?{_WORD})*")
# A lowercase word: its first letter, then "the character before it is no word character" (a lookbehind
# after a character class, so the scan can skip to candidate letters).
_LOWER = re.compile(r"[a-zà-öø-ÿ](?<![\w'’-].)[\w'’-]*")
_POSSESSIVE = re.compile(r"'s$")
_SENTENCE_END = '.!?:;"“”('
_COMMON = STOP_WORDS | {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "mr", "mrs", "ms", "dr", "says", "said", "new", "today",
    "yesterday", "tomorrow", "tonight", "despite", "breaking", "update", "read", "more", "photo", "video",
    "image", "getty", "images", "i", "i'm", "i've", "i'll", "i'd", "it's", "there", "we've", "we're",
    "you're", "don't", "here", "yes", "no", "ok",
}  # fmt: skip
# Role titles before a name: "Prime Minister Shehbaz Sharif" names Shehbaz Sharif.
_ROLES = {
    "president", "vice", "prime", "minister", "chancellor", "governor", "mayor", "senator", "sen",
    "rep", "representative", "secretary", "general", "chief", "executive", "ceo", "director", "judge",
    "justice", "king", "queen", "prince", "princess", "pope", "sir", "dame", "lord", "lady", "professor",
    "prof", "coach", "manager", "chairman", "chairwoman", "chair", "commissioner", "ambassador",
    "officer", "captain", "colonel", "sergeant", "detective", "inspector", "premier", "speaker", "leader",
}  # fmt: skip


def _word_ok(tok: str) -> bool:
    """Capitalized or camelCase words; all-capital tokens only as short acronyms (not BREAKING, COVID-19)."""
    return not tok.isupper() or (2 <= len(tok) <= 6 and tok.isalpha())


def _sentence_start(text: str, at: int) -> bool:
    i = at - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _clean(words: list[str], starts: bool) -> tuple[list[str], bool]:
    """Drop what precedes the name in a run: common words, role titles, "Shares of" at a sentence start."""
    while words and (words[0].lower().strip(".") in _COMMON or words[0].lower() in _ROLES) and len(words) > 1:
        words, starts = words[1:], False
    if words and words[0].lower() in _COMMON:
        return [], False
    if starts and len(words) >= 3 and words[1] == "of" and words[0].endswith("s") and words[0][-2:] != "ss":
        words, starts = words[2:], False
    return words, starts


def extract(text: str, limit: int = 40) -> list[str]:
    """Entities in order of first appearance, normalized (lowercase, no possessive 's), at most `limit`."""
    lower_seen = set(_LOWER.findall(text))
    runs: list[tuple[list[str], bool]] = []
    for m in _RUN.finditer(text):
        words = m.group().split()
        starts = _sentence_start(text, m.start())
        # Split at words that are not name words (long all-capital words).
        part: list[str] = []
        for w in [*words, ""]:
            if w and _word_ok(w):
                part.append(w)
                continue
            if part:
                runs.append(_clean(part, starts))
            part, starts = [], False
    capitalized_inside = {ws[0] for ws, starts in runs if ws and not starts}
    found: list[str] = []
    for ws, starts in runs:
        while ws and ws[-1] in ("of", "de", "del", "van", "von", "der", "la", "le", "da", "al", "&"):
            ws = ws[:-1]
        if not ws:
            continue
        if len(ws) == 1:
            word = ws[0].rstrip(".")
            if word.lower() in lower_seen or word.lower() in _COMMON:
                continue
            if starts and not word.isupper() and word not in capitalized_inside:
                continue
        name = _POSSESSIVE.sub("", " ".join(ws).rstrip(".").replace("’", "'")).lower()
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
