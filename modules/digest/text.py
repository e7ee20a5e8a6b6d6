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
