"""Extractive summaries (pure): whole leading sentences, 50–75 words for a top story, one line otherwise."""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9“\"'])")


def extractive(text: str, *, min_words: int = 50, max_words: int = 75) -> str:
    """Leading sentences until `min_words`; cut (with …) at `max_words` when a sentence runs over."""
    out: list[str] = []
    for sentence in _SENTENCE.split(" ".join(text.split())):
        words = sentence.split()
        if len(out) + len(words) > max_words:
            room = max_words - len(out)
            if len(out) < min_words and room > 0:
                out.extend(words[:room])
                out[-1] = out[-1].rstrip(",;:") + "…"
            break
        out.extend(words)
        if len(out) >= min_words:
            break
    return " ".join(out)


def one_line(text: str, max_words: int = 30) -> str:
    return extractive(text, min_words=1, max_words=max_words)
