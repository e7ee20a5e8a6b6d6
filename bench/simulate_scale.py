"""Discrete-event simulation of polling many feeds (issue #13, target 4): how many 2-core hosts hold the
freshness SLO at a million feeds, and what PostgreSQL and NATS must sustain.

Why a simulation: a million real feeds cannot be run here, but the two things that decide capacity can be
taken from reality. (1) When feeds are polled comes from the project's own scheduling policy: every
decision is `modules.rss.ingest.schedule.decide` with the settings' default `ScheduleParams`, fed the same
`Outcome` shapes the poll job builds (304/same bytes → not_modified; new entries → new_entries with the
document's publication times). (2) When feeds publish comes from the corpus: each simulated feed takes the
inter-arrival gaps, <ttl> and skipHours/skipDays of one real feed of ../shared/fixtures/realworld and
draws its future gaps from them (bootstrap); feeds with fewer than two distinct dates never publish.
What a poll costs comes from `bench/poll_costs.py` (CPU ms per outcome in the host process, its parse
worker, PostgreSQL and NATS), measured on this machine.

The model (pure: `simulate` takes numbers and returns numbers):
* hosts are one fluid server: H hosts × (1 event-loop core + `parse_workers` parse cores) × efficiency;
  a poll occupies it for max(host_ms / loop capacity, parse_ms / parse capacity, fetch wall time / H);
* feeds are served in next_poll_at order (claim_due's ORDER BY), no earlier than the next poll tick of
  some host (each host's job fires every `--trigger-s`, hosts staggered);
* fetches hold one of `concurrency` slots for their wall time, and the job refills its claims as polls
  finish (a slow fetch holds only its slot): with `--slow-share` of fetches taking `--slow-s` (timeouts),
  a host polls at most concurrency / ((1 − slow_share) × latency + slow_share × slow_s) feeds per second;
* freshness as in bench/load_farm.py and seeds/001 §10: a feed is fresh while now ≤ last poll + 2 × the
  delay chosen at that poll; the SLO holds when every hour after the warm-up is ≥ 95 % fresh (time-weighted);
* claims: each host's run issues ⌊n/B⌋ + 1 claim_due statements for the n feeds it polls per tick (the
  job loops while batches come back full), so claims/s = H / trigger + polls/s / B;
* NATS: one messageCreated per new entry; outbox and database growth per day from the measured bytes.

A sample of feeds (`--sample`) with the hosts scaled by the same factor stands for the whole population
(a close approximation with a fluid server; the queue is smoother at full scale); `--sample 1000000` runs
everything.

    .venv/bin/python bench/simulate_scale.py [--feeds 1000000] [--sample 20000] [--days 1] [--warmup-h 12]
                                             [--slow-share 0.01] [--conditional 0.85] [--latency-s 0.3]
    (bench/scale_validation.py checks it against 3 real hosts)

Results: a table on stdout and bench/results/simulate_scale.json.
"""

from __future__ import annotations

import argparse
import functools
import heapq
import json
import math
import os
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.measure import RESULTS, write_results  # noqa: E402  (also imported by file path, from tests)
from modules.rss.ingest.schedule import Outcome, ScheduleParams, decide  # noqa: E402

CORPUS = REPO.parent / "shared" / "fixtures" / "realworld"
EPOCH = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday 00:00 UTC: simulated second 0
HOUR = 3600.0
DAY = 86400.0
BATCH_S = 60.0  # dates within a minute of each other are one batch of entries, not a 1-minute cadence
RECENT = 20  # publication times a document carries into decide (schedule.EWMA_WINDOW)


