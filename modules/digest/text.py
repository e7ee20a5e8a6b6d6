"""Text features shared by dedup, scoring and clustering (pure): words, stop words, Porter stems.

Stop words are scikit-learn's English list (minus words that carry news); stems come from snowballstemmer's Porter algorithm (its C
implementation, PyStemmer, when installed); no data download, unlike nltk's corpora.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*", re.UNICODE)
_STEMMER = snowballstemmer.stemmer("porter")
# sklearn's list also drops words that carry news ("fire", "bill", "interest", "system", numbers): kept.
NEWS_WORDS = frozenset(
    [
        "fire",
        "bill",
        "interest",
        "computer",
        "system",
        "call",
        "move",
        "show",
        "part",
        "full",
        "find",
        "found",
        "amount",
        "detail",
        "describe",
        "mill",
        "cry",
        "top",
        "front",
        "back",
        "bottom",
        "side",
        "first",
        "second",
        "third",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "fifteen",
        "twenty",
        "forty",
        "fifty",
        "sixty",
        "hundred",
    ]
)
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS - NEWS_WORDS)


def words(text: str) -> list[str]:
    """Lowercased word tokens (letters and digits; inner apostrophes kept)."""
    return _WORD.findall(text.lower().replace("’", "'"))


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def content_words(text: str) -> list[str]:
    """Words without stop words or one-letter tokens."""
    return [w for w in words(text) if w not in STOP_WORDS and len(w) > 1]


def stems(text: str) -> list[str]:
    return [stem(w) for w in content_words(text)]


def first_words(text: str, n: int) -> str:
    """The first `n` whitespace-separated words of `text`."""
    return " ".join(text.split(maxsplit=n)[:n])  # maxsplit: a 3,000-word body is not split whole


def cluster_document(title: str, body: str) -> str:
    """Step 5's feature text: the title twice (weight ×2) and the first 200 words of the body."""
    return f"{title}\n{title}\n{first_words(body, 200)}"


# UTF-8 read as Windows-1252 ("Iâ€™m", "cafÃ©", "Â "): a lead byte's character, then 1–3 characters of
# continuation bytes 0x80–0xBF (the C1 range, cp1252's punctuation there, or U+00A0–U+00BF).
_MOJIBAKE = re.compile("[\u00c2-\u00f4](?:[\u0080-\u00bf€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]){1,3}")


_LOST_NBSP = re.compile("\u00c2(?= )")


def _utf8_again(m: re.Match[str]) -> str:
    raw = bytearray()
    for ch in m.group():
        try:
            raw += ch.encode("cp1252")
        except UnicodeEncodeError:
            raw += ch.encode("latin-1")  # the five bytes cp1252 leaves undefined come through as C1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return m.group()


def demojibake(text: str) -> str:
    """Undo UTF-8 that was decoded as Windows-1252 somewhere upstream, sequence by sequence (the rest of
    the text may be right): a label must not read "IÂ: encodings"."""
    if "\u00c2" in text:  # a no-break space (C2 A0) whose A0 became a plain space on the way
        text = _LOST_NBSP.sub("", text)
    return _MOJIBAKE.sub(_utf8_again, text) if _MOJIBAKE.search(text) else text
