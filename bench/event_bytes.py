"""Bytes per rss event over the real-world corpus: every entry announced as a first poll announces it.

    .venv/bin/python bench/event_bytes.py [--corpus DIR] [--code CHECKOUT]

Parses every corpus document, runs intake's pure half (diff → processors → publish.events) and measures
each MessageCreated as it is stored in the outbox and sent to JetStream (`Event.encode()`: compact JSON,
UTF-8). `--code` imports feedeater from another checkout, so one run of this script compares two
versions on the same bytes: `--code /path/to/old/checkout` gives the "before" (that checkout's
publish.events may take a set of guids; a dict of guid → entry id answers `in` as a set does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "fixtures" / "realworld")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose feedeater is measured")
    args = ap.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    from modules.rss.ingest import diff, processors, publish
    from modules.rss.parse import FeedParseError, parse_feed

    sizes: list[int] = []
    html: list[int] = []
    for feed_id, path in enumerate(sorted(p for p in args.corpus.rglob("*") if p.is_file())):
        if path.name == "manifest.json":
            continue
        try:
            parsed = parse_feed(path.read_bytes(), url=f"https://example.com/{path.name}", now=NOW)
        except FeedParseError:
            continue
        intents = processors.run(
            diff.diff(
                parsed.entries,
                {},
                set(),
                feed_id=feed_id + 1,
                feed_title=parsed.title or "",
                now=NOW,
                first_poll=True,
                lookback_hours=48,
            )
        )
        inserted = {n.entry.guid: (feed_id + 1) * 100_000 + i for i, n in enumerate(intents.new)}
        for event in publish.events(intents, inserted):
            sizes.append(len(event.encode()))
            rss = event.payload["message"]["rss"]
            html.append(len(rss.get("contentHtml") or "") + len(rss.get("summaryHtml") or ""))
    sizes.sort()
    print(f"code: {args.code.resolve()}")
    print(f"events: {len(sizes)}  total: {sum(sizes) / 1e6:.1f} MB")
    print(
        f"bytes per event: mean {statistics.fmean(sizes):,.0f}  median {statistics.median(sizes):,.0f}  "
        f"p95 {sizes[int(len(sizes) * 0.95)]:,}  max {sizes[-1]:,}"
    )
    print(f"HTML characters per event (content + summary): mean {statistics.fmean(html):,.0f}")


if __name__ == "__main__":
    main()