# -- inputs --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Profile:
    """What one real feed says about publishing: its gaps (seconds, may repeat), <ttl>, skip windows."""

    gaps_s: tuple[float, ...] = ()  # empty: the feed never publishes during the simulation
    sizes: tuple[int, ...] = ()  # entries per arrival (a batch), one per gap
    every_poll: bool = False  # one new entry, dated now, on every request (bench/feedfarm.py `growing`)
    ttl_minutes: int | None = None
    skip_hours: frozenset[int] = frozenset()
    skip_days: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Cost:
    """CPU milliseconds of one poll (plus `*_per_entry` for each new entry beyond the first)."""

    host_ms: float
    parse_ms: float
    pg_ms: float
    nats_ms: float

    def plus(self, other: Cost, times: float) -> Cost:
        return Cost(*(a + times * b for a, b in zip(astuple(self), astuple(other), strict=True)))


def astuple(c: Cost) -> tuple[float, float, float, float]:
    return (c.host_ms, c.parse_ms, c.pg_ms, c.nats_ms)


@dataclass(frozen=True, slots=True)
class Costs:
    """Per-outcome poll costs and storage sizes (bench/poll_costs.py writes these numbers)."""

    not_modified: Cost  # 304
    unchanged: Cost  # 200, the same bytes as last time (no validators): not parsed again
    new_entry: Cost  # 200 with one new entry
    per_entry: Cost  # each further new entry of the same poll
    event_bytes: float = 5200.0  # outbox payload per messageCreated
    entry_bytes: float = 9000.0  # database growth per stored entry (rows, text, indexes, embedding)
    raw_body_bytes: float = 69643.0  # a 200's body kept in raw_blobs (corpus mean), `raw_keep` per feed

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Costs:
        kinds = {k: Cost(**data[k]) for k in ("not_modified", "unchanged", "new_entry", "per_entry")}
        sizes = {k: float(data[k]) for k in ("event_bytes", "entry_bytes", "raw_body_bytes") if k in data}
        return cls(**kinds, **sizes)


# Measured by bench/poll_costs.py on this machine (see docs/scaling.md for the run and its load).
DEFAULT_COSTS = Costs(
    not_modified=Cost(host_ms=1.6, parse_ms=0.0, pg_ms=0.5, nats_ms=0.0),
    unchanged=Cost(host_ms=3.0, parse_ms=0.0, pg_ms=1.0, nats_ms=0.0),
    new_entry=Cost(host_ms=6.0, parse_ms=1.5, pg_ms=4.0, nats_ms=0.3),
    per_entry=Cost(host_ms=0.5, parse_ms=0.4, pg_ms=0.6, nats_ms=0.1),
)


@dataclass(frozen=True, slots=True)
class Cluster:
    """The hosts and the poll job's settings (defaults: the rss settings' defaults)."""

    hosts: float = 1.0
    share: float = 1.0  # simulated feeds / real feeds: a sample gets this share of the hosts' capacity
    parse_workers: int = 1
    efficiency: float = 0.8  # share of a core a host's process really gets (GC, logging, the OS)
    trigger_s: float = 60.0  # the poll job's trigger
    batch: int = 500  # poll_batch
    concurrency: int = 50  # global_concurrency
    latency_s: float = 0.05  # a fetch's wall time (loopback ≈ 0.05 s, the internet ≈ 0.3 s)
    slow_share: float = 0.0  # share of fetches that take slow_s (timeouts)
    slow_s: float = 30.0  # timeout_seconds

    def fetch_wall_s(self) -> float:
        """Seconds of one host's wall time a poll takes: its fetch's mean wall time over the slots."""
        mean = (1.0 - self.slow_share) * self.latency_s + self.slow_share * self.slow_s
        return mean / self.concurrency

    def service_s(self, cost: Cost) -> float:
        """Seconds of the whole cluster one poll takes (the binding resource of the three)."""
        hosts = self.hosts * self.share
        loop = cost.host_ms / 1000 / (hosts * self.efficiency)
        parse = cost.parse_ms / 1000 / (hosts * max(self.parse_workers, 1) * self.efficiency)
        wall = self.fetch_wall_s() / hosts
        return max(loop, parse, wall)


