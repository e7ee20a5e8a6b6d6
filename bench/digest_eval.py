"""Digest dedup quality on a labelled set built from ../shared/fixtures (bench/digest_data.py).

Every item goes through the real intake path (`modules.digest.intake.handler.ingest_many`: features, the
candidate query on PostgreSQL, the layered decision, the insert) in arrival order, `--batch` items per
transaction as a subscription delivery hands them (1: one at a time). A duplicate verdict
(any disposition but `unique`) is correct when the matched article tells the same story. Recall counts
items that have an earlier item of the same story. Per layer: precision of that layer's verdicts; per kind
of copy: recall. Dedup-cluster purity: share of each cluster's majority story. Topic-cluster purity: DBSCAN
(step 5) over all items, share of each topic's majority story (topics may legitimately join related
stories, so this is a lower bound on quality). Also: the entity heuristic on bench/digest_entities.json (tuning) and digest_entities_holdout.json.

    .venv/bin/python bench/digest_eval.py [--copies 600] [--seed 7] [--batch 1]

Services: embedded PostgreSQL in a temporary FEEDEATER_HOME. Results: stdout and bench/results/digest_eval.json.
Targets: precision ≥ 0.97, recall ≥ 0.90.
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


async def run(args: argparse.Namespace) -> dict[str, Any]:
    t = time.perf_counter()
    items = digest_data.build(copies=args.copies, seed=args.seed)
    print(f"{len(items)} items built in {time.perf_counter() - t:.1f}s", flush=True)
    host = await digest_data.bench_host("digest-eval-")
    try:
        pool = host.require_pool()
        story_of: dict[int, int] = {}
        seen_stories: set[int] = set()
        verdicts: list[tuple[str, str, bool]] = []  # (layer, kind, correct)
        should: Counter[str] = Counter()
        found: Counter[str] = Counter()
        clusters: dict[int, list[int]] = defaultdict(list)
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
                story_of[row_id] = item.story
                has_earlier = item.story in seen_stories
                seen_stories.add(item.story)
                should[item.kind] += has_earlier
                cluster = real(d.matched.cluster_id, in_part) if d.matched is not None else row_id
                clusters[cluster].append(item.story)
                if d.disposition != "unique" and d.matched is not None:
                    correct = story_of.get(real(d.matched.id, in_part)) == item.story
                    verdicts.append((d.layer, item.kind, correct))
                    found[item.kind] += correct and has_earlier
        ingest_s = time.perf_counter() - t
    finally:
        await host.close(stop_started_services=True)
    by_layer: dict[str, dict[str, float]] = {}
    for layer in sorted({v[0] for v in verdicts}):
        vs = [v for v in verdicts if v[0] == layer]
        by_layer[layer] = {"verdicts": len(vs), "precision": round(sum(v[2] for v in vs) / len(vs), 4)}
    tp = sum(v[2] for v in verdicts)
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
        "overall": {
            "precision": round(tp / len(verdicts), 4) if verdicts else 1.0,
            "recall": round(tp / positives, 4) if positives else 1.0,
            "verdicts": len(verdicts),
            "positives": positives,
        },
        "by_layer": by_layer,
        "recall_by_kind": {k: round(found[k] / should[k], 4) for k in should if should[k]},
        "dedup_cluster_purity": round(purity(clusters), 4),
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
