"""What tracing adds to one poll: the span and annotation calls `poll_one` makes, timed on their own.

A poll's own cost (network, parse, database) is milliseconds (bench/README.md: host CPU ~17 ms per feed on
a 200, ~1.3 ms on a 304), far too noisy on a shared machine to see microseconds in an end-to-end run. So
this replays exactly the tracing calls of a 200 poll (rss.poll, rss.fetch, rss.parse, rss.store,
outbox.emit, rss.schedule and the attribute helpers of modules/rss/ingest/observe.py) and of a 304 poll,
with tracing

- absent (baseline: only the metric updates, as before tracing existed),
- off (the default: the shared no-op span, no OpenTelemetry import),
- on, into the SDK with a BatchSpanProcessor whose exporter drops the spans (the cost on the poll's path
  when an OTLP endpoint is set; the export itself runs on the processor's thread).

The observe.* metric updates run in every mode, so the difference to the baseline is tracing alone.
Prints µs per poll (wall and process CPU) and the machine load.

    .venv/bin/python bench/tracing_overhead.py [--polls 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from host import tracing  # noqa: E402
from host.net.fetcher import FetchResult  # noqa: E402
from modules.rss import store  # noqa: E402
from modules.rss.ingest import observe  # noqa: E402
from modules.rss.ingest.schedule import Decision  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=UTC)
FEED = store.FeedRow(
    1,
    "https://example.com/feed.xml",
    "t",
    None,
    "",
    "rss",
    None,
    True,
    None,
    None,
    None,
    False,
    False,
    False,
    NOW,
)
CLAIM = store.Claim(FEED, '"e"', None, 900.0, 3, 0, None, [], [], last_wire_bytes=4000)
COUNTS = Counter(new=5, updated=1)
DECISION = Decision(900.0, NOW, "new-entries+ewma", 1200.0)


def result(status: int) -> FetchResult:
    body = b"x" * 20000 if status == 200 else None
    headers = {"content-encoding": "gzip"} if status == 200 else {}
    return FetchResult(status, FEED.url, None, body, headers, None, None, None, None, None, 0.05, (), 4000)


async def one_poll(res: FetchResult) -> None:
    """The tracing calls of poll_one, in its order (see modules/rss/ingest/poll.py)."""
    with tracing.span("rss.poll", observe.poll_attributes(CLAIM), root=True):
        with tracing.span("rss.fetch"):
            observe.fetched(CLAIM, res)
        observe.annotate_fetch(res)
        if res.status == 200:
            with tracing.span("rss.parse"):
                pass
            async with tracing.aspan("rss.store"):
                with tracing.span("outbox.emit", {"messaging.batch.message_count": 5}):
                    pass
                await schedule()
        else:
            await schedule()
        observe.finished(COUNTS)


async def one_poll_untraced(res: FetchResult) -> None:
    """The same poll's metric updates without any tracing call: the baseline."""
    observe.fetched(CLAIM, res)
    observe.scheduled(DECISION)


async def schedule() -> None:
    with tracing.span("rss.schedule", {"feedeater.outcome": "new_entries"}) as current:
        current.set_attribute("feedeater.interval_s", DECISION.interval_s)
        current.set_attribute("feedeater.reason", DECISION.reason)
    observe.scheduled(DECISION)


async def measure(polls: int, status: int, traced: bool = True) -> tuple[float, float]:
    """(wall µs, CPU µs) per poll."""
    res = result(status)
    poll = one_poll if traced else one_poll_untraced
    for _ in range(200):  # warm up
        await poll(res)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(polls):
        await poll(res)
    return (time.perf_counter() - wall) / polls * 1e6, (time.process_time() - cpu) / polls * 1e6


def sdk_on() -> object:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=65536))
    tracing.install(provider)
    return provider


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--polls", type=int, default=20000)
    args = parser.parse_args(argv)
    rows = []
    for status in (200, 304):
        rows.append(("no tracing calls (baseline)", status, *await measure(args.polls, status, traced=False)))
    for mode in ("off", "on (SDK, spans dropped)"):
        provider = sdk_on() if mode != "off" else None
        for status in (200, 304):
            wall, cpu = await measure(args.polls, status)
            rows.append((mode, status, wall, cpu))
        tracing.install(None)
        if provider is not None:
            provider.shutdown()  # type: ignore[attr-defined]
    print(f"tracing overhead per poll ({args.polls} polls each), load {os.getloadavg()}")
    print(f"{'tracing':<30}{'status':>7}{'wall µs':>10}{'CPU µs':>10}")
    for mode, status, wall, cpu in rows:
        print(f"{mode:<30}{status:>7}{wall:>10.1f}{cpu:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