@dataclass(slots=True)
class Feed:
    profile: Profile
    conditional: bool  # answers 304 to a conditional request (else: the same 200 body)
    rng: random.Random
    next_arrival: float = math.inf
    recent: list[datetime] = field(default_factory=list)  # newest publication times, oldest first
    interval_s: float | None = None
    last_poll: float | None = None
    deadline: float = math.inf  # last poll + 2 × chosen delay: stale after this

    next_size: int = 1

    def gap(self) -> float:
        """The next gap and the size of the batch after it, drawn together from the real feed's history."""
        k = self.rng.randrange(len(self.profile.gaps_s))
        self.next_size = self.profile.sizes[k]
        return self.profile.gaps_s[k]

    def arrivals_until(self, t: float) -> int:
        """New entries published up to `t` (they enter the document's recent times)."""
        if self.profile.every_poll:
            self.recent = [*self.recent[1 - RECENT :], EPOCH + timedelta(seconds=t)]
            return 1
        n = 0
        while self.next_arrival <= t:
            self.recent.append(EPOCH + timedelta(seconds=self.next_arrival))
            n += self.next_size
            self.next_arrival += self.gap()
        if n:
            del self.recent[:-RECENT]
        return n


def start_feed(profile: Profile, conditional: bool, rng: random.Random) -> Feed:
    """A feed with a history: RECENT past publications before t=0, the next one a residual gap later."""
    feed = Feed(profile, conditional, rng)
    if profile.gaps_s:
        t = 0.0
        for _ in range(RECENT):
            t -= feed.gap()
            feed.recent.append(EPOCH + timedelta(seconds=t))
        feed.recent.reverse()
        feed.next_arrival = rng.uniform(0.0, 1.0) * feed.gap() or feed.gap()
    return feed


# -- the simulation (pure) -----------------------------------------------------------------------
@dataclass(slots=True)
class Tally:
    polls: Counter[str] = field(default_factory=Counter)
    new_entries: int = 0
    cpu_s: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("host", "parse", "pg", "nats"), 0.0)
    )
    binding: Counter[str] = field(default_factory=Counter)
    stale_s: list[float] = field(default_factory=list)  # per hour after the warm-up
    late_polls: int = 0
    max_delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Result:
    feeds: int
    seconds: float
    polls: dict[str, int]
    new_entries: int
    cpu_s: dict[str, float]
    binding: dict[str, int]
    hourly_fresh: list[float]
    late_polls: int
    max_delay_s: float

    @property
    def polls_total(self) -> int:
        return sum(self.polls.values())

    @property
    def min_fresh(self) -> float:
        return min(self.hourly_fresh, default=1.0)

    @property
    def mean_fresh(self) -> float:
        return sum(self.hourly_fresh) / len(self.hourly_fresh) if self.hourly_fresh else 1.0


