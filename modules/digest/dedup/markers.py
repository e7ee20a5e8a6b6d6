"""Series markers of a title (pure): version numbers, release qualifiers, numbered episodes and parts.

Release series and numbered episodes are the classic false friends of dedup: "Django 5.1 rc1" and
"Django 5.1 released", "Episode 152" and "Episode 153", "Changeset 159552580" and "Changeset 159552572"
share their names, their template and often most of their text. Two titles that both carry a marker of
one kind with different values tell different stories (layers 3–5 never match them); only the source's
identity or the same canonical URL (layers 1–2) can still say otherwise.

Markers are strings `kind:value`: `v:5.1` (a version), `q:rc1` (a qualifier; a version without one is
`q:final`), `n:episode:152` (a numbered item of a series, ordinals as numbers: "Part Two" → `n:part:2`), `n:year:2024`
(a yearly edition: "Hacktoberfest 2024"). A copy's stored markers are its story's (its own and its
match's): a copy under a new headline still names the edition it copies.
Plain numbers are no markers: "Quake kills 50" and "Quake toll rises to 120" are one event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from modules.digest.text import STOP_WORDS

_ORDINALS = {
    "one": 1, "first": 1, "two": 2, "second": 2, "three": 3, "third": 3, "four": 4, "fourth": 4,
    "five": 5, "fifth": 5, "six": 6, "sixth": 6, "seven": 7, "seventh": 7, "eight": 8, "eighth": 8,
    "nine": 9, "ninth": 9, "ten": 10, "tenth": 10, "eleven": 11, "eleventh": 11, "twelve": 12, "twelfth": 12,
    "i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10,
}  # fmt: skip
# Nouns that number the items of a series: "Episode 152", "Ep. 7", "Part II", "Day 3", "Issue #42".
_SERIES = {
    "episode": "episode", "episodes": "episode", "ep": "episode", "eps": "episode", "folge": "episode",
    "épisode": "episode", "part": "part", "pt": "part", "chapter": "chapter", "ch": "chapter",
    "issue": "issue", "no": "number", "number": "number", "nr": "number", "vol": "volume",
    "volume": "volume", "season": "season", "series": "season", "day": "day", "week": "week",
    "round": "round", "game": "game", "stage": "stage", "lesson": "lesson", "session": "session",
    "edition": "edition", "changeset": "changeset", "build": "build", "patch": "patch",
    "release": "release", "sprint": "sprint", "devlog": "devlog", "update": "update", "weeknote": "week",
    "weeknotes": "week", "newsletter": "issue", "digest": "issue", "roundup": "issue", "show": "episode",
    "podcast": "episode", "cast": "episode", "video": "episode", "livestream": "episode", "stream": "episode",
}  # fmt: skip
_WORD_NUMBERED = {
    "part",
    "chapter",
    "season",
    "volume",
    "episode",
    "day",
    "week",
    "round",
    "game",
    "stage",
    "lesson",
    "session",
    "edition",
}
_NUMBER = r"(?:\d{1,12}|" + "|".join(sorted(_ORDINALS, key=len, reverse=True)) + r")"
_NUMBERED = re.compile(
    rf"\b({'|'.join(sorted(map(re.escape, _SERIES), key=len, reverse=True))})\.?\s*(?:#|n[o°º]\.?\s*)?\s*"
    rf"({_NUMBER})\b",
    re.IGNORECASE,
)
# "S02E05", "E152", "#152" and a leading "152:" / "152 -" / "[152]" number the item itself.
_SEASON_EPISODE = re.compile(r"\bS(\d{1,3})\s*E(\d{1,4})\b", re.IGNORECASE)
_HASH = re.compile(r"(?:^|\s)#(\d{1,7})\b")
_LEADING = re.compile(r"^\s*\[?(?:#|ep\.?\s*|e)?(\d{1,5})\]?\s*[:\-–—|.]\s+\S", re.IGNORECASE)
_VERSION = re.compile(
    r"(?<![\w.$€£¥])(v|version\s)?(\d{1,4}(?:\.\d{1,4}){1,3})"  # 5.1, v3.13.0, 2.0.1.4
    r"(?:[-_. ]?(rc|beta|alpha|a|b|pre|preview|dev|canary|nightly)[-_. ]?(\d{0,3}))?(?![\w.]*\d)"
    r"(?!\s*(?:%|percent|per cent|[mb]illion|bn|trillion|points?|pts|degrees|°|km|kg|mph|ft|m\b|s\b|x\b))",
    re.IGNORECASE,
)
_PRODUCT = re.compile(r"([A-Za-z][\w+#-]*)\s+$")  # the word a version number follows: "Django 5.1", "iOS 18"
_NOT_PRODUCTS = {
    "magnitude",
    "at",
    "to",
    "from",
    "by",
    "of",
    "rate",
    "rates",
    "grew",
    "up",
    "down",
    "rose",
    "fell",
}
# "Hacktoberfest 2024", "WWDC 2023", "Budget 2025": a yearly edition (not "Since 2019", "In 2024").
_EDITION_YEAR = re.compile(r"#?([A-Z][\w-]*)\s+((?:19|20)\d\d)\b")
_SINGLE_VERSION = re.compile(r"(?<![\w.])v(\d{1,4})\b", re.IGNORECASE)  # v5 (not "5")
_QUALIFIER = re.compile(
    r"\b(release candidate|developer preview|public preview|early access|rc|beta|alpha|preview|nightly|"
    r"canary|final|stable|lts|general availability|ga)[-_ ]?(\d{0,3})\b",
    re.IGNORECASE,
)
_QUALIFIER_NAMES = {
    "release candidate": "rc", "developer preview": "preview", "public preview": "preview",
    "early access": "preview", "a": "alpha", "b": "beta", "pre": "preview", "dev": "nightly",
    "canary": "nightly", "stable": "final", "general availability": "final", "ga": "final",
}  # fmt: skip


def _ordinal(text: str) -> str:
    return str(_ORDINALS.get(text.lower(), text.lstrip("0") or "0"))


def _qualifier(name: str, number: str) -> str:
    q = name.lower()
    q = _QUALIFIER_NAMES.get(q, q)
    return f"q:{q}{number}" if q != "final" and q != "lts" else f"q:{q}"


def extract(title: str) -> frozenset[str]:
    """The markers of a title (see the module docstring)."""
    found: set[str] = set()
    for m in _NUMBERED.finditer(title):
        noun = _SERIES[m[1].lower()]
        if m[2].lower() in _ORDINALS and noun not in _WORD_NUMBERED:
            continue  # "no one", "Show One": words number only parts, chapters, seasons, days …
        found.add(f"n:{noun}:{_ordinal(m[2])}")
    for m in _SEASON_EPISODE.finditer(title):
        found.add(f"n:season:{int(m[1])}")
        found.add(f"n:episode:{int(m[2])}")
    for m in _HASH.finditer(title):
        found.add(f"n:#:{int(m[1])}")
    for m in _EDITION_YEAR.finditer(title):
        if m[1].lower() not in STOP_WORDS:
            found.add(f"n:year:{m[2]}")
    if (lead := _LEADING.match(title)) is not None:
        found.add(f"n:#:{int(lead[1])}")
    versions = False
    for m in _VERSION.finditer(title):
        before = _PRODUCT.search(title, 0, m.start())
        if not m[1] and (before is None or before[1].lower() in _NOT_PRODUCTS or before[1].islower()):
            continue  # a decimal, not a version: versions follow a product name ("Django 5.1") or a "v"
        versions = True
        found.add(f"v:{m[2]}")
        if m[3]:
            found.add(_qualifier(m[3], m[4] or ""))
    for m in _SINGLE_VERSION.finditer(title):
        versions = True
        found.add(f"v:{m[1]}")
    for m in _QUALIFIER.finditer(title):
        q = _qualifier(m[1], m[2] or "")
        if versions or q not in ("q:final", "q:lts"):  # "the final assault" names no release
            found.add(q)
    if versions and not any(x.startswith("q:") for x in found):
        found.add("q:final")  # "Django 5.1 released" is the final release
    return frozenset(found)


def _kinds(markers: Iterable[str]) -> dict[str, set[str]]:
    """Markers by kind: `v`, `q`, and `n:<noun>` per series noun (`#` counts as any noun's number)."""
    out: dict[str, set[str]] = {}
    for m in markers:
        kind, _, value = m.rpartition(":")
        out.setdefault(kind, set()).add(value)
    return out


def conflict(a: frozenset[str], b: frozenset[str]) -> str | None:
    """Why two titles name different items of a series (None when nothing says so): a kind of marker
    both carry with no value in common. A version conflicts only with a version, a qualifier only when
    both titles name a release (`q:final` is implied by a bare version number)."""
    if not a or not b:
        return None
    ka, kb = _kinds(a), _kinds(b)
    numbers_a = {v for k, vs in ka.items() if k.startswith("n:") for v in vs}
    numbers_b = {v for k, vs in kb.items() if k.startswith("n:") for v in vs}
    for kind in sorted(ka.keys() & kb.keys()):
        if kind == "q" and not ("v" in ka and "v" in kb):
            continue
        if kind.startswith("n:") and numbers_a & numbers_b:
            continue  # "Episode 152" and "#152": the same item named two ways
        if ka[kind].isdisjoint(kb[kind]):
            left, right = ",".join(sorted(ka[kind])), ",".join(sorted(kb[kind]))
            return f"{_KIND_NAMES.get(kind, kind)} {left} vs {right}"
    if ("n:#" in ka) != ("n:#" in kb) and numbers_a and numbers_b and numbers_a.isdisjoint(numbers_b):
        return f"numbered {','.join(sorted(numbers_a))} vs {','.join(sorted(numbers_b))}"
    return None


_KIND_NAMES = {"v": "version", "q": "release"}
