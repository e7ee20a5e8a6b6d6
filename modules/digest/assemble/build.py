"""The digest as data (pure): score the window, cluster it, pick leads, fill sections, run self-checks.

Input rows come from store.articles.window (one dict per article, with `tier` and `health` joined in).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scipy.sparse import csr_matrix
from sklearn.preprocessing import normalize

from modules.digest.assemble import checks, summary
from modules.digest.assemble.stories import representative
from modules.digest.cluster import topics, trends
from modules.digest.model import Digest, Item
from modules.digest.score import importance as imp
from modules.digest.settings import DigestType
from modules.digest.text import cluster_document, first_words

DUPLICATES = ("exact_duplicate", "near_duplicate")


@dataclass(frozen=True, slots=True)
class Options:
    kind: DigestType
    start: datetime
    end: datetime
    now: datetime
    topics_k: int | None = None
    interests: str = ""
    liked: Sequence[tuple[str, str]] = ()  # (title, body) of liked articles: part of the interest profile
    min_importance: float = 15.0
    previous: Sequence[trends.Previous] | None = None  # None: no previous digest of this type


def _tier(row: Mapping[str, Any]) -> int:
    return int(row.get("tier") or imp.UNKNOWN_TIER)


def representatives(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One article per story cluster (`representative`)."""
    stories: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        stories.setdefault(r["cluster_id"], []).append(r)
    return [representative(members) for members in stories.values()]


def score(
    reps: Sequence[Mapping[str, Any]],
    events: Mapping[int, Sequence[Mapping[str, Any]]],
    relevance: Sequence[float],
    now: datetime,
) -> list[imp.Components]:
    """Components per story; corroboration counts the sources of the whole event (its copies and the
    other coverage linked as same_event)."""
    out = []
    for r, rel in zip(reps, relevance, strict=True):
        members = events[r["event_id"]]
        sources = {(m["source_module"], m["stream"]) for m in members}
        hours = (now - r["published_at"]).total_seconds() / 3600
        out.append(
            imp.Components(
                authority=imp.authority(_tier(r), r.get("health")),
                recency=imp.recency(hours, date_uncertain=r["date_uncertain"]),
                corroboration=imp.corroboration(len(sources), [_tier(m) for m in members]),
                relevance=rel,
                depth=imp.depth(r["word_count"], r["depth_signals"], partial=r["partial_content"]),
            )
        )
    return out


def event_leads(reps: Sequence[Mapping[str, Any]], scores: Sequence[float]) -> list[int]:
    """Indexes of the best-scored story of each event: an event is one digest item, its other stories
    are its related coverage (story clusters themselves never merge)."""
    best: dict[int, int] = {}
    for i, r in enumerate(reps):
        j = best.get(r["event_id"])
        if j is None or scores[i] > scores[j]:
            best[r["event_id"]] = i
    return sorted(best.values())


def profile(v: topics.Vectors, interests: str, liked: Sequence[tuple[str, str]]) -> csr_matrix | None:
    """The interest profile as one unit TF-IDF vector in the window's vocabulary: the keywords and the
    mean of the liked articles (step 5's text of each), weighted equally; None when there is neither.
    A profile without a word of the window is the zero vector: every article is then irrelevant (0)."""
    keywords = " ".join(k.strip() for k in interests.split(",") if k.strip())
    parts = []
    if keywords:
        parts.append(normalize(v.vectorizer.transform([keywords])))
    if liked:
        likes = normalize(v.vectorizer.transform([cluster_document(t, b) for t, b in liked]))
        parts.append(normalize(csr_matrix(likes.mean(axis=0))))
    if not parts:
        return None
    return normalize(csr_matrix(parts[0] if len(parts) == 1 else parts[0] + parts[1]))  # no shared word: 0


