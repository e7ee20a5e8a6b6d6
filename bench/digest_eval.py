"""Digest dedup quality on a labelled set built from ../shared/fixtures (bench/digest_data.py).

Every item goes through the real intake path (`modules.digest.intake.handler.ingest_many`: features, the
candidate query on PostgreSQL, the layered decision, the insert) in arrival order, `--batch` items per
transaction as a subscription delivery hands them (1: one at a time). The set includes the false friends
of bench/digest_false_friends.json (release series, numbered episodes, one channel's videos, series
parts) and same-event coverage (one event, different stories).

Dedup verdicts (exact_duplicate, near_duplicate, revision) are correct when the matched article tells the
same story; recall counts items that have an earlier item of the same story. `same_event` verdicts are
correct when the matched article covers the same event (its own story included); their recall counts
items whose event, not story, came earlier. Per layer: precision; per kind of copy: recall. Story
clusters (stored cluster_id): purity and how many hold two stories (target: none). Topic-cluster purity:
DBSCAN (step 5) over all items (topics may legitimately join related stories: a lower bound). Also: the
entity heuristic on bench/digest_entities.json (tuning) and digest_entities_holdout.json.

    .venv/bin/python bench/digest_eval.py [--copies 600] [--seed 7] [--batch 1]

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME. Results: stdout and bench/results/digest_eval.json.
Targets (issue 28): no story cluster with two stories, same_event precision ≥ 0.95, dedup recall ≥ 0.95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import digest_data  # noqa: E402
from modules.digest.cluster import topics  # noqa: E402
from modules.digest.dedup import entities  # noqa: E402
from modules.digest.intake.handler import ingest_many  # noqa: E402
from modules.digest.store.articles import placeholder_index  # noqa: E402
from modules.digest.text import cluster_document  # noqa: E402

ENTITY_SAMPLE = REPO / "bench" / "digest_entities.json"  # the heuristic was tuned on these
ENTITY_HOLDOUT = REPO / "bench" / "digest_entities_holdout.json"  # written before testing on them


def purity(groups: dict[Any, list[int]]) -> float:
    total = sum(len(g) for g in groups.values())
    return sum(Counter(g).most_common(1)[0][1] for g in groups.values()) / total if total else 1.0


def entity_scores(path: Path) -> dict[str, float]:
    """Micro precision/recall of the capitalized-sequence heuristic on a hand-labelled sample."""
    sample = json.loads(path.read_text())
    tp = fp = fn = 0
    for case in sample:
        got, gold = set(entities.extract(case["text"])), {g.lower() for g in case["entities"]}
        tp, fp, fn = tp + len(got & gold), fp + len(got - gold), fn + len(gold - got)
    p, r = tp / (tp + fp), tp / (tp + fn)
    return {
        "sentences": len(sample),
        "precision": round(p, 3),
        "recall": round(r, 3),
        "f1": round(2 * p * r / (p + r), 3),
    }


def real(article_id: int, in_part: list[int]) -> int:
    """The stored id of a match, which ingest_many may name by a placeholder for the same delivery."""
    index = placeholder_index(article_id)
    return article_id if index is None else in_part[index]


DEDUP = ("exact_duplicate", "near_duplicate", "revision")
FALSE_FRIEND_KINDS = ("release", "episode", "video", "series")


def precision(vs: list[bool]) -> dict[str, float]:
    return {"verdicts": len(vs), "precision": round(sum(vs) / len(vs), 4) if vs else 1.0}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    t = time.perf_counter()
    items = digest_data.build(copies=args.copies, seed=args.seed)
    print(f"{len(items)} items built in {time.perf_counter() - t:.1f}s", flush=True)
    host = await digest_data.bench_host("digest-eval-")
    try:
        pool = host.require_pool()
        item_of: dict[int, digest_data.Item] = {}  # stored id → item
        seen_stories: set[int] = set()
        seen_events: set[int] = set()
        dedup: list[tuple[str, str, bool]] = []  # (layer, kind, correct): exact/near/revision verdicts
        scores: list[tuple[str, float, bool]] = []  # (layer, score, correct)
        events: list[tuple[str, bool]] = []  # (kind, correct): same_event verdicts
        should: Counter[str] = Counter()  # items with an earlier item of their story, by kind
        found: Counter[str] = Counter()
        coverage_should = coverage_found = 0  # items whose event, not story, came earlier
        wrong: list[str] = []
        t = time.perf_counter()
        for start in range(0, len(items), args.batch):
            part = items[start : start + args.batch]
            async with pool.acquire() as conn, conn.transaction():
                decisions = await ingest_many(conn, [item.article for item in part])
                ids = await conn.fetch(
                    "SELECT message_id, id FROM mod_digest.articles WHERE message_id = ANY($1::uuid[])",
                    [item.article.message_id for item in part],
                )
            row_ids = {r["message_id"]: r["id"] for r in ids}
            in_part = [row_ids.get(item.article.message_id, 0) for item in part]
            for item, d, row_id in zip(part, decisions, in_part, strict=True):
                item_of[row_id] = item
                has_earlier = item.story in seen_stories
                event_earlier = item.event_id in seen_events and not has_earlier
                seen_stories.add(item.story)
                seen_events.add(item.event_id)
                should[item.kind] += has_earlier
                coverage_should += event_earlier
                if d.matched is None:
                    continue
                other = item_of.get(real(d.matched.id, in_part))
                if other is None:
                    continue
                if d.disposition == "same_event":
                    correct = other.event_id == item.event_id
                    events.append((item.kind, correct))
                    coverage_found += correct and event_earlier
                else:
                    correct = other.story == item.story
                    dedup.append((d.layer, item.kind, correct))
                    scores.append((d.layer, d.score or 0.0, correct))
                    found[item.kind] += correct and has_earlier
                if not correct:
                    wrong.append(f"{d.disposition}/{d.layer} {d.score}: {item.article.title[:60]!r} ~ "
                                 f"{other.article.title[:60]!r}")  # fmt: skip
        ingest_s = time.perf_counter() - t
        rows = await pool.fetch("SELECT id, cluster_id, event_id FROM mod_digest.articles")
    finally:
        await host.close(stop_started_services=True)
    clusters: dict[int, list[int]] = defaultdict(list)
    event_groups: dict[int, list[int]] = defaultdict(list)
    for r in rows:
        clusters[r["cluster_id"]].append(item_of[r["id"]].story)
        event_groups[r["event_id"]].append(item_of[r["id"]].event_id)
    mixed = [g for g in clusters.values() if len(set(g)) > 1]
    friends = {i.story for i in items if i.kind in FALSE_FRIEND_KINDS}
    friend_clusters = [g for g in mixed if friends & set(g)]
    friend_events = [g for g in event_groups.values() if len(set(g)) > 1 and friends & set(g)]
    by_layer = {
        layer: precision([v[2] for v in dedup if v[0] == layer]) for layer in sorted({v[0] for v in dedup})
    }
    positives = sum(should.values())
    docs = [cluster_document(i.article.title, i.article.body) for i in items]
    labels = topics.dbscan(topics.vectorize(docs))
    topic_groups: dict[int, list[int]] = defaultdict(list)
    for label, item in zip(labels, items, strict=True):
        topic_groups[label].append(item.story)
    multi = {k: v for k, v in topic_groups.items() if len(v) > 1}
    return {
        "items": len(items),
        "kinds": dict(Counter(i.kind for i in items)),
        "hard_negative_pairs": digest_data.hard_negative_pairs(items),
        "dedup": {
            **precision([v[2] for v in dedup]),
            "recall": round(sum(found.values()) / positives, 4) if positives else 1.0,
            "positives": positives,
        },
        "by_layer": by_layer,
        "same_event": {
            **precision([v[1] for v in events]),
            "coverage_recall": round(coverage_found / coverage_should, 4) if coverage_should else 1.0,
            "coverage_positives": coverage_should,
        },
        "recall_by_kind": {k: round(found[k] / should[k], 4) for k in should if should[k]},
        "story_clusters": {
            "purity": round(purity(clusters), 4),
            "with_two_stories": len(mixed),
            "with_a_false_friend": len(friend_clusters),
        },
        "events_with_a_false_friend": len(friend_events),
        "wrong": wrong,
        "fingerprint_scores_below_0.76": sorted(
            round(sc, 3) for layer, sc, ok in scores if layer == "fingerprint" and sc < 0.76
        ),
        "topic_clusters": {
            "purity": round(purity(topic_groups), 4),
            "multi_item_topics": len(multi),
            "purity_of_multi_item_topics": round(purity(multi), 4),
        },
        "entities": entity_scores(ENTITY_SAMPLE),
        "entities_holdout": entity_scores(ENTITY_HOLDOUT),
        "ingest_ms_per_item": round(1000 * ingest_s / len(items), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--batch", type=int, default=1, help="items per delivery (ingest_many), as the bus hands them"
    )
    result = asyncio.run(run(parser.parse_args()))
    digest_data.report("digest_eval", result)


if __name__ == "__main__":
    main()