def simulate(
    feeds: Sequence[Feed],
    cluster: Cluster,
    costs: Costs,
    *,
    params: ScheduleParams,
    warmup_s: float,
    measure_s: float,
    seed: int = 1,
    first_due_s: float | None = None,
) -> Result:
    """Run the policy over `feeds` for warmup_s + measure_s seconds; statistics cover the measured part.
    First polls are spread uniformly over `first_due_s` (default: the initial interval)."""
    rng = random.Random(seed)
    end = warmup_s + measure_s
    hours = max(1, math.ceil(measure_s / HOUR))
    tally = Tally(stale_s=[0.0] * hours)
    tick = cluster.trigger_s / max(cluster.hosts, 1e-9)  # staggered hosts: some host ticks this often
    spread = params.initial_s if first_due_s is None else first_due_s
    heap = [(rng.uniform(0.0, spread), i) for i in range(len(feeds))]
    heapq.heapify(heap)
    free = 0.0  # when the cluster finishes what it has started
    while heap and heap[0][0] < end:
        due, i = heapq.heappop(heap)
        feed = feeds[i]
        start = max(math.ceil(due / tick) * tick, free)
        if start >= end:  # the cluster is behind: this feed waits past the end (counted stale below)
            continue
        new = feed.arrivals_until(start)
        kind = "new_entry" if new else ("not_modified" if feed.conditional else "unchanged")
        cost = costs.new_entry.plus(costs.per_entry, new - 1) if new else getattr(costs, kind)
        service = cluster.service_s(cost)
        free = start + service
        measured = start >= warmup_s
        _account_stale(tally, feed.deadline, start, warmup_s, end)
        if measured:
            tally.polls[kind] += 1
            tally.new_entries += new
            for key, ms in zip(("host", "parse", "pg", "nats"), astuple(cost), strict=True):
                tally.cpu_s[key] += ms / 1000
            tally.binding[_binding(cluster, cost)] += 1
            if feed.last_poll is not None and start > feed.deadline:
                tally.late_polls += 1
            tally.max_delay_s = max(tally.max_delay_s, start - due)
        outcome = _outcome(feed, new)
        decision = decide(
            feed.interval_s, outcome, now=EPOCH + timedelta(seconds=start), params=params, rng=rng
        )
        feed.interval_s = decision.interval_s
        nxt = (decision.next_poll_at - EPOCH).total_seconds()
        feed.last_poll = start
        feed.deadline = start + 2 * (nxt - start)
        heapq.heappush(heap, (nxt, i))
    for feed in feeds:  # staleness of the feeds still waiting at the end
        _account_stale(tally, feed.deadline, end, warmup_s, end)
    n = len(feeds)
    return Result(
        feeds=n,
        seconds=measure_s,
        polls=dict(tally.polls),
        new_entries=tally.new_entries,
        cpu_s={k: round(v, 3) for k, v in tally.cpu_s.items()},
        binding=dict(tally.binding),
        hourly_fresh=[1.0 - s / (n * min(HOUR, measure_s - h * HOUR)) for h, s in enumerate(tally.stale_s)],
        late_polls=tally.late_polls,
        max_delay_s=round(tally.max_delay_s, 1),
    )


def _outcome(feed: Feed, new: int) -> Outcome:
    """The Outcome the poll job builds: a body with new entries carries its publication times."""
    p = feed.profile
    common: dict[str, Any] = {
        "ttl_minutes": p.ttl_minutes,
        "skip_hours": p.skip_hours,
        "skip_days": p.skip_days,
    }
    if not new:
        return Outcome(kind="not_modified", **common)
    return Outcome(kind="new_entries", new_entries=new, entry_times=tuple(feed.recent), **common)


@functools.cache
def _binding(cluster: Cluster, cost: Cost) -> str:
    one = replace(cluster, hosts=1.0, share=1.0, efficiency=1.0)
    loop, parse = cost.host_ms, cost.parse_ms / max(one.parse_workers, 1)
    wall = one.fetch_wall_s() * 1000
    return max((loop, "host event loop"), (parse, "parse worker"), (wall, "fetch wall time"))[1]