def relevance_scores(v: topics.Vectors, interests: str, liked: Sequence[tuple[str, str]] = ()) -> list[float]:
    """Cosine of each article's TF-IDF vector to the interest profile × 100 (50 when there is none)."""
    n = v.matrix.shape[0]
    p = profile(v, interests, liked) if n else None
    if p is None:
        return [imp.NEUTRAL_RELEVANCE] * n
    sims = (v.matrix @ p.T).toarray().ravel()  # rows and profile are unit vectors: this is the cosine
    return [round(100.0 * float(s), 2) for s in sims]


def build(rows: Sequence[Mapping[str, Any]], health: dict[str, Any], o: Options) -> Digest:
    events: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        events.setdefault(r["event_id"], []).append(r)
    reps = representatives(rows)
    vectors = topics.vectorize([cluster_document(r["title"], r["body"]) for r in reps])
    comps = score(reps, events, relevance_scores(vectors, o.interests, o.liked), o.now)
    scores = [c.total for c in comps]
    digest_checks = [checks.t5_on_top(scores, [_tier(r) for r in reps], comps)]
    keep = [i for i in event_leads(reps, scores) if scores[i] >= o.min_importance]
    kept = topics.Vectors(vectors.matrix[keep], vectors.vectorizer)
    labels = topics.agglomerative(kept, o.topics_k) if o.topics_k else topics.dbscan(kept)
    found = topics.build(
        kept,
        labels,
        importance=[scores[i] for i in keep],
        tiers=[_tier(reps[i]) for i in keep],
        entities=[list(reps[i]["entities"]) for i in keep],
        titles=[reps[i]["title"] for i in keep],
        texts=[f"{reps[i]['title']}\n{first_words(reps[i]['body'], 120)}" for i in keep],
    )
    previous = list(o.previous or [])
    items = []
    for t in found:
        members = [reps[keep[m]] for m in t.members]
        lead = reps[keep[t.lead]]
        top = max(scores[keep[m]] for m in t.members)
        everyone = [a for m in members for a in events[m["event_id"]] if a["id"] != lead["id"]]
        names = Counter(a["source_name"] for a in everyone if a["source_name"] != lead["source_name"])
        before = trends.match(frozenset(t.terms), previous)
        section = imp.section_for(top)
        items.append(
            Item(
                section=section,
                label=t.label,
                trend=trends.indicator(len(members), before, has_previous_digest=o.previous is not None),
                title=lead["title"],
                source=lead["source_name"],
                tier=_tier(lead),
                published=lead["published_at"],
                date_uncertain=lead["date_uncertain"],
                url=lead["url"],
                score=top,
                summary="",  # written after the self-checks, for the items that stay
                related_count=len(everyone),
                related_sources=[n for n, _ in names.most_common()],
                article_id=lead["id"],
                terms=list(t.terms),
                topic_size=len(members),
                cluster_id=lead["cluster_id"],
                event_id=lead["event_id"],
                stories=len({a["cluster_id"] for m in members for a in events[m["event_id"]]}),
            )
        )
    items.sort(key=lambda i: -i.score)
    declining = trends.declining([frozenset(i.terms) for i in items], previous)
    report = {
        **health,
        "emerging": [i.label for i in items if i.trend == "EMERGING"],
        "declining": declining + [i.label for i in items if i.trend == "FADING"],
    }
    digest = Digest(
        type=o.kind.name,
        title=o.kind.title,
        window_start=o.start,
        window_end=o.end,
        created_at=o.now,
        article_count=len(rows),
        duplicates_removed=sum(1 for r in rows if r["disposition"] in DUPLICATES),
        items=items,
        health=report,
        checks=digest_checks,
    )
    digest.checks.extend(checks.run(digest, o.kind, has_previous=o.previous is not None))
    bodies = {r["id"]: r["body"] for r in reps}
    for item in digest.items:
        if item.section == "top":
            item.summary = summary.extractive(bodies[item.article_id])
        elif item.section == "noteworthy":
            item.summary = summary.one_line(bodies[item.article_id])
    return digest
