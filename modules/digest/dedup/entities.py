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
from functools import lru_cache

from modules.digest.dedup import gazetteer
from modules.digest.dedup.gazetteer import HONORIFICS
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
_SAID = re.compile(r"[ ,]+(?:said|says|told|wrote|argued|added)\b")
_PLACE_BEFORE = re.compile(r"\b(?:in|near|across|outside|around|throughout)\s+(?:the\s+)?")
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


def _clean(words: list[str], starts: bool) -> tuple[list[str], bool, bool]:
    """Drop what precedes the name in a run: common words, role titles, "Shares of" at a sentence start.
    The third value says a role title or an honorific (Mr, Dr) was dropped: the name is a person's."""
    person = False
    while words and (words[0].lower().strip(".") in _COMMON or words[0].lower() in _ROLES) and len(words) > 1:
        person = person or words[0].lower() in _ROLES or words[0].lower().strip(".") in HONORIFICS
        words, starts = words[1:], False
    if words and words[0].lower() in _COMMON:
        return [], False, False
    if starts and len(words) >= 3 and words[1] == "of" and words[0].endswith("s") and words[0][-2:] != "ss":
        words, starts = words[2:], False
    return words, starts, person


def extract(text: str, limit: int = 40) -> list[str]:
    """Entities in order of first appearance, normalized (lowercase, no possessive 's), at most `limit`."""
    return [name for name, _ in extract_typed(text, limit)]


def extract_typed(text: str, limit: int = 40) -> list[tuple[str, str]]:
    """(name, kind) in order of first appearance; kind is per (person), org, loc or misc (see `kind`)."""
    lower_seen = set(_LOWER.findall(text))
    runs: list[tuple[list[str], bool, bool, bool, bool]] = []  # words, sentence start, person, said, place
    # Where "said …" starts and "in (the) …" ends: one scan each, looked up per run.
    said_at = {m.start() for m in _SAID.finditer(text)}
    place_at = {m.end() for m in _PLACE_BEFORE.finditer(text)}
    for m in _RUN.finditer(text):
        words = m.group().split()
        starts = _sentence_start(text, m.start())
        said = m.end() in said_at
        place = m.start() in place_at
        # Split at words that are not name words (long all-capital words).
        part: list[str] = []
        for w in [*words, ""]:
            if w and _word_ok(w):
                part.append(w)
                continue
            if part:
                runs.append((*_clean(part, starts), said and not w, place))
            part, starts, place = [], False, False
    capitalized_inside = {ws[0] for ws, starts, *_ in runs if ws and not starts}
    found: dict[str, str] = {}
    for ws, starts, person, said, place in runs:
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
        if not name:
            continue
        for name_part, k in _split_person(name, person=person, said=said, place=place):
            if name_part not in found or (found[name_part] == "misc" and k != "misc"):
                found[name_part] = k
        if len(found) >= limit:
            break
    # "Comey" after "James Comey" is the same person: one entity, or overlaps count people twice.
    surnames = {n.rsplit(" ", 1)[-1] for n, k in found.items() if k == "per" and " " in n}
    return [(n, k) for n, k in found.items() if n not in surnames]


@lru_cache(maxsize=100_000)
def _split_person(name: str, *, person: bool, said: bool, place: bool) -> tuple[tuple[str, str], ...]:
    """A name and its kind; "Jane Alvarez of Springfield" is a person and a place, not one person.
    Cached: names recur across articles."""
    head, sep, tail = name.partition(" of ")
    if sep and len(head.split()) >= 2 and kind(head, person=person) == "per":
        return ((head, "per"), (tail, kind(tail)))
    return ((name, kind(name, person=person, said=said, place=place)),)


def kind(name: str, *, person: bool = False, said: bool = False, place: bool = False) -> str:
    """per, org, loc or misc for a name (lowercase): gazetteers first, then the name's own words (Inc,
    University, Party), cues (a role title or Mr before it, "said" after it, "in" before it) and first
    names. Products, works, shows, channels and acronyms that are no known organisation (PDF, NAS) stay
    misc: layer 5 compares the others."""
    if name in gazetteer.LOCATIONS:
        return "loc"
    parts = name.split()
    if name in gazetteer.KNOWN_ORGS or any(p in gazetteer.ORG_WORDS for p in parts[1:]):
        return "org"
    if parts[0] in ("university", "bank", "ministry", "department", "house", "office", "court", "council"):
        return "org"
    if person or (parts[0] in gazetteer.FIRST_NAMES and 2 <= len(parts) <= 3):
        return "per"
    if said and 2 <= len(parts) <= 3:
        return "per"
    if (parts[-1] in gazetteer.LOCATIONS or place) and len(parts) <= 3:
        return "loc"  # "Northern Gaza", "Greater London"; "in Miyazaki", "near Kyushu"
    return "misc"


def typed(entities: frozenset[str]) -> frozenset[str]:
    """The names of the stored entities (`kind:name`) that are people, organisations or places."""
    return frozenset(e.split(":", 1)[1] for e in entities if ":" in e and not e.startswith("misc:"))


def names(entities: frozenset[str]) -> frozenset[str]:
    """Every stored entity's name, whatever its kind."""
    return frozenset(e.split(":", 1)[-1] for e in entities)


def shared(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """The people, organisations and places two articles both name. A name counts when either article
    typed it: "Fumio Kishida" is a person after "Prime Minister" in one report and an unknown name in
    another."""
    return (typed(a) | typed(b)) & names(a) & names(b)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Share of the smaller set of people, organisations and places named by the other (step 5's "entity
    overlap")."""
    ta, tb = typed(a), typed(b)
    if not ta or not tb:
        return 0.0
    return min(1.0, len(shared(a, b)) / min(len(ta), len(tb)))