def _account_stale(tally: Tally, deadline: float, until: float, warmup_s: float, end: float) -> None:
    """Add the stale time [deadline, until] clipped to the measured hours."""
    a, b = max(deadline, warmup_s), min(until, end)
    while a < b:
        h = int((a - warmup_s) // HOUR)
        edge = min(b, warmup_s + (h + 1) * HOUR)
        tally.stale_s[h] += edge - a
        a = edge


# -- derived rates (pure) ------------------------------------------------------------------------
def rates(
    result: Result, cluster: Cluster, costs: Costs, *, scale: float, raw_keep: int = 3
) -> dict[str, Any]:
    """Per-second and per-day figures for the full population (`scale` = full feeds / simulated feeds)."""
    per_s = scale / result.seconds
    polls_s = result.polls_total * per_s
    hosts_full = cluster.hosts
    entries_day = result.new_entries * per_s * DAY
    return {
        "polls_per_s": round(polls_s, 2),
        "polls_per_s_by_outcome": {k: round(v * per_s, 2) for k, v in sorted(result.polls.items())},
        "claims_per_s": round(claims_per_s(polls_s, hosts_full, cluster), 2),
        "nats_messages_per_s": round(result.new_entries * per_s, 2),
        "cores_busy": {k: round(v * per_s, 3) for k, v in result.cpu_s.items()},
        "entries_per_day": round(entries_day),
        "outbox_bytes_per_day": round(entries_day * costs.event_bytes),
        "database_growth_bytes_per_day": round(entries_day * costs.entry_bytes),
        "raw_blobs_standing_bytes": round(result.feeds * scale * raw_keep * costs.raw_body_bytes),
    }


def claims_per_s(polls_per_s: float, hosts: float, cluster: Cluster) -> float:
    """claim_due statements per second: each host's run claims ⌊n/B⌋ + 1 times for n feeds."""
    return hosts / cluster.trigger_s + polls_per_s / cluster.batch


# -- populations ---------------------------------------------------------------------------------
def corpus_profiles(corpus: Path) -> list[Profile]:
    """One Profile per captured corpus feed (whole feeds as served; spec samples and synthetic edge cases
    have made-up dates), from its entries' publication dates."""
    from modules.rss.parse import FeedParseError, parse_feed

    manifest = json.loads((corpus / "manifest.json").read_text())
    now = datetime(2026, 11, 1, tzinfo=UTC)
    out: list[Profile] = []
    for f in manifest["files"]:
        if f["kind"] != "captured":
            continue
        try:
            parsed = parse_feed(
                (corpus / f["path"]).read_bytes(), url=f"https://example.com/{f['path']}", now=now
            )
        except FeedParseError:
            continue
        gaps_s, sizes = arrivals([e.published for e in parsed.entries if e.published and not e.future_dated])
        out.append(
            Profile(
                gaps_s=gaps_s,
                sizes=sizes,
                ttl_minutes=parsed.ttl_minutes,
                skip_hours=parsed.skip_hours,
                skip_days=parsed.skip_days,
            )
        )
    return out


def cached_profiles(corpus: Path) -> list[Profile]:
    """corpus_profiles, cached in bench/results (parsing the corpus takes most of a small run)."""
    cache = RESULTS / "simulate_profiles.json"
    stamp = (corpus / "manifest.json").stat().st_mtime
    if cache.exists():
        data = json.loads(cache.read_text())
        if data["stamp"] == stamp and data["corpus"] == str(corpus):
            return [
                Profile(
                    gaps_s=tuple(p["gaps_s"]),
                    sizes=tuple(p["sizes"]),
                    ttl_minutes=p["ttl_minutes"],
                    skip_hours=frozenset(p["skip_hours"]),
                    skip_days=frozenset(p["skip_days"]),
                )
                for p in data["profiles"]
            ]
    profiles = corpus_profiles(corpus)
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = [
        asdict(p) | {"skip_hours": sorted(p.skip_hours), "skip_days": sorted(p.skip_days)} for p in profiles
    ]
    cache.write_text(json.dumps({"stamp": stamp, "corpus": str(corpus), "profiles": rows}))
    return profiles


def arrivals(times: Sequence[datetime]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """(gaps between batches, entries in the batch after each gap): dates within BATCH_S of the batch's
    first are one batch. Fewer than two batches: no cadence, ((), ())."""
    batches: list[list[float]] = []
    for t in sorted(t.timestamp() for t in times):
        if batches and t - batches[-1][0] < BATCH_S:
            batches[-1].append(t)
        else:
            batches.append([t])
    return (
        tuple(b[0] - a[0] for a, b in pairwise(batches)),
        tuple(len(b) for b in batches[1:]),
    )


def population(profiles: Sequence[Profile], n: int, *, conditional_share: float, seed: int) -> list[Feed]:
    """n feeds, each a corpus profile drawn at random, each answering 304 with `conditional_share`."""
    rng = random.Random(seed)
    return [
        start_feed(rng.choice(profiles), rng.random() < conditional_share, random.Random(rng.random()))
        for _ in range(n)
    ]


def schedule_params(**overrides: float) -> ScheduleParams:
    """The poll job's ScheduleParams from the rss settings' defaults (the same function it uses)."""
    from modules.rss import MANIFEST
    from modules.rss.ingest.poll import schedule_params as from_settings

    defaults = {s.key: s.default for s in MANIFEST.settings}
    defaults.update(overrides)
    return from_settings(defaults)


# -- the command ---------------------------------------------------------------------------------
def run_at(hosts: float, args: argparse.Namespace, profiles: list[Profile], costs: Costs) -> Result:
    feeds = population(profiles, args.sample, conditional_share=args.conditional, seed=args.seed)
    cluster = cluster_from(args, hosts)
    return simulate(
        feeds,
        cluster,
        costs,
        params=schedule_params(),
        warmup_s=args.warmup_h * HOUR,
        measure_s=args.days * DAY,
        seed=args.seed,
    )


def cluster_from(args: argparse.Namespace, hosts: float) -> Cluster:
    return Cluster(
        hosts=hosts,
        share=args.sample / args.feeds,
        parse_workers=args.parse_workers,
        efficiency=args.efficiency,
        latency_s=args.latency_s,
        slow_share=args.slow_share,
        slow_s=args.slow_s,
    )


def smallest_hosts(
    args: argparse.Namespace, profiles: list[Profile], costs: Costs
) -> tuple[int, dict[int, Result]]:
    """The fewest whole hosts whose every measured hour is ≥ 95 % fresh: a first guess from the CPU the
    polls need with unlimited capacity, then a search around it."""
    runs: dict[int, Result] = {}
    unlimited = run_at(10_000_000.0, args, profiles, costs)
    per_host_s = unlimited.seconds / (args.feeds / args.sample)  # a host's seconds over the sampled feeds
    one = cluster_from(args, 1.0)
    need = max(
        unlimited.cpu_s["host"] / per_host_s / args.efficiency,
        unlimited.cpu_s["parse"] / per_host_s / args.efficiency / args.parse_workers,
        unlimited.polls_total * one.fetch_wall_s() / per_host_s,
    )
    # fewer hosts than the work needs cannot hold (their queues grow without bound)
    lo, hi = max(0, math.ceil(need) - 1), max(1, math.ceil(need))
    while not _holds(runs, hi, args, profiles, costs):
        lo, hi = hi, hi + max(1, math.ceil(hi * 0.25))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _holds(runs, mid, args, profiles, costs):
            hi = mid
        else:
            lo = mid
    if lo > 0 and lo not in runs:
        _holds(runs, lo, args, profiles, costs)  # show the one below failing
    return hi, runs


def _holds(
    runs: dict[int, Result], hosts: int, args: argparse.Namespace, profiles: list[Profile], costs: Costs
) -> bool:
    runs[hosts] = run_at(float(hosts), args, profiles, costs)
    r = runs[hosts]
    print(f"  {hosts:>5} hosts: min hourly freshness {r.min_fresh:.4f}, mean {r.mean_fresh:.4f}", flush=True)
    return r.min_fresh >= args.slo


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "cpu_s_self": round(time.process_time(), 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--feeds", type=int, default=1_000_000, help="the population to size for")
    p.add_argument(
        "--sample", type=int, default=20_000, help="feeds actually simulated (hosts scaled to match)"
    )
    p.add_argument("--days", type=float, default=1.0, help="measured simulated time")
    p.add_argument("--warmup-h", type=float, default=12.0, help="simulated hours before measuring")
    p.add_argument("--conditional", type=float, default=0.85, help="share of feeds that answer 304")
    p.add_argument("--parse-workers", type=int, default=1)
    p.add_argument("--efficiency", type=float, default=0.8)
    p.add_argument("--latency-s", type=float, default=0.3, help="wall time of one fetch on the internet")
    p.add_argument("--slow-share", type=float, default=0.0, help="share of fetches that hit the timeout")
    p.add_argument("--slow-s", type=float, default=30.0)
    p.add_argument("--slo", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--costs", default=str(RESULTS / "poll_costs.json"), help="bench/poll_costs.py output")
    p.add_argument("--corpus", default=str(CORPUS))
    p.add_argument("--out", default="simulate_scale.json")
    args = p.parse_args(argv)

    costs = load_costs(Path(args.costs))
    profiles = cached_profiles(Path(args.corpus))
    publishing = [pr for pr in profiles if pr.gaps_s]
    print(
        f"corpus: {len(profiles)} feeds, {len(publishing)} with ≥ 2 distinct dates "
        f"(median gap {_median([g for pr in publishing for g in pr.gaps_s]) / HOUR:.1f} h); "
        f"simulating {args.sample:,} feeds for {args.feeds:,}",
        flush=True,
    )
    started = time.perf_counter()
    hosts, runs = smallest_hosts(args, profiles, costs)
    result = runs[hosts]
    scale = args.feeds / args.sample
    cluster = cluster_from(args, hosts)
    report: dict[str, Any] = {
        "feeds": args.feeds,
        "sample": args.sample,
        "args": {k: v for k, v in vars(args).items() if k not in ("corpus", "out")},
        "costs": asdict(costs),
        "corpus_feeds": len(profiles),
        "corpus_feeds_publishing": len(publishing),
        "hosts_needed": hosts,
        "by_hosts": {
            h: {"min_fresh": round(r.min_fresh, 4), "mean_fresh": round(r.mean_fresh, 4)}
            for h, r in sorted(runs.items())
        },
        "at_hosts_needed": {
            "min_hourly_fresh": round(result.min_fresh, 4),
            "mean_fresh": round(result.mean_fresh, 4),
            "late_polls": result.late_polls,
            "max_queue_delay_s": result.max_delay_s,
            "binding_resource": result.binding,
            **rates(result, cluster, costs, scale=scale),
        },
        "simulation_wall_s": round(time.perf_counter() - started, 1),
        "machine": machine(),
    }
    print_report(report)
    write_results(args.out, report)
    return 0


def load_costs(path: Path) -> Costs:
    if path.exists():
        data = json.loads(path.read_text())
        return Costs.from_json(data.get("model_costs", data))
    print(f"({path} missing: using the costs built into this script)")
    return DEFAULT_COSTS


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def print_report(report: dict[str, Any]) -> None:
    r = report["at_hosts_needed"]
    gb = 1e9
    print(f"\n{report['feeds']:,} feeds: {report['hosts_needed']} hosts of 2 cores hold the SLO")
    print(f"  freshness: min hour {r['min_hourly_fresh']:.4f}, mean {r['mean_fresh']:.4f}")
    print(f"  polls/s {r['polls_per_s']:,} {r['polls_per_s_by_outcome']}")
    print(f"  claim_due statements/s {r['claims_per_s']:,}; NATS messages/s {r['nats_messages_per_s']:,}")
    print(f"  cores busy: {r['cores_busy']}")
    print(
        f"  per day: {r['entries_per_day']:,} entries, outbox +{r['outbox_bytes_per_day'] / gb:.1f} GB, "
        f"database +{r['database_growth_bytes_per_day'] / gb:.1f} GB; raw bodies standing "
        f"{r['raw_blobs_standing_bytes'] / gb:.0f} GB"
    )


if __name__ == "__main__":
    sys.exit(main())
