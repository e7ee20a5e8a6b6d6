"""Step 4's and step 6's self-checks (pure). Each returns what it found and adjusts when it fails."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modules.digest.model import Digest
from modules.digest.score.importance import Components, section_for
from modules.digest.settings import DigestType

LABEL_MAX = 60
Check = dict[str, Any]


def _check(name: str, problems: Sequence[str], action: str) -> Check:
    return {
        "name": name,
        "ok": not problems,
        "problems": list(problems),
        "action": action if problems else "",
    }


def t5_on_top(scores: list[float], tiers: Sequence[int], comps: Sequence[Components]) -> Check:
    """The best article comes from a T5 source: review its corroboration and relevance. A single-source
    or relevance-only lead is an anomaly: it is placed just below the best article of a better tier."""
    if not scores:
        return _check("t5_on_top", [], "")
    top = max(range(len(scores)), key=scores.__getitem__)
    others = [s for s, t in zip(scores, tiers, strict=True) if t != 5]
    if tiers[top] != 5 or not others:
        return _check("t5_on_top", [], "")
    c = comps[top]
    problems = []
    if c.corroboration <= 25:
        problems.append(f"T5 lead has a single source (corroboration {c.corroboration:.0f})")
    if c.relevance >= 90:
        problems.append(f"T5 lead rests on relevance {c.relevance:.0f}")
    if not problems:
        return _check("t5_on_top", [], "")
    scores[top] = round(max(others) - 0.01, 2)
    return _check("t5_on_top", problems, f"score lowered to {scores[top]}, below the best T1–T4 article")


def run(digest: Digest, kind: DigestType, *, has_previous: bool) -> list[Check]:
    return [
        attribution(digest),
        ranking(digest),
        sizing(digest, kind),
        labels(digest),
        trends(digest, has_previous),
    ]


def attribution(digest: Digest) -> Check:
    """Every item names its source and links to it; items that cannot be attributed are left out."""
    problems = [f"no link: {i.title[:60]!r}" for i in digest.items if not i.url] + [
        f"no source name: {i.title[:60]!r}" for i in digest.items if not i.source.strip()
    ]
    digest.items = [i for i in digest.items if i.url and i.source.strip()]
    return _check("attribution", problems, "left out the items without source name or link")


def ranking(digest: Digest) -> Check:
    """Top stories are the highest scores: sections follow the score thresholds, each sorted."""
    problems = [
        f"{i.label!r} ({i.score}) filed under {i.section}"
        for i in digest.items
        if section_for(i.score) != i.section
    ]
    ordered = sorted(digest.items, key=lambda i: -i.score)
    if ordered != digest.items:
        problems.append("items out of score order")
    for i in ordered:
        i.section = section_for(i.score)
    digest.items = ordered
    return _check("ranking", problems, "re-ranked by score")


def sizing(digest: Digest, kind: DigestType) -> Check:
    limits = {"top": kind.top, "noteworthy": kind.noteworthy, "also": kind.also}
    counts = {s: len(digest.section(s)) for s in limits}
    problems = [f"{s}: {counts[s]} > {limits[s]}" for s in limits if counts[s] > limits[s]]
    kept: dict[str, int] = {s: 0 for s in limits}
    out = []
    for i in digest.items:
        if kept[i.section] < limits[i.section]:
            kept[i.section] += 1
            out.append(i)
    digest.items = out
    return _check("sizing", problems, f"trimmed to {kind.top}/{kind.noteworthy}/{kind.also}")


def labels(digest: Digest) -> Check:
    """Labels must say something and tell topics apart; otherwise the lead's title is the label."""
    problems = []
    seen: set[str] = set()
    for i in digest.items:
        if not i.label.strip(" :,") or i.label.lower() in seen:
            problems.append(f"unclear label {i.label!r}")
            title = i.title.strip()
            i.label = title if len(title) <= LABEL_MAX else title[: LABEL_MAX - 1].rstrip() + "…"
        seen.add(i.label.lower())
    return _check("labels", problems, "relabelled with the lead title")


def trends(digest: Digest, has_previous: bool) -> Check:
    """Trend tags need a previous digest to compare with, and EMERGING needs 3+ articles."""
    problems = []
    for i in digest.items:
        if i.trend and (not has_previous or (i.trend == "EMERGING" and i.topic_size < 3)):
            problems.append(f"{i.trend} on {i.label!r} without grounds")
            i.trend = None
    return _check("trends", problems, "removed unfounded trend tags")
