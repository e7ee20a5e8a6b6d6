"""The digest benchmarks' data: real entries from ../shared/fixtures and syndicated copies derived from them.

Not a benchmark itself. Deterministic for a given seed. Labels: every item carries a story id; derived
copies share their original's story, and entries of different fixture files with the same canonical link
are the same story found in two feeds. Everything else is a different story — including the hard
negatives: different entries of one feed on one topic whose titles share words.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import sys
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from modules.digest.dedup import titles, urls  # noqa: E402
from modules.digest.model import Article  # noqa: E402
from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402

# ../shared next to the checkout; FEEDEATER_SHARED names it elsewhere (a git worktree)
CORPUS = Path(os.environ.get("FEEDEATER_SHARED") or REPO.parent / "shared") / "fixtures" / "realworld"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
PREFIXES = ("BREAKING: ", "Update: ", "ICYMI: ", "JUST IN: ", "Exclusive: ")
SUFFIXES = (" - Reuters", " | Daily Wire Service", " - The Syndicate", " | News")
BOILERPLATE = (
    "This article originally appeared on our partner site.",
    "Read more at the original publisher.",
    "Copyright 2026, all rights reserved.",
)
KINDS = ("tracking", "prefixed", "retitled", "edited")


FALSE_FRIENDS = REPO / "bench" / "digest_false_friends.json"


@dataclass(frozen=True, slots=True)
class Item:
    article: Article
    story: int
    kind: str  # original | natural | tracking | prefixed | retitled | edited | copy | coverage | release …
    feed: str
    event: int | None = None  # same-event group (coverage of one event); None: the story alone

    @property
    def event_id(self) -> int:
        return self.story if self.event is None else self.event


def _article(
    feed: str, title: str, link: str | None, text: str, when: datetime, n: int, domain: str | None = None
) -> Article:
    words = text.split()
    return Article(
        message_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{feed}#{n}"),
        source_module="rss",
        stream=feed,
        feed_id=None,
        source_name=feed,
        domain=domain if domain is not None else urls.domain(link),
        title=title,
        url=link,
        body=" ".join(words[:3000]),
        word_count=len(words),
        published_at=when,
        date_uncertain=False,
        partial_content=False,
        content_hash=str(hash((title, text)) & 0xFFFFFFFFFFFF),
        depth_signals=(),
        revision=1,
        updated=False,
    )


def real_entries(min_words: int = 40) -> list[tuple[str, str, str, str]]:
    """(feed file, title, link, plain text) of every entry with a 3+ word title and a body of min_words."""
    out = []
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.name == "manifest.json":
            continue
        try:
            feed = parse_feed(path.read_bytes(), url="https://fixture.example/")
        except (FeedParseError, ValueError):
            continue
        for e in feed.entries:
            if e.link and len(e.title.split()) >= 3 and len(e.content_text.split()) >= min_words:
                out.append((path.stem, e.title, e.link, e.content_text))
    return out


def _edit(text: str, rng: random.Random, rate: float) -> str:
    """Light edit: change `rate` of the words, drop the last sentence, append a boilerplate line."""
    words = text.split()
    for i in rng.sample(range(len(words)), k=int(len(words) * rate)):
        words[i] = rng.choice(("the", "new", "also", "reported", "said", "today"))
    edited = " ".join(words)
    sentences = re.split(r"(?<=[.!?])\s+", edited)
    if len(sentences) > 3:
        edited = " ".join(sentences[:-1])
    return f"{edited} {rng.choice(BOILERPLATE)}"


def _tracked(link: str, rng: random.Random) -> str:
    parts = link.split("?", 1)
    base = parts[0].replace("https://", "http://www.", 1) if "://www." not in parts[0] else parts[0]
    query = f"utm_source={rng.choice(('twitter', 'newsletter', 'rss'))}&utm_medium=social&fbclid={rng.randrange(10**9)}"
    return f"{base.rstrip('/')}/?{query}" + (f"&{parts[1]}" if len(parts) > 1 else "")


def derive(original: Item, kind: str, rng: random.Random, n: int) -> Item:
    a = original.article
    when = a.published_at + timedelta(hours=rng.uniform(0.5, 30))
    feed = f"syndicator-{rng.randrange(40)}"
    other = f"https://{feed}.example/{n}"
    if kind == "tracking":
        art = _article(feed, a.title, _tracked(a.url or other, rng), a.body, when, n)
    elif kind == "prefixed":
        title = rng.choice(PREFIXES) + a.title + rng.choice(SUFFIXES)
        art = _article(feed, title, other, _edit(a.body, rng, 0.02), when, n)
    elif kind == "retitled":
        first = re.split(r"(?<=[.!?])\s+", a.body)[0]
        art = _article(feed, " ".join(first.split()[:14]), other, _edit(a.body, rng, 0.03), when, n)
    else:  # edited: same headline, more edits to the body
        art = _article(feed, a.title, other, _edit(a.body, rng, 0.06), when, n)
    return Item(art, original.story, kind, feed)


def build(copies: int = 600, seed: int = 7) -> list[Item]:
    """Originals (one per real entry, spread over 10 days) then `copies` derived copies, in arrival order."""
    rng = random.Random(seed)
    entries = real_entries()
    by_link: dict[str, int] = {}
    by_text: dict[str, int] = {}
    items: list[Item] = []
    seen_titles: set[tuple[str, frozenset[str]]] = set()
    new_ids = itertools.count()
    for n, (feed, title, link, text) in enumerate(entries):
        if (feed, titles.tokens(title)) in seen_titles:
            continue  # one feed repeating an entry (a fixture artefact): not labelled either way
        seen_titles.add((feed, titles.tokens(title)))
        # The same story in two feeds: the same canonical link, or the same title and text (one blog
        # under two feed URLs, a wire story carried verbatim).
        key = urls.canonical(link) or link
        same_text = f"{title}\x1f{' '.join(text.split()[:80])}"
        known = by_link.get(key, by_text.get(same_text))
        natural = known is not None
        story = known if known is not None else next(new_ids)
        by_link.setdefault(key, story)
        by_text.setdefault(same_text, story)
        when = T0 + timedelta(minutes=n * 37 % (10 * 24 * 60))
        items.append(
            Item(
                _article(feed, title, link, text, when, n), story, "natural" if natural else "original", feed
            )
        )
    originals = [i for i in items if i.kind == "original"]
    derived = [
        derive(rng.choice(originals), KINDS[k % len(KINDS)], rng, 1_000_000 + k) for k in range(copies)
    ]
    friends = false_friends(next(new_ids) + 1_000_000)
    return sorted(items + derived + friends, key=lambda i: i.article.published_at)


def false_friends(first_story: int, start: datetime = T0) -> list[Item]:
    """bench/digest_false_friends.json as items: each group a day apart from `start`, each item from its
    own feed and site. Release series, numbered episodes, one channel's videos and series parts are
    different stories and events; `coverage` groups are one event told as different stories."""
    groups = json.loads(FALSE_FRIENDS.read_text())["groups"]
    out: list[Item] = []
    story = itertools.count(first_story)
    for g, group in enumerate(groups):
        event = next(story) if group["kind"] == "coverage" else None
        made: list[Item] = []
        for k, spec in enumerate(group["items"]):
            when = start + timedelta(days=g, hours=spec["hours"])
            feed, n = f"ff-{g}-{k}", 2_000_000 + 100 * g + k
            link = f"https://{spec['site']}/{g}/{k}"
            if "copy_of" in spec:
                original = made[spec["copy_of"]]
                a = original.article
                art = _article(feed, a.title, link, a.body, when, n, domain=spec["site"])
                made.append(Item(art, original.story, "copy", feed, original.event))
                continue
            art = _article(feed, spec["title"], link, spec["body"], when, n, domain=spec["site"])
            made.append(Item(art, next(story), group["kind"], feed, event))
        out.extend(made)
    return out


def hard_negative_pairs(items: list[Item]) -> int:
    """Pairs of different stories in one feed whose titles share half their words (topic neighbours)."""
    by_feed: dict[str, list[frozenset[str]]] = {}
    for i in items:
        if i.kind == "original":
            by_feed.setdefault(i.feed, []).append(titles.tokens(i.article.title))
    count = 0
    for toks in by_feed.values():
        for x in range(len(toks)):
            for y in range(x + 1, len(toks)):
                a, b = toks[x], toks[y]
                if a and b and len(a & b) / min(len(a), len(b)) >= 0.5:
                    count += 1
    return count


async def bench_host(prefix: str) -> Host:
    """A host on embedded PostgreSQL in a temporary FEEDEATER_HOME, migrated (close with
    `stop_started_services=True`)."""
    config = HostConfig(
        home=Path(tempfile.mkdtemp(prefix=prefix)),
        database_url=None,
        nats_url=None,
        http_host="127.0.0.1",
        http_port=0,
        host_id="bench",
    )
    host = Host(config, env={})
    await host.open(with_bus=False)
    return host


def machine(home: Path) -> dict[str, float]:
    """Load average and CPU seconds so far of this process and of the bench's PostgreSQL (postmaster and
    its backends): other agents share the two cores, so every number goes out with these."""
    import psutil

    def cpu(p: psutil.Process) -> float:
        t = p.cpu_times()
        return float(t.user + t.system)

    pg = 0.0
    try:
        postmaster = psutil.Process(
            int((home / "postgres" / "data" / "postmaster.pid").read_text().split()[0])
        )
        pg = cpu(postmaster) + sum(cpu(c) for c in postmaster.children(recursive=True))
    except (OSError, ValueError, psutil.Error):
        pass
    return {"load_avg_1m": round(os.getloadavg()[0], 2), "python_cpu_s": round(cpu(psutil.Process()), 2),
            "postgres_cpu_s": round(pg, 2)}  # fmt: skip


def report(name: str, result: dict[str, object]) -> None:
    """Print the result and keep it as bench/results/<name>.json."""
    results = REPO / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
